/**
 * Frame payload codec: UTF-8 JSON in which every Uint8Array is written as {"$b64": "<base64>"}
 * and turned back into a Uint8Array when read. See docs/protocol.md, "Wire framing".
 */
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'

const BYTES_KEY = '$b64'
const BYTES_KEY_QUOTED = JSON.stringify(BYTES_KEY)
const encoder = new TextEncoder()
const decoder = new TextDecoder('utf-8', { fatal: true })

function replacer (this: Record<string, unknown>, key: string, value: unknown): unknown {
  // `this[key]` is the value before toJSON ran (a Buffer's toJSON would hide that it is bytes).
  const original = this[key]
  if (original instanceof Uint8Array) return { [BYTES_KEY]: Buffer.from(original.buffer, original.byteOffset, original.byteLength).toString('base64') }
  if (typeof value === 'bigint') throw new RbtError(ErrorCode.INVALID_INPUT, `bigint at "${key}" cannot be sent; use a string`)
  return value
}

function reviver (_key: string, value: unknown): unknown {
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const o = value as Record<string, unknown>
    const b = o[BYTES_KEY]
    if (typeof b === 'string') {
      const keys = Object.keys(o)
      if (keys.length === 1) return new Uint8Array(Buffer.from(b, 'base64'))
    }
  }
  return value
}

export function encodeJson (value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value, replacer))
}

export function decodeJson (bytes: Uint8Array): unknown {
  let text: string
  try {
    text = decoder.decode(bytes)
    // no byte string named: no reviver (see decodeFrame)
    return text.includes(BYTES_KEY_QUOTED) ? JSON.parse(text, reviver) : JSON.parse(text)
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
const BIN_KEY_QUOTED = JSON.stringify(BIN_KEY)

/**
 * A binary frame as the list of its pieces: the head (mark, header length and header), then each
 * byte string as given, not copied. `byteLength` is the frame's whole length.
 */
export interface BinaryFrame { parts: Uint8Array[], byteLength: number }

export function encodeBinary (value: unknown): BinaryFrame {
  const parts: Uint8Array[] = []
  let at = 0
  const header = encoder.encode(JSON.stringify(value, function (this: Record<string, unknown>, key: string, v: unknown): unknown {
    const original = this[key]
    if (original instanceof Uint8Array) {
      parts.push(original)
      const ref = { [BIN_KEY]: [at, original.byteLength] }
      at += original.byteLength
      return ref
    }
    if (typeof v === 'bigint') throw new RbtError(ErrorCode.INVALID_INPUT, `bigint at "${key}" cannot be sent; use a string`)
    return v
  }))
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
    // a header that names no byte string is plain JSON: parsed without the reviver, which is called
    // for every value and costs several times the parse (the key may also appear inside a string:
    // the reviver then runs and tells the two apart)
    if (!text.includes(BIN_KEY_QUOTED)) return JSON.parse(text)
    return JSON.parse(text, (_key: string, value: unknown): unknown => {
      if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
        const ref = (value as Record<string, unknown>)[BIN_KEY]
        if (ref !== undefined && Object.keys(value).length === 1) {
          if (!Array.isArray(ref) || ref.length !== 2) throw new Error('malformed byte-string reference')
          const [off, len] = ref as unknown[]
          if (!Number.isSafeInteger(off) || !Number.isSafeInteger(len) || (off as number) < 0 || (len as number) < 0 || (off as number) + (len as number) > data.byteLength) {
            throw new Error('byte-string reference out of the frame')
          }
          const view = data.subarray(off as number, (off as number) + (len as number))
          return view.byteLength >= VIEW_MIN_BYTES ? view : view.slice()
        }
      }
      return value
    })
  } catch (e) {
    throw new RbtError(ErrorCode.PROTOCOL, `malformed frame: ${errorMessage(e)}`, { cause: e })
  }
}
