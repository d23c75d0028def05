/**
 * NFTs over libp2p (docs/protocol.md, "NFTs"): the `nft.part` (paged) and `nft.chain` rpc methods,
 * a gossipsub topic per NFT for new states, and DHT provider records for the NFT id.
 */
import type { P2pHost, PagedSpec, RpcClient, RpcHandlers, UnarySpec } from '../../p2p/index.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { NFT_PARTS, type NftPart } from '../../assets/nft/nft-files.js'
import type { NftEvent, NftNetwork, NftService } from './nft-service.js'

export const nftTopic = (nftId: string): string => `/rbt/nft/${nftId}/1.0.0`
/**
 * Raw bytes per page. Kept well under 640 KiB per frame (base64 included): the pnet cipher's WASM
 * memory starts at 640 KiB, and a larger write makes it grow, which the cipher library mishandles
 * across connections (memory grows until the process dies).
 */
const PAGE_BYTES = 256 * 1024
const MAX_PART_BYTES = 32 * 1024 * 1024
const MAX_CHAIN_BLOCKS = 100_000

export interface NftMethods {
  'nft.part': PagedSpec<{ nftId: string, part: NftPart }, { total: number, data: string }>
  'nft.chain': UnarySpec<{ nftId: string }, { blocks: Uint8Array[] }>
}

function checkId (r: { nftId?: unknown } | null | undefined): string {
  if (r === null || typeof r !== 'object' || !isCidV0(r.nftId)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed NFT request: nftId')
  return r.nftId
}

export function nftRpcHandlers (svc: () => NftService): RpcHandlers<NftMethods> {
  return {
    'nft.part': async (r) => {
      const id = checkId(r)
      if (!NFT_PARTS.includes(r.part)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed NFT request: part')
      const bytes = await svc().servePart(id, r.part)
      return (async function * () {
        if (bytes.length === 0) yield { total: 0, data: '' }
        for (let off = 0; off < bytes.length; off += PAGE_BYTES) yield { total: bytes.length, data: Buffer.from(bytes.subarray(off, off + PAGE_BYTES)).toString('base64') }
      })()
    },
    'nft.chain': async (r) => ({ blocks: await svc().serveChain(checkId(r)) })
  }
}

function parseEvent (data: Uint8Array): NftEvent | undefined {
  try {
    const e = JSON.parse(new TextDecoder().decode(data)) as Partial<NftEvent>
    if (e.child !== undefined && !isCidV0(e.child)) return undefined
    if (typeof e.nft === 'string' && typeof e.blockId === 'string' && typeof e.owner === 'string' && typeof e.txid === 'string') return e as NftEvent
  } catch { /* ignored */ }
  return undefined
}

export function createNftNetwork (host: P2pHost, rpc: RpcClient<NftMethods>): NftNetwork {
  return {
    publish: async (nftId, e) => await host.publish(nftTopic(nftId), new TextEncoder().encode(JSON.stringify(e))),
    follow: (nftId, handler) => {
      host.subscribe(nftTopic(nftId), (msg) => {
        const e = parseEvent(msg.data)
        if (e !== undefined) handler(e, msg.from)
      })
    },
    fetchChain: async (peer, nftId) => {
      const res = await rpc.call(peer, 'nft.chain', { nftId }, { timeoutMs: 10_000 })
      if (!Array.isArray(res?.blocks) || res.blocks.length > MAX_CHAIN_BLOCKS || !res.blocks.every((b) => b instanceof Uint8Array)) {
        throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent a malformed NFT chain`)
      }
      return res.blocks
    },
    fetchPart: async (peer, nftId, part) => {
      const chunks: Buffer[] = []
      let size = 0
      for await (const page of rpc.callPaged(peer, 'nft.part', { nftId, part }, { timeoutMs: 60_000 })) {
        if (typeof page?.data !== 'string' || typeof page.total !== 'number' || page.total > MAX_PART_BYTES) throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent a malformed NFT page`)
        const b = Buffer.from(page.data, 'base64')
        size += b.length
        if (size > page.total) throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent too much NFT data`)
        chunks.push(b)
      }
      return new Uint8Array(Buffer.concat(chunks))
    },
    provide: async (nftId) => { await host.provide(nftId, { timeoutMs: 15_000 }) },
    candidates: async (nftId) => {
      const out = new Set<string>(host.topicPeers(nftTopic(nftId)))
      const providers = await host.findProviders(nftId, { timeoutMs: 10_000, limit: 10 }).catch(() => [])
      for (const p of providers) {
        if (p.peerId === host.peerId) continue
        out.add(p.peerId)
        // a direct connection also joins the NFT topic's mesh, so later states arrive by gossip
        if (!host.isConnected(p.peerId)) {
          for (const ma of p.multiaddrs) {
            try { await host.dial(ma.includes('/p2p/') ? ma : `${ma}/p2p/${p.peerId}`, { timeoutMs: 5_000 }); break } catch { /* next address */ }
          }
        }
      }
      for (const p of host.connectedPeers()) out.add(p)
      out.delete(host.peerId)
      return [...out]
    }
  }
}
