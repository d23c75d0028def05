/**
 * A strict DER ECDSA signature parser working on bytes, for the native secp256k1 path: it accepts
 * exactly what noble's `Signature.fromBytes(sig, 'der')` accepts for a 32-byte group (the test
 * compares the two on valid, mutated and random input), and gives r and s as 32-byte big-endian
 * arrays instead of bigints, so a verification makes no bigint at all.
 *
 * Accepted: SEQUENCE { INTEGER r, INTEGER s } with short-form lengths (a signature over a 32-byte
 * group is at most 72 bytes, so a long form is never minimal), nothing after either, each
 * integer 1 to 33 bytes, non-negative, with no unnecessary leading zero, and 1 ≤ r, s < n.
 */

/** r and s, each 32 bytes big-endian, or undefined when the signature is not valid DER in range. */
export function parseDerSignature (sig: Uint8Array, order: Uint8Array): { r: Uint8Array, s: Uint8Array } | undefined {
  const len = sig.length
  if (len < 8 || len > 80 || sig[0] !== 0x30) return undefined
  const seqLen = sig[1]!
  if (seqLen >= 0x80 || seqLen !== len - 2) return undefined
  const r = readInteger(sig, 2, order)
  if (r === undefined) return undefined
  const s = readInteger(sig, r.next, order)
  if (s === undefined || s.next !== len) return undefined
  return { r: r.value, s: s.value }
}

function readInteger (b: Uint8Array, at: number, order: Uint8Array): { value: Uint8Array, next: number } | undefined {
  if (at + 2 > b.length || b[at] !== 0x02) return undefined
  const n = b[at + 1]!
  if (n >= 0x80 || n < 1 || n > 33) return undefined
  const start = at + 2
  const end = start + n
  if (end > b.length) return undefined
  if ((b[start]! & 0x80) !== 0) return undefined // negative
  if (n > 1 && b[start] === 0 && (b[start + 1]! & 0x80) === 0) return undefined // unnecessary leading zero
  // drop the sign byte of a 33-byte integer; a 33-byte one without it is past the group anyway
  let from = start
  if (n === 33) {
    if (b[start] !== 0) return undefined
    from = start + 1
  }
  const value = new Uint8Array(32)
  value.set(b.subarray(from, end), 32 - (end - from))
  if (isZero(value) || compare(value, order) >= 0) return undefined
  return { value, next: end }
}

function isZero (a: Uint8Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== 0) return false
  return true
}

/** Big-endian comparison of two 32-byte numbers. */
export function compare (a: Uint8Array, b: Uint8Array): number {
  for (let i = 0; i < 32; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return 0
}

/** m − a for 32-byte big-endian numbers with a ≤ m. */
export function subtract (m: Uint8Array, a: Uint8Array): Uint8Array {
  const out = new Uint8Array(32)
  let borrow = 0
  for (let i = 31; i >= 0; i--) {
    let d = m[i]! - a[i]! - borrow
    borrow = d < 0 ? 1 : 0
    if (d < 0) d += 256
    out[i] = d
  }
  return out
}
