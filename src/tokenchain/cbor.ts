/**
 * Canonical CBOR (RFC 7049 §3.9 "canonical" rules, as used by the reference node's encoder):
 * - integers in their smallest form, definite lengths only;
 * - map keys sorted by the length of their encoded bytes first, then byte-wise;
 * - floats in the shortest width that keeps the exact value (f64 → f32 → f16);
 *   NaN is always `f9 7e00`, ±Infinity are half floats.
 *
 * Int versus float is explicit on the JS side: a JS number that is an integer encodes as a CBOR
 * integer; wrap a value in {@link CborFloat} (see {@link float}) to force a CBOR float, so a Go
 * `float64` of 1.0 becomes `f9 3c00` and never `01`. Non-integer JS numbers, NaN and ±Infinity are
 * always floats. The decoder returns floats as CborFloat, so decode → encode is byte-identical
 * for canonical input.
 */
import { RbtError, ErrorCode } from '../util/errors.js'

/** A number that must be encoded as a CBOR float whatever its value. */
export class CborFloat {
  readonly value: number
  constructor (value: number) {
    if (typeof value !== 'number') throw new RbtError(ErrorCode.INVALID_INPUT, 'CborFloat needs a number')
    this.value = value
  }

  valueOf (): number { return this.value }
}

/** Shorthand for `new CborFloat(x)`. */
export const float = (x: number): CborFloat => new CborFloat(x)

export type CborMap = Map<CborValue, CborValue>
export interface CborObject { [key: string]: CborValue }
export type CborValue =
  | number | bigint | string | boolean | null | undefined
  | Uint8Array | CborFloat | CborValue[] | CborMap | CborObject

const te = new TextEncoder()
const td = new TextDecoder('utf-8', { fatal: true })

const cborError = (msg: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `cbor: ${msg}`)

// ---------------------------------------------------------------------------------------------
// Encoder
// ---------------------------------------------------------------------------------------------

class Writer {
  private buf: Uint8Array
  private view: DataView
  len = 0
  constructor (size = 64) {
    this.buf = new Uint8Array(size)
    this.view = new DataView(this.buf.buffer)
  }

  private ensure (n: number): void {
    if (this.len + n <= this.buf.length) return
    let size = this.buf.length * 2
    while (size < this.len + n) size *= 2
    const next = new Uint8Array(size)
    next.set(this.buf.subarray(0, this.len))
    this.buf = next
    this.view = new DataView(next.buffer)
  }

  byte (b: number): void { this.ensure(1); this.buf[this.len++] = b }
  bytes (b: Uint8Array): void { this.ensure(b.length); this.buf.set(b, this.len); this.len += b.length }
  u16 (v: number): void { this.ensure(2); this.view.setUint16(this.len, v); this.len += 2 }
  u32 (v: number): void { this.ensure(4); this.view.setUint32(this.len, v); this.len += 4 }
  u64 (v: bigint): void { this.ensure(8); this.view.setBigUint64(this.len, v); this.len += 8 }
  f32 (v: number): void { this.ensure(4); this.view.setFloat32(this.len, v); this.len += 4 }
  f64 (v: number): void { this.ensure(8); this.view.setFloat64(this.len, v); this.len += 8 }
  result (): Uint8Array { return this.buf.slice(0, this.len) }
}

const MAX_U64 = (1n << 64n) - 1n

function writeHead (w: Writer, major: number, n: number | bigint): void {
  const mt = major << 5
  if (typeof n === 'bigint') {
    if (n < 0n || n > MAX_U64) throw cborError(`integer out of range: ${n}`)
    if (n <= 0xffffffffn) { writeHead(w, major, Number(n)); return }
    w.byte(mt | 27); w.u64(n); return
  }
  if (n < 24) w.byte(mt | n)
  else if (n <= 0xff) { w.byte(mt | 24); w.byte(n) } else if (n <= 0xffff) { w.byte(mt | 25); w.u16(n) } else if (n <= 0xffffffff) { w.byte(mt | 26); w.u32(n) } else { w.byte(mt | 27); w.u64(BigInt(n)) }
}

/**
 * The IEEE half-precision bits for `x` when `x` (already known to be an exact float32) is exactly
 * representable as a half float, otherwise undefined.
 */
