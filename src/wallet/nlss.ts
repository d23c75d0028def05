/**
 * The image-share scheme ("NLSS"): the DID pixel stream, its two shares, and the share
 * signature. Bit i of the DID stream (byte ⌊i/8⌋, MSB first) is carried by share byte i:
 * parity(pvt[i] AND pub[i]) = bit i.
 */
import { randomBytes } from 'node:crypto'
import { RbtError, ErrorCode } from '../util/errors.js'
import { sha3, sha3Hex, utf8, concatBytes } from './bytes.js'
import { DID_STREAM_LEN, SHARE_STREAM_LEN } from './image.js'

export const DEFAULT_DID_SECRET = 'My DID Secret'
/** Bytes of the DID stream / share streams a signature can ever touch. */
export const DID_HEAD_LEN = 32
export const SHARE_HEAD_LEN = 256
export const SHARE_SIG_LEN = 32

const PARITY = new Uint8Array(256)
for (let v = 0; v < 256; v++) { let p = 0; for (let b = v; b !== 0; b >>= 1) p ^= b & 1; PARITY[v] = p }

/** First-order Reed–Muller code RM(1,3): the 16 combinations of the 4 generator rows. */
const RM_ROWS = [0b11111111, 0b01010101, 0b00110011, 0b00001111]
const CODEWORDS = Array.from({ length: 16 }, (_, x) => RM_ROWS.reduce((acc, row, i) => ((x >> (3 - i)) & 1) === 1 ? acc ^ row : acc, 0))
/** The 240 byte values that are not codewords. */
const NON_CODEWORDS = Uint8Array.from(Array.from({ length: 256 }, (_, v) => v).filter(v => !CODEWORDS.includes(v)))

/**
 * XOR the 196,608-byte pixel stream with the SHA3-256 chain seeded from SHA3-256(secret ‖ mac).
 * The same call undoes itself.
 */
export function xorKeyStream (pixels: Uint8Array, secret: string, mac = ''): Uint8Array {
  if (pixels.length !== DID_STREAM_LEN) throw new RbtError(ErrorCode.INVALID_INPUT, `pixel stream must be ${DID_STREAM_LEN} bytes`)
  if (typeof secret !== 'string' || typeof mac !== 'string') throw new RbtError(ErrorCode.INVALID_INPUT, 'secret must be a string')
  const out = new Uint8Array(pixels.length)
  let h = sha3(utf8(secret + mac))
  for (let o = 0; o < pixels.length; o += 32) {
    for (let i = 0; i < 32; i++) out[o + i] = pixels[o + i]! ^ h[i]!
    h = sha3(h)
  }
  return out
}

/** Random buffer pool so share generation makes few randomBytes calls. */
class RandomPool {
  private buf = randomBytes(0)
  private pos = 0
  byte (): number {
    if (this.pos >= this.buf.length) { this.buf = randomBytes(1 << 20); this.pos = 0 }
    return this.buf[this.pos++]!
  }
}

/** Split the DID stream into (pvtShare, pubShare) streams, 8 share bytes per DID byte. */
export function generateShares (didStream: Uint8Array): { pvt: Uint8Array, pub: Uint8Array } {
  if (didStream.length !== DID_STREAM_LEN) throw new RbtError(ErrorCode.INVALID_INPUT, `DID stream must be ${DID_STREAM_LEN} bytes`)
  const pvt = new Uint8Array(SHARE_STREAM_LEN)
  const pub = new Uint8Array(SHARE_STREAM_LEN)
  const rnd = new RandomPool()
  for (let i = 0, o = 0; i < didStream.length; i++) {
    const byte = didStream[i]!
    for (let b = 7; b >= 0; b--, o++) {
      const bit = (byte >> b) & 1
      let a: number
      do { a = rnd.byte() } while (a >= 240)
      const s = CODEWORDS[rnd.byte() & 15]! ^ NON_CODEWORDS[a]!
      let y: number
      do { y = rnd.byte() } while (PARITY[s & y] !== bit)
      pvt[o] = s; pub[o] = y
    }
  }
  return { pvt, pub }
}

