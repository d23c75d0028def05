/**
 * Frame payload codec: UTF-8 JSON in which every Uint8Array is written as {"$b64": "<base64>"}
 * and turned back into a Uint8Array when read. See docs/protocol.md, "Wire framing".
 */
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'

const BYTES_KEY = '$b64'
const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

/**
 * `value` with every byte string swapped for what `onBytes` makes of it, in one walk (objects and
 * arrays on the way to one copied, the rest shared), `toJSON` honoured as JSON.stringify would;
 * then a plain JSON.stringify: a replacer is called from the serializer for every value, which cost
 * several times the walk. A bigint is refused, as the serializer would.
 */
function swapBytes (value: unknown, onBytes: (b: Uint8Array) => unknown): unknown {
  const swap = (v: unknown, key: string): unknown => {
    if (v === null || typeof v !== 'object') {
      if (typeof v === 'bigint') throw new RbtError(ErrorCode.INVALID_INPUT, `bigint at "${key}" cannot be sent; use a string`)
      return v
    }
    if (v instanceof Uint8Array) return onBytes(v)
    const toJSON = (v as { toJSON?: unknown }).toJSON
    if (typeof toJSON === 'function') return swap(toJSON.call(v, key), key)
    if (Array.isArray(v)) {
      let out: unknown[] | undefined
      for (let i = 0; i < v.length; i++) {
        const was = v[i] as unknown
        const now = swap(was, String(i))
        if (now !== was) { out ??= v.slice(); out[i] = now }
      }
      return out ?? v
    }
    let out: Record<string, unknown> | undefined
    for (const k of Object.keys(v)) {
      const was = (v as Record<string, unknown>)[k]
      const now = swap(was, k)
      if (now !== was) { out ??= { ...v as Record<string, unknown> }; ownSet(out, k, now) }
    }
    return out ?? v
  }
  return swap(value, '')
}

/** Sets an own property (a key `__proto__` included, which plain assignment would take for the prototype). */
function ownSet (o: Record<string, unknown>, k: string, v: unknown): void {
  if (k === '__proto__') Object.defineProperty(o, k, { value: v, writable: true, enumerable: true, configurable: true })
  else o[k] = v
}

