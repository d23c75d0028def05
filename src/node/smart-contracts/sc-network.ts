/**
 * Smart contracts over libp2p (docs/protocol.md, "Smart contracts"): the `sc.part` (paged) and
 * `sc.chain` rpc methods, a gossipsub topic per contract announcing new states, and DHT provider
 * records for the contract id. Paging, chain checks and peer discovery are the NFT ones.
 */
import type { P2pHost, PagedSpec, RpcClient, RpcHandlers, UnarySpec } from '../../p2p/index.js'
import { isCidV0 } from '../../tokenchain/token-id.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { SC_PARTS, type ScPart } from '../../token-files/smart-contracts/sc-files.js'
import { candidatesOf, checkChainReply, joinPages, pagesOf, tokenTopic } from '../nft/nft-network.js'

export const scTopic = (scId: string): string => `/rbt/sc/${scId}/1.0.0`

/** Published on the contract's topic by the node that committed a new state. */
export interface ScEvent { smartContractToken: string, blockId: string, txid: string, initiator: string }

export interface ScNetwork {
  publish: (scId: string, e: ScEvent) => Promise<number>
  follow: (scId: string, handler: (e: ScEvent, from: string | undefined) => void) => void
  fetchChain: (peer: string, scId: string) => Promise<Uint8Array[]>
  fetchPart: (peer: string, scId: string, part: ScPart) => Promise<Uint8Array>
  provide: (scId: string) => Promise<void>
  candidates: (scId: string) => Promise<string[]>
}

export interface ScMethods {
  'sc.part': PagedSpec<{ scId: string, part: ScPart }, { total: number, data: string }>
  'sc.chain': UnarySpec<{ scId: string }, { blocks: Uint8Array[] }>
}

export interface ScServed {
  servePart: (scId: string, part: ScPart) => Promise<Uint8Array>
  serveChain: (scId: string) => Promise<Uint8Array[]>
}

function checkId (r: { scId?: unknown } | null | undefined): string {
  if (r === null || typeof r !== 'object' || !isCidV0(r.scId)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed smart-contract request: scId')
  return r.scId
}

export function scRpcHandlers (svc: () => ScServed): RpcHandlers<ScMethods> {
  return {
    'sc.part': async (r) => {
      const id = checkId(r)
      if (!SC_PARTS.includes(r.part)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed smart-contract request: part')
      return pagesOf(await svc().servePart(id, r.part))
    },
    'sc.chain': async (r) => ({ blocks: await svc().serveChain(checkId(r)) })
  }
}

export function createScNetwork (host: P2pHost, rpc: RpcClient<ScMethods>): ScNetwork {
  return {
    ...tokenTopic<ScEvent>(host, scTopic, ['smartContractToken', 'blockId', 'txid', 'initiator']),
    fetchChain: async (peer, scId) => checkChainReply(await rpc.call(peer, 'sc.chain', { scId }, { timeoutMs: 10_000 }), peer, 'smart-contract'),
    fetchPart: async (peer, scId, part) => await joinPages(rpc.callPaged(peer, 'sc.part', { scId, part }, { timeoutMs: 60_000 }), peer, 'smart-contract'),
    provide: async (scId) => { await host.provide(scId, { timeoutMs: 15_000 }) },
    candidates: async (scId) => await candidatesOf(host, scId, scTopic(scId))
  }
}
