/**
 * Chain sync and recovery over libp2p (docs/protocol.md, "Recovery"): the rpc methods
 * `sync.chain` (paged: a token's blocks over one stream), `sync.contents`, `sync.challenge` and
 * `sync.owned` (paged), and fullnode discovery (configured addresses, then DHT providers of the
 * network's fullnode key).
 */
import type { P2pHost, PagedSpec, RpcClient, RpcHandlers, UnarySpec } from '../../p2p/index.js'
import { cidV0ForContent } from '../../tokenchain/cid.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { ChainSource } from '../../consensus/chain-sync.js'
import type { OwnedToken, SyncNetwork, SyncService } from './sync-service.js'

export interface SyncMethods {
  'sync.chain': PagedSpec<{ tokenId: string, from: number }, { blocks: Uint8Array[] }>
  'sync.contents': UnarySpec<{ tokenIds: string[] }, { contents: Record<string, string> }>
  'sync.challenge': UnarySpec<{ did: string }, { nonce: string }>
  'sync.owned': PagedSpec<{ did: string, nonce: string, signature: string }, { tokens: OwnedToken[] }>
}

/** DHT provider key under which the fullnodes of a network announce themselves. */
export const fullnodeKey = (testNet: boolean): string => cidV0ForContent(`rbt-fullnode:${testNet ? 'testnet' : 'mainnet'}`)

const shape = (r: unknown): Record<string, unknown> => {
  if (r === null || typeof r !== 'object') throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed sync request')
  return r as Record<string, unknown>
}

export function syncRpcHandlers (svc: () => SyncService): RpcHandlers<SyncMethods> {
  return {
    'sync.chain': async (r) => {
      const { tokenId, from } = shape(r)
      if (!isCidV0(tokenId) || typeof from !== 'number') throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed chain request')
      const pages = svc().serveChain(tokenId, from)
      // the first page is produced before answering, so a missing chain is an error frame, not an empty stream
      const it = pages[Symbol.asyncIterator]()
      const first = await it.next()
      return (async function * () {
        if (first.done !== true) yield { blocks: first.value }
        for (let n = await it.next(); n.done !== true; n = await it.next()) yield { blocks: n.value }
      })()
    },
    'sync.contents': async (r) => ({ contents: await svc().serveContents(shape(r).tokenIds) }),
    'sync.challenge': async (r) => svc().issueChallenge(shape(r).did),
    'sync.owned': async (r) => {
      const pages = await svc().serveOwned(shape(r))
      return (async function * () { for await (const tokens of pages) yield { tokens } })()
    }
  }
}

export interface SyncNetworkOptions {
  testNet: boolean
  /** configured fullnodes: peer ids or multiaddrs (rbtnode.fullnodes in the config) */
  configured: () => string[]
  /** per-page deadline (ms); default 60 000 */
  pageTimeoutMs?: number
}

const MAX_PAGE_BLOCKS = 100_000

export function createSyncNetwork (host: P2pHost, rpc: RpcClient<SyncMethods>, o: SyncNetworkOptions): SyncNetwork & { advertise: () => Promise<void> } {
  const pageTimeoutMs = o.pageTimeoutMs ?? 60_000
  const peerOf = async (f: string): Promise<string> => {
    if (f.startsWith('/')) return await host.dial(f, { timeoutMs: 10_000 })
    return f
  }
  return {
    source: (peer): ChainSource => ({
      chain: async function * (tokenId, fromNumber) {
        for await (const page of rpc.callPaged(peer, 'sync.chain', { tokenId, from: fromNumber }, { timeoutMs: 30_000, pageTimeoutMs })) {
          if (!Array.isArray(page?.blocks) || page.blocks.length > MAX_PAGE_BLOCKS || !page.blocks.every((b) => b instanceof Uint8Array)) {
            throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent a malformed chain page`)
          }
          yield page.blocks
        }
      },
      contents: async (tokenIds) => {
        const res = await rpc.call(peer, 'sync.contents', { tokenIds }, { timeoutMs: 30_000 })
        if (res === null || typeof res?.contents !== 'object') throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent malformed contents`)
        return res.contents
      }
    }),
    challenge: async (peer, did) => {
      const res = await rpc.call(peer, 'sync.challenge', { did }, { timeoutMs: 15_000 })
      if (typeof res?.nonce !== 'string' || res.nonce.length < 16) throw new RbtError(ErrorCode.PROTOCOL, `fullnode ${peer} sent a malformed challenge`)
      return res
    },
    owned: async function * (peer, req) {
      for await (const page of rpc.callPaged(peer, 'sync.owned', req, { timeoutMs: 30_000, pageTimeoutMs })) {
        if (!Array.isArray(page?.tokens)) throw new RbtError(ErrorCode.PROTOCOL, `fullnode ${peer} sent a malformed token page`)
        yield page.tokens
      }
    },
    peerOf,
    fullnodes: async () => {
      const out: string[] = []
      for (const f of o.configured()) {
        try { out.push(await peerOf(f)) } catch { /* an unreachable configured fullnode is skipped */ }
      }
      const providers = await host.findProviders(fullnodeKey(o.testNet), { timeoutMs: 10_000, limit: 10 }).catch(() => [])
      for (const p of providers) {
        if (p.peerId === host.peerId || out.includes(p.peerId)) continue
        if (!host.isConnected(p.peerId)) {
          for (const ma of p.multiaddrs) {
            try { await host.dial(ma.includes('/p2p/') ? ma : `${ma}/p2p/${p.peerId}`, { timeoutMs: 5_000 }); break } catch { /* next address */ }
          }
        }
        out.push(p.peerId)
      }
      return out
    },
    advertise: async () => {
      try {
        await host.provide(fullnodeKey(o.testNet), { timeoutMs: 15_000 })
      } catch (e) {
        throw new RbtError(ErrorCode.PEER_UNREACHABLE, `fullnode record: ${errorMessage(e)}`)
      }
    }
  }
}