export function encodeJson (value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(swapBytes(value, (b) => ({ [BYTES_KEY]: Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64') }))))
}

/**
 * `v` with every object whose one key is `key` replaced, in place, by what `make` makes of that
 * key's value (left as it is, and walked, where `make` gives undefined): the byte strings of a
 * parsed frame restored in one walk.
 */
function restoreBytes (v: unknown, key: string, make: (ref: unknown) => Uint8Array | undefined): unknown {
  if (v === null || typeof v !== 'object') return v
  if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++) { const x = v[i] as unknown; if (x !== null && typeof x === 'object') v[i] = restoreBytes(x, key, make) }
    return v
  }
  const o = v as Record<string, unknown>
  const keys = Object.keys(o)
  if (keys.length === 1 && keys[0] === key) {
    const bytes = make(o[key])
    if (bytes !== undefined) return bytes
  }
  for (const k of keys) { const x = o[k]; if (x !== null && typeof x === 'object') ownSet(o, k, restoreBytes(x, key, make)) }
  return o
}

export function decodeJson (bytes: Uint8Array): unknown {
  let text: string
  try {
    text = decoder.decode(bytes)
    // the byte strings restored in one walk after the parse (see decodeFrame)
    return restoreBytes(JSON.parse(text), BYTES_KEY, (b) => typeof b === 'string' ? new Uint8Array(Buffer.from(b, 'base64')) : undefined)
  } catch (e) {
    throw new RbtError(ErrorCode.PROTOCOL, `malformed frame: ${errorMessage(e)}`, { cause: e })
  }
}

/**
 * Binary frames (docs/protocol.md, "Binary frames"): the byte strings of a body travel as raw
 * bytes after a JSON header instead of as base64 inside the JSON. Layout: the mark byte 0x01 (a
 * JSON frame starts with `{`), the header's length as a 4-byte big-endian integer, the header
 * (UTF-8 JSON in which each byte string is `{"$bin": [offset, length]}`, counted from the end of
 * the header), then the byte strings one after the other.
 */
export const BINARY_FRAME_MARK = 0x01
const BIN_KEY = '$bin'

/**
 * A binary frame as the list of its pieces: the head (mark, header length and header), then each
 * byte string as given, not copied. `byteLength` is the frame's whole length.
 */
export interface BinaryFrame { parts: Uint8Array[], byteLength: number }

export function encodeBinary (value: unknown): BinaryFrame {
  const parts: Uint8Array[] = []
  let at = 0
  const header = encoder.encode(JSON.stringify(swapBytes(value, (b) => {
    parts.push(b)
    const ref = { [BIN_KEY]: [at, b.byteLength] }
    at += b.byteLength
    return ref
  })))
  const head = new Uint8Array(5 + header.byteLength)
  head[0] = BINARY_FRAME_MARK
  new DataView(head.buffer).setUint32(1, header.byteLength)
  head.set(header, 5)
  return { parts: [head, ...parts], byteLength: head.byteLength + at }
}

/** The frame's pieces in one buffer (small frames, written in one piece). */
export function joinBinary (f: BinaryFrame): Uint8Array {
  if (f.parts.length === 1) return f.parts[0]
  const out = new Uint8Array(f.byteLength)
  let at = 0
  for (const p of f.parts) { out.set(p, at); at += p.byteLength }
  return out
}

/**
 * Byte strings of a binary frame at least this long are handed on as views into the frame; shorter
 * ones are copied, so that a small value kept for long (a cached block, a signature) does not keep
 * its whole frame (up to 1 MiB) alive.
 */
export const VIEW_MIN_BYTES = 64 * 1024

/**
 * Decodes a frame body, JSON or binary. The large byte strings of a binary frame are views into
 * `bytes`, not copies (see VIEW_MIN_BYTES).
 */
export function decodeFrame (bytes: Uint8Array): unknown {
  if (bytes.byteLength === 0 || bytes[0] !== BINARY_FRAME_MARK) return decodeJson(bytes)
  try {
    if (bytes.byteLength < 5) throw new Error('truncated binary frame')
    const headerLength = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(1)
    const base = 5 + headerLength
    if (base > bytes.byteLength) throw new Error('binary frame header runs past the frame')
    const text = decoder.decode(bytes.subarray(5, base))
    // a plain Uint8Array (a Buffer's slice() would not copy), as the JSON decoder gives
    const data = new Uint8Array(bytes.buffer, bytes.byteOffset + base, bytes.byteLength - base)
    // parsed without a reviver (called from the parser for every value, it cost several times the
    // parse), then the references swapped for their bytes in one walk over the parsed value, every
    // frame: the text cannot tell (a key may be written with escapes, "\u0024bin"), and the walk
    // refuses a frame nested too deep to walk, as the reviver did
    const bytesOf = (ref: unknown): Uint8Array => {
      if (!Array.isArray(ref) || ref.length !== 2) throw new Error('malformed byte-string reference')
      const [off, len] = ref as unknown[]
      if (!Number.isSafeInteger(off) || !Number.isSafeInteger(len) || (off as number) < 0 || (len as number) < 0 || (off as number) + (len as number) > data.byteLength) {
        throw new Error('byte-string reference out of the frame')
      }
      const view = data.subarray(off as number, (off as number) + (len as number))
      return view.byteLength >= VIEW_MIN_BYTES ? view : view.slice()
    }
    return restoreBytes(JSON.parse(text), BIN_KEY, bytesOf)
  } catch (e) {
    throw new RbtError(ErrorCode.PROTOCOL, `malformed frame: ${errorMessage(e)}`, { cause: e })
  }
}
