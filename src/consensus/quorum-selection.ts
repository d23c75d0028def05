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
 * The candidates of one transaction, in the order the anchor is looked for: ranked by `anchorKey`,
 * the quorums that signed the last block of the anchor state first (`anchorSigners`: they validated
 * that state, and the same state always names the same signers, so two transactions spending it
 * still meet at the same anchor), then the others.
 */
export function selectQuorums (candidates: readonly string[], anchorKey: string, exclude: readonly string[] = [], anchorSigners: readonly string[] = []): string[] {
  const ranked = rankQuorums(candidates, anchorKey, exclude)
  const signed = new Set(anchorSigners)
  return [...ranked.filter((d) => signed.has(d)), ...ranked.filter((d) => !signed.has(d))].slice(0, QUORUM_SET_SIZE)
}

/**
 * The quorums to ask after the anchor, most useful first: those that signed the last blocks of more
 * of the transaction's tokens (`known`: they know those states valid and validate nothing for them),
 * then the sender's usual quorums, ranked by SHA3(sender | DID): a wallet's payments are then
 * signed by the same quorums, and a receiver spending those tokens finds quorums that know them.
 */
export function preferQuorums (dids: readonly string[], sender: string, known: (did: string) => number): string[] {
  const rank = (did: string): string => sha3Hex(new TextEncoder().encode(sender + '|' + did))
  return dids
    .map((did) => ({ did, known: known(did), rank: rank(did) }))
    .sort((a, b) => b.known - a.known || (a.rank < b.rank ? -1 : a.rank > b.rank ? 1 : 0))
    .map((x) => x.did)
}
