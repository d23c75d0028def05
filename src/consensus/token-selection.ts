import { ErrorCode, RbtError } from '../util/errors.js'
import type { TokenState } from './ports.js'

export interface Selection {
  /** tokens spent whole */
  use: TokenState[]
  /** a token to split first: `partMilli` of it is spent, the rest stays with the owner */
  split?: { token: TokenState, partMilli: number }
}

/**
 * Picks Free tokens that add up exactly to `amountMilli`: largest first, then at most one token is
 * split into two parts to make the sum exact.
 */
export function selectTokens (free: readonly TokenState[], amountMilli: number): Selection {
  const total = free.reduce((s, t) => s + t.valueMilli, 0)
  if (total < amountMilli) {
    throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `insufficient balance: ${fmt(total)} RBT free, ${fmt(amountMilli)} RBT needed`)
  }
  const sorted = [...free].sort((a, b) => b.valueMilli - a.valueMilli || (a.tokenId < b.tokenId ? -1 : 1))
  const use: TokenState[] = []
  const rest: TokenState[] = []
  let remaining = amountMilli
  for (const t of sorted) {
    if (t.valueMilli <= remaining) { use.push(t); remaining -= t.valueMilli } else rest.push(t)
  }
  if (remaining === 0) return { use }
  const candidate = rest.filter((t) => t.valueMilli > remaining).sort((a, b) => a.valueMilli - b.valueMilli)[0]
  if (candidate === undefined) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `cannot make exactly ${fmt(amountMilli)} RBT from the free tokens`)
  return { use, split: { token: candidate, partMilli: remaining } }
}

const fmt = (m: number): string => (m / 1000).toFixed(3)