function toHalfExact (x: number): number | undefined {
  if (Number.isNaN(x)) return 0x7e00
  if (x === Infinity) return 0x7c00
  if (x === -Infinity) return 0xfc00
  const sign = (x < 0 || Object.is(x, -0)) ? 0x8000 : 0
  const a = Math.abs(x)
  if (a === 0) return sign
  if (a < 2 ** -14) { // subnormal range: multiples of 2^-24
    const m = a * 2 ** 24
    return Number.isInteger(m) ? sign | m : undefined
  }
  if (a > 65504) return undefined
  let e = Math.floor(Math.log2(a))
  if (2 ** e > a) e--
  else if (2 ** (e + 1) <= a) e++
  const mant = (a / 2 ** e - 1) * 1024
  if (!Number.isInteger(mant)) return undefined
  return sign | ((e + 15) << 10) | mant
}

function writeFloat (w: Writer, x: number): void {
  if (Math.fround(x) === x || Number.isNaN(x)) {
    const h = toHalfExact(x)
    if (h !== undefined) { w.byte(0xf9); w.u16(h); return }
    w.byte(0xfa); w.f32(x); return
  }
  w.byte(0xfb); w.f64(x)
}

function compareKeys (a: Uint8Array, b: Uint8Array): number {
  if (a.length !== b.length) return a.length - b.length
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return a[i]! - b[i]!
  return 0
}

// Encoded text keys repeat constantly ("1".."13", DIDs, token IDs): keep a bounded memo.
const keyMemo = new Map<string, Uint8Array>()
function encodeKey (k: CborValue, depth: number): Uint8Array {
  if (typeof k !== 'string') return encodeCbor(k, depth)
  let b = keyMemo.get(k)
  if (b === undefined) {
    const w = new Writer(k.length + 9)
    writeValue(w, k, depth)
    b = w.result()
    if (keyMemo.size >= 4096) keyMemo.clear()
    keyMemo.set(k, b)
  }
  return b
}

function writeMap (w: Writer, entries: Array<[CborValue, CborValue]>, depth: number): void {
  const encoded = entries.map(([k, v]) => ({ key: encodeKey(k, depth + 1), value: v }))
  encoded.sort((x, y) => compareKeys(x.key, y.key))
  for (let i = 1; i < encoded.length; i++) {
    if (compareKeys(encoded[i - 1]!.key, encoded[i]!.key) === 0) throw cborError('duplicate map key')
  }
  writeHead(w, 5, encoded.length)
  for (const e of encoded) { w.bytes(e.key); writeValue(w, e.value, depth + 1) }
}

const MAX_DEPTH = 64

function writeValue (w: Writer, v: CborValue, depth: number): void {
  if (depth > MAX_DEPTH) throw cborError('nesting too deep')
  switch (typeof v) {
    case 'number':
      if (Number.isInteger(v) && !Object.is(v, -0)) {
        if (!Number.isSafeInteger(v)) throw cborError(`integer ${v} is not a safe JS integer; use a bigint`)
        if (v >= 0) writeHead(w, 0, v)
        else writeHead(w, 1, -1 - v)
      } else writeFloat(w, v)
      return
    case 'bigint':
      if (v >= 0n) writeHead(w, 0, v)
      else writeHead(w, 1, -1n - v)
      return
    case 'string': {
      const b = te.encode(v)
      writeHead(w, 3, b.length); w.bytes(b); return
    }
    case 'boolean': w.byte(v ? 0xf5 : 0xf4); return
    case 'undefined': w.byte(0xf7); return
    case 'object':
      if (v === null) { w.byte(0xf6); return }
      if (v instanceof CborFloat) { writeFloat(w, v.value); return }
      if (v instanceof Uint8Array) { writeHead(w, 2, v.length); w.bytes(v); return }
      if (Array.isArray(v)) {
        writeHead(w, 4, v.length)
        for (const item of v) writeValue(w, item, depth + 1)
        return
      }
      if (v instanceof Map) { writeMap(w, [...v.entries()], depth); return }
      writeMap(w, Object.entries(v).filter(([, x]) => x !== undefined), depth)
      return
    default:
      throw cborError(`cannot encode a ${typeof v}`)
  }
}

/**
 * Canonical CBOR encoding of `value`. Plain-object properties whose value is `undefined` are left
 * out (an optional field that is absent); an explicit `undefined` elsewhere encodes as `f7`.
 */
export function encodeCbor (value: CborValue, depth = 0): Uint8Array {
  const w = new Writer()
  writeValue(w, value, depth)
  return w.result()
}

