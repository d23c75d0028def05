/** Hashing and hex helpers shared by the token-chain module (bytes in, lowercase hex out). */
import { createHash } from 'node:crypto'
import { RbtError, ErrorCode } from '../util/errors.js'

const te = new TextEncoder()

export function bytesToHex (b: Uint8Array): string {
  return Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('hex')
}

const HEX_RE = /^(?:[0-9a-fA-F]{2})*$/

export function hexToBytes (hex: string): Uint8Array {
  if (!HEX_RE.test(hex)) throw new RbtError(ErrorCode.INVALID_INPUT, 'not an even-length hex string')
  return new Uint8Array(Buffer.from(hex, 'hex'))
}

/** UTF-8 bytes of a string (for the ASCII hex strings the reference signs and hashes). */
export const utf8 = (s: string): Uint8Array => te.encode(s)

// node:crypto's native SHA3 is several times faster than a JS implementation on block-sized inputs.
export const sha3Hex = (data: Uint8Array | string): string => createHash('sha3-256').update(data).digest('hex')

export const sha256Hex = (data: Uint8Array | string): string => createHash('sha256').update(data).digest('hex')

export const sha3 = (data: Uint8Array): Uint8Array => new Uint8Array(createHash('sha3-256').update(data).digest())

const HASH_RE = /^[0-9a-f]{64}$/
/** A 64-character lowercase hex SHA3-256 string. */
export const isHashHex = (s: unknown): s is string => typeof s === 'string' && HASH_RE.test(s)
