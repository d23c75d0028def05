/**
 * Proof-of-work release of a pledged token (the release-2.6 "unpledge" mechanism), as pure functions.
 *
 * A proof binds one pledged token to the pledge that holds it: the chain starts at
 * seed = SHA-256(token ‖ pledger DID ‖ pledging transaction id) (hex), and every step is
 * h(i+1) = SHA3-256(ASCII hex of h(i)). The chain ends at the first step n ≥ 1 whose last `level`
 * hex characters equal the last `level` characters of the transaction id. The proof keeps the seed,
 * every `every`-th hash and the final hash, so a verifier re-walks any segment without redoing the
 * whole chain. See docs/protocol.md, "Unpledging".
 */
import { createHash } from 'node:crypto'
import { ErrorCode, RbtError } from '../util/errors.js'

/** Reference values: 6 hex characters, a checkpoint every 1000 hashes. */
export const DEFAULT_POW_LEVEL = 6
export const DEFAULT_CHECKPOINT_EVERY = 1000
/** Work per event-loop turn while generating, so the node keeps answering. */
const HASHES_PER_TURN = 20_000

export interface UnpledgeProof {
  /** the pledged token */
  token: string
  /** the DID whose pledge held the token (the quorum) */
  pledger: string
  /** the transaction the token was pledged for */
  txid: string
  /** hex characters of the suffix that had to match */
  level: number
  /** hashes between two checkpoints */
  every: number
  /** seed, then every `every`-th hash, then the final hash */
  hashes: string[]
}

const HEX64 = /^[0-9a-f]{64}$/

const step = (h: string): string => createHash('sha3-256').update(h, 'latin1').digest('hex')

export function powSeed (token: string, pledger: string, txid: string): string {
  return createHash('sha256').update(token + pledger + txid, 'utf8').digest('hex')
}

function checkLevel (level: number): void {
  if (!Number.isInteger(level) || level < 1 || level > 16) throw new RbtError(ErrorCode.INVALID_INPUT, `proof-of-work level must be an integer from 1 to 16, got ${String(level)}`)
}

function suffixOf (txid: string, level: number): string {
  if (!/^[0-9a-f]+$/.test(txid) || txid.length < level) throw new RbtError(ErrorCode.INVALID_INPUT, `transaction id must be lowercase hex of at least ${level} characters`)
  return txid.slice(-level)
}

export interface GenerateOptions {
  level?: number
  every?: number
  /** abandons the work (node shutdown) */
  signal?: AbortSignal
}

/** Computes the proof for one pledged token. Yields to the event loop between batches of hashes. */
export async function generateProof (token: string, pledger: string, txid: string, opts: GenerateOptions = {}): Promise<UnpledgeProof> {
  const level = opts.level ?? DEFAULT_POW_LEVEL
  const every = opts.every ?? DEFAULT_CHECKPOINT_EVERY
  checkLevel(level)
  if (!Number.isInteger(every) || every < 1) throw new RbtError(ErrorCode.INVALID_INPUT, 'checkpoint interval must be a positive integer')
  const want = suffixOf(txid, level)
  const hashes = [powSeed(token, pledger, txid)]
  let h = hashes[0]
  for (let n = 1; ; n++) {
    h = step(h)
    if (h.endsWith(want)) { hashes.push(h); break }
    if (n % every === 0) hashes.push(h)
    if (n % HASHES_PER_TURN === 0) {
      await new Promise((resolve) => setImmediate(resolve))
      if (opts.signal?.aborted === true) throw new RbtError(ErrorCode.NOT_RUNNING, 'proof-of-work abandoned')
    }
  }
  return { token, pledger, txid, level, every, hashes }
}

export interface VerifyOptions {
  /** the least level the verifier accepts (default: the reference's 6) */
  minLevel?: number
  /** re-walk every segment rather than a sample */
  full?: boolean
  /** random source for the sample, in [0, 1) */
  random?: () => number
}

export interface VerifyResult { valid: boolean, reason?: string }

/** Walks at most `every` steps from `from`; returns the first hash with the suffix, or undefined. */
function walkToSuffix (from: string, suffix: string, max: number): string | undefined {
  let h = from
  for (let i = 0; i < max; i++) {
    h = step(h)
    if (h.endsWith(suffix)) return h
  }
  return undefined
}

function walk (from: string, n: number): string {
  let h = from
  for (let i = 0; i < n; i++) h = step(h)
  return h
}

/**
 * Checks a proof against (token, pledger, txid): the seed, the final suffix, and the segments
 * between checkpoints. As the reference, a sample of segments is re-walked (the first, one at
 * random in each half, the middle, and the last, which must reach the suffix within one
 * interval); `full` re-walks them all.
 */
export function verifyProof (proof: UnpledgeProof, expect: { token: string, pledger: string, txid: string }, opts: VerifyOptions = {}): VerifyResult {
  const bad = (reason: string): VerifyResult => ({ valid: false, reason })
  if (proof === null || typeof proof !== 'object') return bad('not a proof')
  const { level, every, hashes } = proof
  if (proof.token !== expect.token || proof.pledger !== expect.pledger || proof.txid !== expect.txid) return bad('proof is for another token, pledger or transaction')
  if (!Number.isInteger(level) || level < 1 || level > 16) return bad('level out of range')
  if (level < (opts.minLevel ?? DEFAULT_POW_LEVEL)) return bad(`level ${level} is below the required ${opts.minLevel ?? DEFAULT_POW_LEVEL}`)
  if (!Number.isInteger(every) || every < 1 || every > 1_000_000) return bad('checkpoint interval out of range')
  if (!Array.isArray(hashes) || hashes.length < 2 || !hashes.every((h) => typeof h === 'string' && HEX64.test(h))) return bad('hashes must be at least two 64-character hex strings')
  if (!/^[0-9a-f]+$/.test(expect.txid) || expect.txid.length < level) return bad('transaction id is not hex')
  if (hashes[0] !== powSeed(expect.token, expect.pledger, expect.txid)) return bad('seed does not match the token, pledger and transaction')
  const suffix = expect.txid.slice(-level)
  const last = hashes.length - 1
  if (!hashes[last].endsWith(suffix)) return bad('final hash does not end with the transaction id suffix')
  // segments i → i+1 for i < last-1 are full intervals; the last one reaches the suffix
  const full = last - 1
  const picks = new Set<number>()
  if (opts.full === true) for (let i = 0; i < full; i++) picks.add(i)
  else if (full > 0) {
    const rnd = opts.random ?? Math.random
    const half = Math.floor(full / 2)
    picks.add(0)
    picks.add(half)
    picks.add(Math.min(full - 1, Math.floor(rnd() * Math.max(1, half))))
    picks.add(Math.min(full - 1, half + Math.floor(rnd() * Math.max(1, full - half))))
  }
  for (const i of picks) {
    if (walk(hashes[i], every) !== hashes[i + 1]) return bad(`segment ${i} does not hash to the next checkpoint`)
  }
  if (walkToSuffix(hashes[last - 1], suffix, every) !== hashes[last]) return bad('the last segment does not reach the final hash')
  return { valid: true }
}
