/** Independent helpers for wallet tests: written from the format specs, not from src/. */
import { createHash } from 'node:crypto'

export const hex = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'hex'))
export const toHex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
export const sha3 = (b: Uint8Array | string): Buffer => createHash('sha3-256').update(b).digest()

export function varint (n: number): number[] {
  const out: number[] = []
  while (n >= 128) { out.push((n % 128) + 128); n = Math.floor(n / 128) }
  out.push(n)
  return out
}

/** protobuf length-delimited field */
export function lenField (field: number, body: Uint8Array | number[]): number[] {
  return [(field << 3) | 2, ...varint(body.length), ...body]
}

export function varintField (field: number, v: number): number[] {
  return [(field << 3) | 0, ...varint(v)]
}

/** RFC 4648 base32, lowercase, no padding. */
export function base32 (bytes: Uint8Array): string {
  const alpha = 'abcdefghijklmnopqrstuvwxyz234567'
  let bits = 0; let value = 0; let out = ''
  for (const b of bytes) {
    value = (value << 8) | b; bits += 8
    while (bits >= 5) { out += alpha[(value >>> (bits - 5)) & 31]; bits -= 5 }
  }
  if (bits > 0) out += alpha[(value << (5 - bits)) & 31]
  return out
}

/** CIDv1 bytes: version 1, codec, multihash sha3-256 (0x16, 32). */
export function cidV1 (codec: number, block: Uint8Array): Uint8Array {
  return Uint8Array.from([0x01, ...varint(codec), 0x16, 0x20, ...sha3(block)])
}

/** Go pem.EncodeToMemory, written out directly. */
export function goPem (type: string, body: Uint8Array): Uint8Array {
  const b64 = Buffer.from(body).toString('base64')
  const lines = b64.match(/.{1,64}/g) ?? []
  return new Uint8Array(Buffer.from(`-----BEGIN ${type}-----\n${lines.map(l => l + '\n').join('')}-----END ${type}-----\n`))
}
