/**
 * PEM text in the exact layout of Go's `pem.EncodeToMemory` (no headers): a BEGIN line,
 * standard base64 wrapped at 64 characters, an END line, each ending in "\n".
 * The bytes of pubKey.pem are hashed into the DID, so the layout matters.
 */
import { RbtError, ErrorCode } from '../util/errors.js'

export const PEM_PUBLIC_KEY = 'PUBLIC KEY'
export const PEM_PRIVATE_KEY = 'PRIVATE KEY'
export const PEM_ENCRYPTED_PRIVATE_KEY = 'ENCRYPTED PRIVATE KEY'

export interface PemBlock { type: string, bytes: Uint8Array }

export function encodePem (type: string, bytes: Uint8Array): Uint8Array {
  const b64 = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64')
  let body = ''
  for (let i = 0; i < b64.length; i += 64) body += b64.slice(i, i + 64) + '\n'
  return new Uint8Array(Buffer.from(`-----BEGIN ${type}-----\n${body}-----END ${type}-----\n`, 'latin1'))
}

const BLOCK_RE = /-----BEGIN ([A-Z0-9 ]+)-----\r?\n([\s\S]*?)-----END \1-----/

/** Decode the first PEM block. Header lines (`Key: value`) are skipped like Go does. */
export function decodePem (pem: Uint8Array | string): PemBlock {
  const text = typeof pem === 'string' ? pem : Buffer.from(pem).toString('latin1')
  const m = BLOCK_RE.exec(text)
  if (m === null) throw new RbtError(ErrorCode.INVALID_INPUT, 'no PEM block found')
  const lines = m[2]!.split(/\r?\n/).filter(l => l.trim().length > 0 && !l.includes(':'))
  const b64 = lines.join('').replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(b64) || b64.length % 4 !== 0) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `PEM block ${m[1]!} has invalid base64`)
  }
  return { type: m[1]!, bytes: new Uint8Array(Buffer.from(b64, 'base64')) }
}
