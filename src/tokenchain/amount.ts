/**
 * RBT amounts. Inside rbtnode an amount is an integer count of milli-RBT (0.001 RBT), so sums and
 * splits are exact. The reference keeps amounts as float64 rounded to 3 decimals; the helpers at
 * the bottom reproduce its rounding when a float must be read or written (block key "10",
 * contract values).
 */
import { RbtError, ErrorCode } from '../util/errors.js'

/** Integer milli-RBT. */
export type MilliRbt = number

export const MILLI_PER_RBT = 1000
export const MAX_DECIMALS = 3
/** Largest amount we accept: keeps every milli value a safe integer with room for sums. */
export const MAX_MILLI: MilliRbt = 1e15

const bad = (msg: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, msg)
const AMOUNT_RE = /^(\d+)(?:\.(\d+))?$/

export interface ParseAmountOptions {
  /** Smallest accepted amount in milli-RBT; default 0. Use 1 for transfers (minimum 0.001). */
  minMilli?: MilliRbt
  /** Name used in error messages; default "amount". */
  label?: string
}

/**
 * Parses an RBT amount from a decimal string ("1", "0.25", "12.500") or a JS number into milli-RBT.
 * Rejects negatives, NaN/Infinity, exponents, more than 3 decimals and amounts below `minMilli`.
 */
export function parseAmount (input: number | string, opts: ParseAmountOptions = {}): MilliRbt {
  const label = opts.label ?? 'amount'
  let text: string
  if (typeof input === 'number') {
    if (Number.isNaN(input)) throw bad(`${label} is not a number`)
    if (!Number.isFinite(input)) throw bad(`${label} must be finite`)
    if (input < 0 || Object.is(input, -0)) throw bad(`${label} must not be negative`)
    // The shortest round-trip decimal form, the same digits Go's FormatFloat(v,'f',-1) prints.
    text = String(input)
    if (text.includes('e')) {
      if (input >= 1) throw bad(`${label} ${text} is too large`)
      throw bad(`${label} ${text} has more than ${MAX_DECIMALS} decimal places`)
    }
  } else if (typeof input === 'string') {
    text = input.trim()
    if (text === '') throw bad(`${label} is empty`)
    if (text.startsWith('-')) throw bad(`${label} must not be negative`)
    if (text.startsWith('+')) text = text.slice(1)
  } else {
    throw bad(`${label} must be a number or a decimal string`)
  }
  const m = AMOUNT_RE.exec(text)
  if (m === null) throw bad(`${label} "${text}" is not a plain decimal number`)
  const whole = m[1]!
  const frac = m[2] ?? ''
  if (frac.length > MAX_DECIMALS) throw bad(`${label} ${text} has more than ${MAX_DECIMALS} decimal places`)
  if (whole.replace(/^0+/, '').length > 13) throw bad(`${label} ${text} is too large`)
  const milli = Number(whole) * MILLI_PER_RBT + Number(frac.padEnd(MAX_DECIMALS, '0'))
  if (milli > MAX_MILLI) throw bad(`${label} ${text} is too large`)
  const min = opts.minMilli ?? 0
  if (milli < min) throw bad(`${label} ${text} is below the minimum ${formatAmount(min)}`)
  return milli
}

/** A transfer amount: at least 0.001 RBT. */
export const parseTransferAmount = (input: number | string): MilliRbt => parseAmount(input, { minMilli: 1 })

export function assertMilli (m: MilliRbt, label = 'amount'): void {
  if (!Number.isSafeInteger(m) || m < 0 || m > MAX_MILLI) throw bad(`${label} ${String(m)} is not a valid milli-RBT count`)
}

/**
 * Decimal text for a milli amount. Default: shortest form ("1", "0.25"); `fixed: true` always
 * prints three decimals ("1.000").
 */
export function formatAmount (m: MilliRbt, opts: { fixed?: boolean } = {}): string {
  assertMilli(m)
  const whole = Math.floor(m / MILLI_PER_RBT)
  const frac = String(m % MILLI_PER_RBT).padStart(MAX_DECIMALS, '0')
  if (opts.fixed === true) return `${whole}.${frac}`
  const trimmed = frac.replace(/0+$/, '')
  return trimmed === '' ? String(whole) : `${whole}.${trimmed}`
}

/** The float64 the reference stores for this amount (the nearest double to the decimal). */
export const milliToFloat = (m: MilliRbt): number => { assertMilli(m); return m / MILLI_PER_RBT }

/**
 * The reference's `floatPrecision`: round half away from zero at 3 decimals, computed in float64
 * exactly as `int(x*1000 + copysign(0.5, x))`. Returns milli-RBT.
 */
export function floatToMilli (x: number): MilliRbt {
  if (!Number.isFinite(x)) throw bad(`amount ${x} is not finite`)
  const v = Math.trunc(x * MILLI_PER_RBT + (x < 0 ? -0.5 : 0.5))
  return v === 0 ? 0 : v
}

/** The reference's `floatPrecision(x, 3)` result as a float. */
export const roundFloat3 = (x: number): number => floatToMilli(x) / MILLI_PER_RBT

/** The reference's `CeilfloatPrecision(x, 3)`: ceil(x·1000)/1000 in float64. */
export const ceilFloat3 = (x: number): number => Math.ceil(x * MILLI_PER_RBT) / MILLI_PER_RBT

/**
 * Reads a stored float amount strictly: it must be the float of an exact 3-decimal value
 * (e.g. 0.2, 1.0, 0.125), otherwise CHAIN_INVALID/INVALID_INPUT is the caller's choice.
 */
export function floatToMilliExact (x: number): MilliRbt | undefined {
  if (!Number.isFinite(x) || x < 0) return undefined
  const m = floatToMilli(x)
  return m / MILLI_PER_RBT === x ? m : undefined
}

export function addAmounts (...parts: MilliRbt[]): MilliRbt {
  let sum = 0
  for (const p of parts) { assertMilli(p); sum += p }
  assertMilli(sum, 'sum')
  return sum
}

export function subtractAmount (from: MilliRbt, take: MilliRbt): MilliRbt {
  assertMilli(from); assertMilli(take)
  if (take > from) throw new RbtError(ErrorCode.INSUFFICIENT_BALANCE, `cannot take ${formatAmount(take)} from ${formatAmount(from)}`)
  return from - take
}

/**
 * Splits `total` into `[need, total - need]`, the two parts the reference creates when a token is
 * cut for a transfer. Both parts must be at least 0.001.
 */
export function splitAmount (total: MilliRbt, need: MilliRbt): [MilliRbt, MilliRbt] {
  assertMilli(total); assertMilli(need)
  if (need <= 0 || need >= total) throw bad(`cannot split ${formatAmount(total)} to take ${formatAmount(need)}: each part must be at least 0.001`)
  return [need, total - need]
}

/** Per-quorum pledge for a transfer of `total`: ceil(total / quorums) in milli, at least 0.001. */
export function pledgePerQuorum (total: MilliRbt, quorums = 5): MilliRbt {
  assertMilli(total)
  return Math.max(1, Math.ceil(total / quorums))
}

/** A whole RBT token has value exactly 1.000. */
export const isWholeToken = (m: MilliRbt): boolean => m === MILLI_PER_RBT
