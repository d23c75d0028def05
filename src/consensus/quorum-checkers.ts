import { sha3Hex } from '../tokenchain/hash.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import { MARKER_DHT_STATES } from './ports.js'

/**
 * Who among a transaction's quorums does which network duty: the designated checker (claims the
 * states, or looks their markers up) and the publishers of the spent markers. Every signer computes
 * the same answer from the block alone, and nothing the sender can choose freely (memo, extra
 * credits, the order of its lists) moves the checker (docs/protocol.md, "Claims").
 */

/**
 * The signers that publish a spent state's marker (a record on the peers closest to its key, and
 * gossip when that leaves nodes out): MARKER_PUBLISHERS of them, ranked by a hash of the state and
 * the DID so the work spreads over the quorums. Every signer keeps the state in its own durable
 * ledger regardless; two publishers keep the marker alive if one crashes.
 */
const MARKER_PUBLISHERS = 2
export function markerPublishers (stateHash: string, signers: readonly string[]): string[] {
  return rankedBy(stateHash, signers).slice(0, MARKER_PUBLISHERS)
}

/**
 * DIDs in the order of SHA3(`<key>|<did>`), each hashed once (hashed in the sort's comparison,
 * a FINALIZE of 300 states computed some 6,000 hashes instead of 1,500).
 */
function rankedBy (key: string, dids: readonly string[]): string[] {
  const ranked = dids.map((did) => ({ did, r: sha3Hex(new TextEncoder().encode(`${key}|${did}`)) }))
  return ranked.sort((a, b) => a.r < b.r ? -1 : a.r > b.r ? 1 : 0).map((x) => x.did)
}

/**
 * How many of a block's signers look the spent markers up on the network before signing. One
 * lookup per spent state and transaction: every signer also checks its own durable records and the
 * markers gossip brought it, and a second network lookup doubled the DHT traffic of a transfer
 * (each negative lookup asks every one of the closest peers) for little extra assurance.
 */
export const NETWORK_CHECKERS = 1

/**
 * The key a transaction's checker is ranked by: the smallest state hash among the states it spends
 * (`tokenId@blockId`, the previous block ids the block names). It was the transaction id, which
 * the sender grinds freely through the memo; the states spent are what the transaction is about,
 * the same whatever the sender writes.
 */
export function checkerKey (states: readonly string[]): string {
  let min: string | undefined
  for (const s of states) {
    const at = s.indexOf('@')
    const h = at < 0 ? tokenStateHash(s, '') : tokenStateHash(s.slice(0, at), s.slice(at + 1))
    if (min === undefined || h < min) min = h
  }
  return min ?? ''
}

/** The states a block spends, `tokenId@previousBlockId`: what checkerKey ranks by. */
export function spentStatesOf (tokens: Readonly<Record<string, { previousBlockId?: string, blockId?: string }>>): string[] {
  return Object.entries(tokens).map(([id, t]) => `${id}@${t.previousBlockId ?? t.blockId ?? ''}`)
}

/**
 * The quorums among `signers` that check a transaction's spent states on the network (claim them,
 * or look their markers up): the first `n` ranked by SHA3(key | DID), `key` being checkerKey of
 * the states spent. Every signer computes the same set from the block's signers (who are exactly
 * its credit signers: validate.ts), so whichever five a sender gathers, the first-ranked checks.
 */
export function networkCheckers (key: string, signers: readonly string[], n: number): string[] {
  return rankedBy(key, [...new Set(signers)]).slice(0, n)
}

/** The states looked up and published one by one in the DHT: all, or the MARKER_DHT_STATES lowest state hashes (the anchor among them). */
export function dhtStates (states: readonly string[]): string[] {
  if (states.length <= MARKER_DHT_STATES) return [...states]
  const hashed = states.map((s) => { const [tokenId, blockId] = s.split('@'); return { s, h: tokenStateHash(tokenId, blockId) } })
  return hashed.sort((a, b) => a.h < b.h ? -1 : a.h > b.h ? 1 : 0).slice(0, MARKER_DHT_STATES).map((x) => x.s)
}

export async function withTimeout<T> (p: Promise<T>, ms: number, what = 'marker lookup'): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<T>((_resolve, reject) => { timer = setTimeout(() => { reject(new RbtError(ErrorCode.TIMEOUT, `${what} timed out`)) }, ms) })])
  } finally { clearTimeout(timer) }
}