// ---------------------------------------------------------------------------------------------
// Decoder
// ---------------------------------------------------------------------------------------------

function halfToNumber (h: number): number {
  const sign = (h & 0x8000) !== 0 ? -1 : 1
  const exp = (h >> 10) & 0x1f
  const mant = h & 0x3ff
  if (exp === 0) return sign * mant * 2 ** -24
  if (exp === 31) return mant === 0 ? sign * Infinity : NaN
  return sign * (1 + mant / 1024) * 2 ** (exp - 15)
}

class Reader {
  pos = 0
  /**
   * Whether every item read so far is provably in the form the encoder writes (checked while
   * reading when `check` is set). False means "not proven": the caller re-encodes to decide.
   */
  canonical = true
  private readonly view: DataView
  constructor (readonly buf: Uint8Array, readonly check = false) {
    this.view = new DataView(buf.buffer, buf.byteOffset, buf.byteLength)
  }

  need (n: number): void {
    if (this.pos + n > this.buf.length) throw cborError(`unexpected end of input at offset ${this.pos}`)
  }

  u8 (): number { this.need(1); return this.buf[this.pos++]! }
  u16 (): number { this.need(2); const v = this.view.getUint16(this.pos); this.pos += 2; return v }
  u32 (): number { this.need(4); const v = this.view.getUint32(this.pos); this.pos += 4; return v }
  u64 (): bigint { this.need(8); const v = this.view.getBigUint64(this.pos); this.pos += 8; return v }
  f32 (): number { this.need(4); const v = this.view.getFloat32(this.pos); this.pos += 4; return v }
  f64 (): number { this.need(8); const v = this.view.getFloat64(this.pos); this.pos += 8; return v }
  take (n: number): Uint8Array { this.need(n); const b = this.buf.subarray(this.pos, this.pos + n); this.pos += n; return b }
}

const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER)

/** An argument, noting when it is not in its shortest form (the encoder always writes that). */
function readArg (r: Reader, info: number): number | bigint {
  if (info < 24) return info
  if (info === 24) { const v = r.u8(); if (v < 24) r.canonical = false; return v }
  if (info === 25) { const v = r.u16(); if (v <= 0xff) r.canonical = false; return v }
  if (info === 26) { const v = r.u32(); if (v <= 0xffff) r.canonical = false; return v }
  if (info === 27) {
    const v = r.u64()
    if (v <= 0xffffffffn) r.canonical = false
    return v <= MAX_SAFE ? Number(v) : v
  }
  if (info === 31) throw cborError('indefinite lengths are not allowed')
  throw cborError(`reserved additional information ${info}`)
}

function readLength (r: Reader, info: number): number {
  const n = readArg(r, info)
  if (typeof n === 'bigint' || n > r.buf.length) throw cborError('length too large')
  return n
}

