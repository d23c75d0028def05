import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createP2pHost, type P2pHost } from '../src/p2p/host.js'
import { createRpc } from '../src/p2p/rpc.js'
import { defaultSwarmKeyPath, loadSwarmKey } from '../src/p2p/swarm-key.js'
import { LevelStore } from '../src/storage/level-store.js'
import { TokenLedger } from '../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../src/storage/token-repositories.js'
import { sha3Hex } from '../src/tokenchain/index.js'
import type { SignatureVerifier } from '../src/tokenchain/validate.js'
import type { Logger } from '../src/util/logger.js'
import { FN_PLEDGES, SyncService, type SyncNetwork } from '../src/node/sync/sync-service.js'
import { createSyncNetwork, syncRpcHandlers, type SyncMethods } from '../src/node/sync/sync-network.js'

export interface SyncSide { sync: SyncService, net: SyncNetwork, ledger: TokenLedger }

/** How one side's sync service is made. */
export interface SyncSideOptions { verifier: SignatureVerifier, fullnode: boolean, log: Logger }

export interface SyncPair {
  sides: [SyncSide, SyncSide]
  hosts: [P2pHost, P2pHost]
  /** Stops both sides and removes their stores. */
  close: () => Promise<void>
}

/**
 * Two sync services, each on its own in-process host on 127.0.0.1 (test-net swarm key) and its own
 * LevelDB store in a temp dir; the second side is dialled to the first. What was started is
 * stopped again when a later step fails.
 */
export async function startSyncPair (name: string, opts: (i: 0 | 1) => SyncSideOptions): Promise<SyncPair> {
  const swarmKey = await loadSwarmKey(defaultSwarmKeyPath(true))
  const hosts: P2pHost[] = []
  const dirs: string[] = []
  const stores: LevelStore[] = []
  const rpcs: Array<{ stop: () => Promise<void> }> = []
  const close = async (): Promise<void> => {
    for (const r of rpcs) await r.stop().catch(() => {})
    for (const h of hosts) await h.stop().catch(() => {})
    for (const s of stores) await s.close().catch(() => {})
    for (const d of dirs) rmSync(d, { recursive: true, force: true })
  }
  try {
    const sides: SyncSide[] = []
    for (const i of [0, 1] as const) {
      const host = await createP2pHost({ swarmKey, listen: ['/ip4/127.0.0.1/tcp/0'] })
      await host.start()
      hosts.push(host)
      const dir = mkdtempSync(join(tmpdir(), `rbtnode-bench-${name}-`))
      dirs.push(dir)
      const store = new LevelStore(join(dir, 'db'))
      await store.open()
      stores.push(store)
      const ledger = new TokenLedger(store, sha3Hex)
      const side = { ledger } as SyncSide
      const { verifier, fullnode, log } = opts(i)
      side.sync = new SyncService({ ledger, repos: levelTokenRepositories(store), verifier, fullnode, isLocalDid: async () => false, network: () => side.net, pledges: store.collection(FN_PLEDGES), log })
      const rpc = createRpc<SyncMethods>({ host, handlers: syncRpcHandlers(() => side.sync), maxFrameBytes: 4 * 1024 * 1024 })
      await rpc.start()
      rpcs.push(rpc)
      side.net = createSyncNetwork(host, rpc, { testNet: true, configured: () => [] })
      sides.push(side)
    }
    await hosts[1]!.dial(hosts[0]!.multiaddrs()[0]!)
    return { sides: sides as [SyncSide, SyncSide], hosts: hosts as [P2pHost, P2pHost], close }
  } catch (e) {
    await close()
    throw e
  }
}