/** Recombine shares (inverse of generateShares); used by tests and self-checks. */
export function combineShares (pvt: Uint8Array, pub: Uint8Array): Uint8Array {
  if (pvt.length !== pub.length || pvt.length % 8 !== 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'share streams differ in size')
  const out = new Uint8Array(pvt.length / 8)
  for (let o = 0; o < pvt.length; o++) out[o >> 3] |= PARITY[pvt[o]! & pub[o]!]! << (7 - (o & 7))
  return out
}

const HEX_CHAR = /^[0-9a-fA-F]+$/
const ZEROS_32 = utf8('0'.repeat(32))

function checkHash (hashHex: string): void {
  if (typeof hashHex !== 'string' || hashHex.length < 32 || !HEX_CHAR.test(hashHex)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'hash to sign must be a hex string of at least 32 characters')
  }
}

const bits8 = (v: number): string => v.toString(2).padStart(8, '0')

/**
 * The position walk shared by signer and verifier: at step k the share byte index comes from
 * hex digit k of the current chain value; the chain absorbs the 8 bits chosen at that step.
 * `pick(k, j)` returns the share byte used at step k for byte index j.
 */
function walk (hashHex: string, pick: (k: number, j: number) => number): { indexes: number[], bytes: Uint8Array, sigBits: string } {
  let h = hashHex
  const indexes: number[] = []
  const bytes = new Uint8Array(SHARE_SIG_LEN)
  let sigBits = ''
  for (let k = 0; k < 32; k++) {
    const c = parseInt(h[k]!, 16)
    const r = ((2402 + c) * 2709 + (k + 2709) + c) % 2048
    const j = r >> 3
    const v = pick(k, j)
    const bits = bits8(v)
    indexes.push(j); bytes[k] = v; sigBits += bits
    h = sha3Hex(concatBytes(utf8(h), ZEROS_32, utf8(bits)))
  }
  return { indexes, bytes, sigBits }
}

export interface ShareSignature {
  /** 32 bytes: the selected private-share bytes ("Pixels" on the wire). */
  shareSig: Uint8Array
  /** hex(SHA3-256(ASCII(sigBits))): the text the DID key signs. */
  keyDigestHex: string
}

/** Share half of an image signature. `pvtShareStream` may be the whole stream or its first 256 bytes. */
export function shareSign (hashHex: string, pvtShareStream: Uint8Array): ShareSignature {
  checkHash(hashHex)
  if (pvtShareStream.length < SHARE_HEAD_LEN) throw new RbtError(ErrorCode.INVALID_INPUT, 'private share stream is too short')
  const w = walk(hashHex, (_k, j) => pvtShareStream[j]!)
  return { shareSig: w.bytes, keyDigestHex: sha3Hex(utf8(w.sigBits)) }
}

/**
 * Check the share half of an image signature. Returns the key digest the key signature must
 * cover, or null when the share signature does not match the DID's public images.
 */
export function shareVerify (hashHex: string, shareSig: Uint8Array, didHead: Uint8Array, pubHead: Uint8Array): string | null {
  checkHash(hashHex)
  if (!(shareSig instanceof Uint8Array) || shareSig.length !== SHARE_SIG_LEN) return null
  if (didHead.length < DID_HEAD_LEN || pubHead.length < SHARE_HEAD_LEN) throw new RbtError(ErrorCode.INVALID_INPUT, 'DID image data is too short')
  const w = walk(hashHex, k => shareSig[k]!)
  for (let k = 0; k < 32; k++) {
    const j = w.indexes[k]!
    const didBit = (didHead[j >> 3]! >> (7 - (j & 7))) & 1
    if (PARITY[shareSig[k]! & pubHead[j]!] !== didBit) return null
  }
  return sha3Hex(utf8(w.sigBits))
}
