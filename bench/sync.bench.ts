/**
 * Chain sync figures between two in-process hosts on 127.0.0.1 (test-net swarm key): a 1,000-block
 * test-token chain (5 quorum signatures per transfer block) paged over one `sync.chain` stream
 * (pages, bytes, time), and the same chain archived by the other side (fetch, whole-chain
 * validation, one commit). Run directly: `node dist/bench/sync.bench.js`.
 */
import '../src/util/polyfill.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { createP2pHost, type P2pHost } from '../src/p2p/host.js'
import { createRpc } from '../src/p2p/rpc.js'
import { defaultSwarmKeyPath, loadSwarmKey } from '../src/p2p/swarm-key.js'
import { LevelStore } from '../src/storage/level-store.js'
import { TokenLedger } from '../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../src/storage/token-repositories.js'
import { TokenStatus } from '../src/storage/token-records.js'
import { decodeBlockEnvelope, formatBlockId, sha3Hex } from '../src/tokenchain/index.js'
import { blockRecordOf } from '../src/tokens/token-service.js'
import { silentLogger } from '../src/util/logger.js'
import { FN_PLEDGES, SyncService, type SyncNetwork } from '../src/node/sync/sync-service.js'
import { createSyncNetwork, syncRpcHandlers, type SyncMethods } from '../src/node/sync/sync-network.js'
import { buildTestTokenChain, KeyRing } from '../test/unit/tokenchain/fixtures.js'
import { isMain } from './stats.js'

export async function run (opts: { blocks?: number } = {}): Promise<Record<string, string | number>> {
  const blocks = opts.blocks ?? 1000
  const ring = new KeyRing()
  const tBuild = performance.now()
  const chain = buildTestTokenChain(ring, blocks - 1)
  const buildMs = performance.now() - tBuild
  const swarmKey = await loadSwarmKey(defaultSwarmKeyPath(true))
  const hosts: P2pHost[] = []
  const dirs: string[] = []
  const stores: LevelStore[] = []
  const rpcs: Array<{ stop: () => Promise<void> }> = []
  try {
    const sides: Array<{ sync: SyncService, net: SyncNetwork, ledger: TokenLedger }> = []
    for (let i = 0; i < 2; i++) {
      const host = await createP2pHost({ swarmKey, listen: ['/ip4/127.0.0.1/tcp/0'] })
      await host.start()
      hosts.push(host)
      const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bench-sync-'))
      dirs.push(dir)
      const store = new LevelStore(join(dir, 'db'))
      await store.open()
      stores.push(store)
      const ledger = new TokenLedger(store, sha3Hex)
      const side = {} as { sync: SyncService, net: SyncNetwork, ledger: TokenLedger }
      const sync = new SyncService({ ledger, repos: levelTokenRepositories(store), verifier: ring.verifier, fullnode: true, isLocalDid: async () => false, network: () => side.net, pledges: store.collection(FN_PLEDGES), log: silentLogger })
      const rpc = createRpc<SyncMethods>({ host, handlers: syncRpcHandlers(() => sync), maxFrameBytes: 4 * 1024 * 1024 })
      await rpc.start()
      rpcs.push(rpc)
      Object.assign(side, { sync, ledger, net: createSyncNetwork(host, rpc, { testNet: true, configured: () => [] }) })
      sides.push(side)
    }
    await hosts[1]!.dial(hosts[0]!.multiaddrs()[0]!)
    // the serving side holds the chain as is
    const now = Date.now()
    const last = chain.blocks[chain.blocks.length - 1]!
    await sides[0]!.ledger.commit({
      tokens: [{ record: { tokenId: chain.tokenId, kind: 'rbt', tokenType: 3, value: 1000, owner: last.content.owner, status: TokenStatus.Free, latestBlockId: formatBlockId(blocks - 1, last.hash), latestBlockNumber: blocks - 1, createdAt: now, updatedAt: now } }],
      blocks: chain.envelopes.map((e) => ({ record: blockRecordOf(chain.tokenId, decodeBlockEnvelope(e), now), envelope: e })),
      contents: { [chain.tokenId]: chain.tokenContent }
    })
    const peer = hosts[0]!.peerId
    let pages = 0
    let bytes = 0
    let largest = 0
    const tPage = performance.now()
    for await (const p of sides[1]!.net.source(peer).chain(chain.tokenId, 0)) {
      pages++
      const size = p.reduce((n, b) => n + b.byteLength, 0)
      bytes += size
      largest = Math.max(largest, size)
    }
    const pageMs = performance.now() - tPage
    const tArchive = performance.now()
    const r = await sides[1]!.sync.archive(peer, [chain.tokenId])
    const archiveMs = performance.now() - tArchive
    return {
      'chain blocks': blocks,
      'chain bytes (envelopes)': bytes,
      'build chain (signing)': `${(buildMs / 1000).toFixed(1)} s`,
      'sync.chain pages': pages,
      'largest page (raw bytes)': largest,
      'page the whole chain': `${pageMs.toFixed(0)} ms`,
      'archive (fetch + validate + commit)': `${(archiveMs / 1000).toFixed(1)} s`,
      'archive rate': `${Math.round(r.stored / (archiveMs / 1000))} blocks/s`
    }
  } finally {
    for (const r of rpcs) await r.stop().catch(() => {})
    for (const h of hosts) await h.stop().catch(() => {})
    for (const s of stores) await s.close().catch(() => {})
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) console.log(`${k}: ${String(v)}`)
}
