/** Hashing and hex helpers shared by the token-chain module (bytes in, lowercase hex out). */
import { sha3_256 } from '@noble/hashes/sha3.js'
import { sha256 } from '@noble/hashes/sha2.js'
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

export const sha3Hex = (data: Uint8Array | string): string =>
  bytesToHex(sha3_256(typeof data === 'string' ? te.encode(data) : data))

export const sha256Hex = (data: Uint8Array | string): string =>
  bytesToHex(sha256(typeof data === 'string' ? te.encode(data) : data))

export const sha3 = (data: Uint8Array): Uint8Array => sha3_256(data)

const HASH_RE = /^[0-9a-f]{64}$/
/** A 64-character lowercase hex SHA3-256 string. */
export const isHashHex = (s: unknown): s is string => typeof s === 'string' && HASH_RE.test(s)
