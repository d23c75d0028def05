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

export function selectQuorums (candidates: readonly string[], anchorKey: string, exclude: readonly string[] = []): string[] {
  return rankQuorums(candidates, anchorKey, exclude).slice(0, QUORUM_SET_SIZE)
}
