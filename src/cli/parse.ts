import { UsageError } from './base-command.js'
import { DID_HINT, DID_PATTERN, PEER_ADDRESS_HINT, TOKEN_ID_HINT, TOKEN_ID_PATTERN, isPeerAddress } from '../api/contract/patterns.js'

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

/** A DID flag value, checked as the node checks it (so a typo never reaches the node). */
export function didValue (v: string, flag: string): string {
  if (!DID_PATTERN.test(v)) throw new UsageError(`-${flag} is not a valid DID (${DID_HINT}), got "${v}"`)
  return v
}

/** A comma-separated list of token ids; at least one, each well-formed, duplicates dropped. */
export function tokenIdList (v: string | undefined, flag: string): string[] {
  const ids = [...new Set(splitList(v ?? ''))]
  if (ids.length === 0) throw new UsageError(`-${flag} is required: comma-separated token ids`)
  for (const id of ids) if (!TOKEN_ID_PATTERN.test(id)) throw new UsageError(`-${flag}: "${id}" is not a token id (${TOKEN_ID_HINT})`)
  return ids
}

/**
 * A fullnode named on the command line: a peer id or a multiaddr ending with one. Absent or empty
 * → undefined. Typed `unknown` because the shared flag set declares `-fullnode` a boolean (of `run`).
 */
export function fullnodeValue (v: unknown, flag = 'fullnode'): string | undefined {
  if (v === undefined || v === '' || v === false) return undefined
  if (typeof v !== 'string') throw new UsageError(`-${flag} needs a peer id or multiaddr`)
  if (v.length > 400) throw new UsageError(`-${flag} is too long (at most 400 characters)`)
  if (isPeerAddress(v)) return v
  throw new UsageError(`-${flag} must be ${PEER_ADDRESS_HINT}, got "${v}"`)
}