function readValue (r: Reader, depth: number): CborValue {
  if (depth > MAX_DEPTH) throw cborError('nesting too deep')
  const ib = r.u8()
  const major = ib >> 5
  const info = ib & 0x1f
  switch (major) {
    case 0: return readArg(r, info)
    case 1: {
      const n = readArg(r, info)
      if (typeof n === 'bigint') return -1n - n
      const neg = -1 - n
      return Number.isSafeInteger(neg) ? neg : -1n - BigInt(n)
    }
    case 2: return r.take(readLength(r, info)).slice()
    case 3: {
      const b = r.take(readLength(r, info))
      // the decoder drops a leading byte-order mark, so such text does not encode back the same
      if (b.length >= 3 && b[0] === 0xef && b[1] === 0xbb && b[2] === 0xbf) r.canonical = false
      try { return td.decode(b) } catch { throw cborError('invalid UTF-8 in text string') }
    }
    case 4: {
      const n = readLength(r, info)
      const out: CborValue[] = []
      for (let i = 0; i < n; i++) out.push(readValue(r, depth + 1))
      return out
    }
    case 5: {
      const n = readLength(r, info)
      const keys: CborValue[] = []
      const values: CborValue[] = []
      let allText = true
      let prevStart = -1
      let prevEnd = -1
      for (let i = 0; i < n; i++) {
        const start = r.pos
        const k = readValue(r, depth + 1)
        if (typeof k !== 'string') allText = false
        if (r.check) {
          // keys in the encoder's order: shorter encoding first, then byte-wise, no repeats
          if (prevStart >= 0 && compareRanges(r.buf, prevStart, prevEnd, start, r.pos) >= 0) r.canonical = false
          prevStart = start
          prevEnd = r.pos
        }
        keys.push(k)
        const v = readValue(r, depth + 1)
        // the encoder leaves out an object's undefined members
        if (v === undefined) r.canonical = false
        values.push(v)
      }
      // maps with other keys come back as Map, whose encoding rules are left to the re-encoding check
      if (!allText) r.canonical = false
      if (allText) {
        const obj: CborObject = {}
        for (let i = 0; i < n; i++) {
          const k = keys[i] as string
          if (Object.prototype.hasOwnProperty.call(obj, k)) throw cborError(`duplicate map key "${k}"`)
          // a plain store is several times faster; only "__proto__" would hit a setter instead of being data
          if (k === '__proto__') Object.defineProperty(obj, k, { value: values[i], enumerable: true, writable: true, configurable: true })
          else obj[k] = values[i]
        }
        return obj
      }
      const m: CborMap = new Map()
      for (let i = 0; i < n; i++) m.set(keys[i], values[i])
      return m
    }
    case 6: throw cborError('tags are not supported')
    default: // 7
      if (info === 20) return false
      if (info === 21) return true
      if (info === 22) return null
      if (info === 23) return undefined
      // floats: the encoder writes the shortest width that keeps the value, and NaN only as f9 7e00
      if (info === 25) {
        const h = r.u16()
        const x = halfToNumber(h)
        if (Number.isNaN(x) && h !== 0x7e00) r.canonical = false
        return new CborFloat(x)
      }
      if (info === 26) {
        const x = r.f32()
        if (Number.isNaN(x) || toHalfExact(x) !== undefined) r.canonical = false
        return new CborFloat(x)
      }
      if (info === 27) {
        const x = r.f64()
        if (Number.isNaN(x) || Math.fround(x) === x) r.canonical = false
        return new CborFloat(x)
      }
      throw cborError(`unsupported simple value ${info}`)
  }
}

/**
 * Decodes exactly one CBOR item that fills `bytes`. Maps whose keys are all text come back as
 * plain objects, other maps as Map; floats as CborFloat; integers as number when safe, else bigint.
 */
export function decodeCbor (bytes: Uint8Array): CborValue {
  const r = new Reader(bytes)
  const v = readValue(r, 0)
  if (r.pos !== bytes.length) throw cborError(`${bytes.length - r.pos} trailing bytes after the item`)
  return v
}

/** Byte-wise order of two ranges of `b` as the encoder sorts map keys: length first. */
function compareRanges (b: Uint8Array, s1: number, e1: number, s2: number, e2: number): number {
  if (e1 - s1 !== e2 - s2) return (e1 - s1) - (e2 - s2)
  for (let i = 0; i < e1 - s1; i++) if (b[s1 + i] !== b[s2 + i]) return b[s1 + i]! - b[s2 + i]!
  return 0
}

/**
 * Decodes like {@link decodeCbor} and tells, without encoding again, whether the bytes are what
 * the encoder writes for the value: `canonical` true proves `encodeCbor(value)` equals `bytes`.
 * False only means "not proven" (a non-text-keyed map, an undefined member, a text with a
 * byte-order mark, or a real violation): the caller compares a re-encoding in that case.
 */
export function decodeCborChecked (bytes: Uint8Array): { value: CborValue, canonical: boolean } {
  const r = new Reader(bytes, true)
  const value = readValue(r, 0)
  if (r.pos !== bytes.length) throw cborError(`${bytes.length - r.pos} trailing bytes after the item`)
  return { value, canonical: r.canonical }
}

/** True when `bytes` is a single item in canonical form (decode → encode gives the same bytes). */
export function isCanonicalCbor (bytes: Uint8Array): boolean {
  try {
    return equalBytes(encodeCbor(decodeCbor(bytes)), bytes)
  } catch {
    return false
  }
}

export function equalBytes (a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}

/** The JS number of an int or float item (CborFloat unwrapped); undefined for anything else. */
export function numberOf (v: CborValue): number | undefined {
  if (typeof v === 'number') return v
  if (v instanceof CborFloat) return v.value
  if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return Number(v)
  return undefined
}

/** True for a text-keyed map decoded as a plain object. */
export function isCborObject (v: CborValue): v is CborObject {
  return typeof v === 'object' && v !== null && !(v instanceof Uint8Array) && !(v instanceof CborFloat) &&
    !Array.isArray(v) && !(v instanceof Map)
}
