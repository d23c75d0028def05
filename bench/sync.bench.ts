/**
 * Chain sync figures between two in-process hosts on 127.0.0.1 (test-net swarm key): a 1,000-block
 * test-token chain (5 quorum signatures per transfer block) paged over one `sync.chain` stream
 * (pages, bytes, time), and the same chain archived by the other side (fetch, whole-chain
 * validation, one commit). Run directly: `node dist/bench/sync.bench.js`.
 */
import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import { TokenStatus } from '../src/storage/token-records.js'
import { decodeBlockEnvelope, formatBlockId } from '../src/tokenchain/index.js'
import { blockRecordOf } from '../src/tokens/token-service.js'
import { silentLogger } from '../src/util/logger.js'
import { buildTestTokenChain, KeyRing } from '../test/unit/tokenchain/fixtures.js'
import { isMain } from './stats.js'
import { startSyncPair } from './sync-pair.js'

export async function run (opts: { blocks?: number } = {}): Promise<Record<string, string | number>> {
  const blocks = opts.blocks ?? 1000
  const ring = new KeyRing()
  const tBuild = performance.now()
  const chain = buildTestTokenChain(ring, blocks - 1)
  const buildMs = performance.now() - tBuild
  const { sides, hosts, close } = await startSyncPair('sync', () => ({ verifier: ring.verifier, fullnode: true, log: silentLogger }))
  try {
    // the serving side holds the chain as is
    const now = Date.now()
    const last = chain.blocks[chain.blocks.length - 1]!
    await sides[0].ledger.commit({
      tokens: [{ record: { tokenId: chain.tokenId, kind: 'rbt', tokenType: 3, value: 1000, owner: last.content.owner, status: TokenStatus.Free, latestBlockId: formatBlockId(blocks - 1, last.hash), latestBlockNumber: blocks - 1, createdAt: now, updatedAt: now } }],
      blocks: chain.envelopes.map((e) => ({ record: blockRecordOf(chain.tokenId, decodeBlockEnvelope(e), now), envelope: e })),
      contents: { [chain.tokenId]: chain.tokenContent }
    })
    const peer = hosts[0].peerId
    let pages = 0
    let bytes = 0
    let largest = 0
    const tPage = performance.now()
    for await (const p of sides[1].net.source(peer).chain(chain.tokenId, 0)) {
      pages++
      const size = p.reduce((n, b) => n + b.byteLength, 0)
      bytes += size
      largest = Math.max(largest, size)
    }
    const pageMs = performance.now() - tPage
    const tArchive = performance.now()
    const r = await sides[1].sync.archive(peer, [chain.tokenId])
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
    await close()
  }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) console.log(`${k}: ${String(v)}`)
}
