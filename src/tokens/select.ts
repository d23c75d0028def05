/**
 * Which tokens pay for an amount, keeping the wallet healthy (docs/protocol.md, "Choosing
 * tokens"): whole tokens first (as many as the whole part of the amount), then one existing part
 * worth exactly what is left if there is one, else existing parts largest first, and if something
 * is still missing, one token is split: the smallest one larger than what is missing, so a part
 * is cut before a whole token and whole tokens stay whole where a part serves. Among tokens of the
 * same value the shallowest ancestry (`depth`, when known) goes first. This follows the
 * reference's order and creates parts only when no existing token fits.
 * All amounts are milli-RBT integers, so nothing is rounded and nothing is lost.
 */
import { formatAmount, MILLI_PER_RBT, splitAmount, type MilliRbt } from '../tokenchain/amount.js'
import { ErrorCode, RbtError } from '../util/errors.js'

export interface Holding {
  tokenId: string
  value: MilliRbt
  /** part-token ancestors, when known (tie-break among tokens of the same value) */
  depth?: number
}

const byDepthThenId = (a: Holding, b: Holding): number => (a.depth ?? 0) - (b.depth ?? 0) || (a.tokenId < b.tokenId ? -1 : a.tokenId > b.tokenId ? 1 : 0)

export interface TokenSelection {
  /** Tokens spent whole. */
  take: Holding[]
  /** A token to split first: `need` goes with the payment, `rest` stays with the owner. */
  split?: { token: Holding, need: MilliRbt, rest: MilliRbt }
  amount: MilliRbt
}

export function selectTokens (free: readonly Holding[], amount: MilliRbt): TokenSelection {
  if (!Number.isSafeInteger(amount) || amount <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'amount must be at least 0.001 RBT')
  const total = free.reduce((s, h) => s + h.value, 0)
  if (total < amount) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `insufficient balance: ${formatAmount(total)} RBT free, ${formatAmount(amount)} RBT needed`)
  const wholes = free.filter((h) => h.value === MILLI_PER_RBT)
  const parts = free.filter((h) => h.value !== MILLI_PER_RBT).sort((a, b) => b.value - a.value || byDepthThenId(a, b))
  const take: Holding[] = []
  const used = new Set<string>()
  let missing = amount
  for (const w of [...wholes].sort(byDepthThenId).slice(0, Math.floor(amount / MILLI_PER_RBT))) { take.push(w); used.add(w.tokenId); missing -= w.value }
  // a part worth exactly what is left: nothing split, one token moved
  const exact = missing > 0 && missing < MILLI_PER_RBT ? parts.find((p) => p.value === missing) : undefined
  if (exact !== undefined) { take.push(exact); return { take, amount } }
  for (const p of parts) {
    if (missing === 0) break
    if (p.value <= missing) { take.push(p); used.add(p.tokenId); missing -= p.value }
  }
  if (missing === 0) return { take, amount }
  // every unused token is now larger than what is missing: split the smallest of them
  const candidates = free.filter((h) => !used.has(h.tokenId) && h.value > missing).sort((a, b) => a.value - b.value || byDepthThenId(a, b))
  const token = candidates[0]
  if (token === undefined) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `insufficient balance: cannot make ${formatAmount(amount)} RBT from the free tokens`)
  const [need, rest] = splitAmount(token.value, missing)
  return { take, split: { token, need, rest }, amount }
}

/** Sum of milli amounts (exact). */
export const sumMilli = (values: Iterable<MilliRbt>): MilliRbt => { let s = 0; for (const v of values) s += v; return s }
