import { UsageError } from './base-command.js'

/** Small parsers for flag values, shared by commands. */
export function splitList (value: string): string[] {
  return value.split(',').map((s) => s.trim()).filter((s) => s !== '')
}

/**
 * A whole-number flag value of at least `min`. Without a value: `dflt` when given, else a usage
 * error naming the flag.
 */
export function wholeNumber (v: string | undefined, flag: string, min: number, dflt?: number): number {
  if (v === undefined || v === '') {
    if (dflt !== undefined) return dflt
    throw new UsageError(`-${flag} is required`)
  }
  if (!/^\d+$/.test(v.trim()) || Number(v) < min || !Number.isSafeInteger(Number(v))) throw new UsageError(`-${flag} must be a whole number${min > 0 ? ' greater than 0' : ''}, got "${v}"`)
  return Number(v)
}
