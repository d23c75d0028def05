import { ErrorCode, RbtError } from '../util/errors.js'
import type { Ledger, TokenState } from './ports.js'

/** A token record that is Free and belongs to `did`. */
export const isFreeOf = (t: TokenState, did: string): boolean => t.status === 'Free' && t.owner === did

/**
 * The records of tokens chosen from a DID's holdings (the owner index), each checked to be Free and
 * the DID's own. The index is written in the same commit as the records, so a disagreement means a
 * damaged store: it stops the caller before anything is written.
 */
export async function freeTokensById (ledger: Ledger, did: string, ids: readonly string[], opts?: { content?: boolean }): Promise<Map<string, TokenState>> {
  const out = new Map<string, TokenState>()
  const found = ids.length === 0 ? [] : await ledger.tokensById(ids, opts)
  found.forEach((t, i) => {
    if (t === undefined || !isFreeOf(t, did)) {
      const saw = t === undefined ? 'is missing' : `says ${t.status}, owner ${t.owner}`
      throw new RbtError(ErrorCode.INTERNAL, `token ${ids[i]!} is listed as Free for ${did} but its record ${saw}`)
    }
    out.set(t.tokenId, t)
  })
  return out
}
