import { sha3Hex } from '../tokenchain/hash.js'

export const QUORUM_SET_SIZE = 7
export const MIN_QUORUM_SIGNATURES = 5

/**
 * Orders candidate quorums for one transaction. The key is the smallest spent token state of the
 * transaction, so two transactions spending the same state rank the same quorums the same way and
 * meet first at the same "anchor" quorum (see docs/protocol.md, "Quorum selection").
 */
export function rankQuorums (candidates: readonly string[], anchorKey: string, exclude: readonly string[] = []): string[] {
  const skip = new Set(exclude)
  const unique = [...new Set(candidates)].filter((d) => !skip.has(d))
  return unique
    .map((did) => ({ did, rank: sha3Hex(new TextEncoder().encode(anchorKey + '|' + did)) }))
    .sort((a, b) => (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .map((x) => x.did)
}

/**
 * The candidates of one transaction, in the order the anchor is looked for: the quorums that signed
 * the last block of the anchor state (`anchorSigners`: they validated that state), ranked by
 * `anchorKey`, then the sender's usual quorums, ranked by SHA3(sender | DID) (see preferQuorums).
 * Two transactions spending the same state still meet at the same anchor: the same state always
 * names the same signers, and only its owner can spend it, so their senders are the same.
 */
export function selectQuorums (candidates: readonly string[], anchorKey: string, exclude: readonly string[] = [], anchorSigners: readonly string[] = [], sender?: string): string[] {
  const ranked = rankQuorums(candidates, anchorKey, exclude)
  const signed = new Set(anchorSigners)
  const rest = ranked.filter((d) => !signed.has(d))
  return [...ranked.filter((d) => signed.has(d)), ...(sender === undefined ? rest : rankQuorums(rest, sender))].slice(0, QUORUM_SET_SIZE)
}

/**
 * The quorums to ask after the anchor, most useful first: those that signed the last blocks of more
 * of the transaction's tokens (`known`: they know those states valid and validate nothing for them),
 * then the sender's usual quorums, ranked by SHA3(sender | DID): a wallet's payments are then
 * signed by the same quorums, and a receiver spending those tokens finds quorums that know them.
 */
export function preferQuorums (dids: readonly string[], sender: string, known: (did: string) => number): string[] {
  // the sort is stable: among quorums that know as much, the sender's ranking stays
  return rankQuorums(dids, sender)
    .map((did) => ({ did, known: known(did) }))
    .sort((a, b) => b.known - a.known)
    .map((x) => x.did)
}
