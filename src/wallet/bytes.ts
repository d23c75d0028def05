/**
 * Small byte helpers shared by the wallet modules. Kept local so the wallet has no
 * dependency on anything outside util/.
 */
import { createHash } from 'node:crypto'
import { RbtError, ErrorCode } from '../util/errors.js'

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/

export function hexToBytes (hex: string, what = 'hex string'): Uint8Array {
  if (typeof hex !== 'string' || !HEX_RE.test(hex)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${what} is not valid hex`)
  }
  return new Uint8Array(Buffer.from(hex, 'hex'))
}

export function bytesToHex (b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
}

export function utf8 (s: string): Uint8Array {
  return new Uint8Array(Buffer.from(s, 'utf8'))
}

export function concatBytes (...parts: Uint8Array[]): Uint8Array {
  let n = 0
  for (const p of parts) n += p.length
  const out = new Uint8Array(n)
  let o = 0
  for (const p of parts) { out.set(p, o); o += p.length }
  return out
}

export function bytesEqual (a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  let d = 0
  for (let i = 0; i < a.length; i++) d |= a[i]! ^ b[i]!
  return d === 0
}

/** FIPS-202 SHA3-256 (OpenSSL through node:crypto). */
export function sha3 (data: Uint8Array | string): Uint8Array {
  return new Uint8Array(createHash('sha3-256').update(data).digest())
}

export function sha3Hex (data: Uint8Array | string): string {
  return createHash('sha3-256').update(data).digest('hex')
}

export function asBytes (v: unknown, what: string): Uint8Array {
  if (v instanceof Uint8Array) return v
  throw new RbtError(ErrorCode.INVALID_INPUT, `${what} must be bytes`)
}
