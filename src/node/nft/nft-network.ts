/**
 * NFTs over libp2p (docs/protocol.md, "NFTs"): the `nft.part` and `nft.blocks` (paged) and
 * `nft.chain` rpc methods, a gossipsub topic per NFT for new states, and DHT provider records for
 * the NFT id.
 */
import type { P2pHost, PagedSpec, RpcClient, RpcHandlers, UnarySpec } from '../../p2p/index.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { NFT_PARTS, type NftPart } from '../../token-files/nft/nft-files.js'
import type { NftEvent, NftNetwork, NftService } from './nft-service.js'
import { MAX_BLOCKS_PER_REQUEST } from './artifact-blocks.js'
import type { BlockSource } from './artifact-fetch.js'

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
  /** blocks of the NFT's artifact DAG by CID, one a page, in the order asked */
  'nft.blocks': PagedSpec<{ nftId: string, cids: string[] }, { cid: string, block: Uint8Array }>
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
      return filePages(await svc().servePart(id, r.part))
    },
    'nft.blocks': async (r, ctx) => {
      const id = checkId(r)
      if (!Array.isArray(r.cids) || r.cids.length === 0 || r.cids.length > MAX_BLOCKS_PER_REQUEST || !r.cids.every((c) => typeof c === 'string' && c.length < 100)) {
        throw new RbtError(ErrorCode.INVALID_INPUT, `malformed NFT request: cids (1 to ${MAX_BLOCKS_PER_REQUEST} block CIDs)`)
      }
      return svc().serveBlocks(id, r.cids, ctx.signal)
    },
    'nft.chain': async (r) => ({ blocks: await svc().serveChain(checkId(r)) })
  }
}

/** A JSON event whose `fields` are all strings, or undefined. */
function parseEvent<E> (data: Uint8Array, fields: ReadonlyArray<keyof E & string>): E | undefined {
  try {
    const e = JSON.parse(new TextDecoder().decode(data)) as Record<string, unknown>
    if (e !== null && typeof e === 'object' && fields.every((f) => typeof e[f] === 'string')) return e as E
  } catch { /* ignored */ }
  return undefined
}

/** Publishing and following JSON events on a gossipsub topic per token. */
export function tokenTopic<E> (host: P2pHost, topicOf: (id: string) => string, fields: ReadonlyArray<keyof E & string>): {
  /** resolves to the number of peers the event was sent to */
  publish: (id: string, e: E) => Promise<number>
  follow: (id: string, handler: (e: E, from: string | undefined) => void) => void
} {
  return {
    publish: async (id, e) => await host.publish(topicOf(id), new TextEncoder().encode(JSON.stringify(e))),
    follow: (id, handler) => {
      host.subscribe(topicOf(id), (msg) => {
        const e = parseEvent<E>(msg.data, fields)
        if (e !== undefined) handler(e, msg.from)
      })
    }
  }
}

export function createNftNetwork (host: P2pHost, rpc: RpcClient<NftMethods>): NftNetwork {
  const topic = tokenTopic<NftEvent>(host, nftTopic, ['nft', 'blockId', 'owner', 'txid'])
  return {
    ...topic,
    // an announced child must at least look like an NFT id; the service checks the rest
    follow: (id, handler) => { topic.follow(id, (e, from) => { if (e.child === undefined || isCidV0(e.child)) handler(e, from) }) },
    fetchChain: async (peer, nftId) => {
      return checkChainReply(await rpc.call(peer, 'nft.chain', { nftId }, { timeoutMs: 10_000 }), peer, 'NFT')
    },
    fetchPart: async (peer, nftId, part) => await joinPages(rpc.callPaged(peer, 'nft.part', { nftId, part }, { timeoutMs: 60_000 }), peer, 'NFT'),
    blockSource: (peer, nftId) => blockSource(rpc, peer, nftId),
    provide: async (nftId) => { await host.provide(nftId, { timeoutMs: 15_000 }) },
    candidates: async (nftId) => await candidatesOf(host, nftId, nftTopic(nftId))
  }
}

/** `peer`'s `nft.blocks` answers as a block source; a malformed page is a protocol error. */
function blockSource (rpc: RpcClient<NftMethods>, peer: string, nftId: string): BlockSource {
  return {
    peer,
    blocks: async function * (cids, into) {
      for await (const page of rpc.callPaged(peer, 'nft.blocks', { nftId, cids }, { timeoutMs: 30_000, ...(into !== undefined ? { pageInto: into } : {}) })) {
        if (typeof page?.cid !== 'string' || !(page.block instanceof Uint8Array)) throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent a malformed NFT block page`)
        yield page
      }
    }
  }
}

/** A part read page by page (base64), one empty page for an empty file. */
export function filePages (pages: AsyncIterable<Uint8Array> & { total: number }): AsyncIterable<{ total: number, data: string }> {
  return (async function * () {
    let any = false
    for await (const b of pages) { any = true; yield { total: pages.total, data: Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64') } }
    if (!any) yield { total: 0, data: '' }
  })()
}

/** A file served in pages (base64), one empty page for an empty file. */
export function pagesOf (bytes: Uint8Array): AsyncIterable<{ total: number, data: string }> {
  return (async function * () {
    if (bytes.length === 0) yield { total: 0, data: '' }
    for (let off = 0; off < bytes.length; off += PAGE_BYTES) yield { total: bytes.length, data: Buffer.from(bytes.subarray(off, off + PAGE_BYTES)).toString('base64') }
  })()
}

/** Joins the pages of a file fetched from `peer`, refusing malformed or oversized answers. */
export async function joinPages (pages: AsyncIterable<{ total: number, data: string }>, peer: string, what: string): Promise<Uint8Array> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const page of pages) {
    if (typeof page?.data !== 'string' || typeof page.total !== 'number' || page.total > MAX_PART_BYTES) throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent a malformed ${what} page`)
    const b = Buffer.from(page.data, 'base64')
    size += b.length
    if (size > page.total) throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent too much ${what} data`)
    chunks.push(b)
  }
  return new Uint8Array(Buffer.concat(chunks))
}

/** Peers that may hold token `id`: its topic's peers, DHT providers (dialled, so they join the mesh), then connected peers. */
export async function candidatesOf (host: P2pHost, id: string, topic: string): Promise<string[]> {
  const out = new Set<string>(host.topicPeers(topic))
  const providers = await host.findProviders(id, { timeoutMs: 10_000, limit: 10 }).catch(() => [])
  for (const p of providers) {
    if (p.peerId === host.peerId) continue
    out.add(p.peerId)
    // a direct connection also joins the token topic's mesh, so later states arrive by gossip
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

/** Checks a fetched chain's shape. */
export function checkChainReply (res: { blocks?: unknown } | undefined, peer: string, what: string): Uint8Array[] {
  const blocks = res?.blocks
  if (!Array.isArray(blocks) || blocks.length > MAX_CHAIN_BLOCKS || !blocks.every((b) => b instanceof Uint8Array)) {
    throw new RbtError(ErrorCode.PROTOCOL, `peer ${peer} sent a malformed ${what} chain`)
  }
  return blocks as Uint8Array[]
}
