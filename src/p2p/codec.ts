/**
 * Frame payload codec: UTF-8 JSON in which every Uint8Array is written as {"$b64": "<base64>"}
 * and turned back into a Uint8Array when read. See docs/protocol.md, "Wire framing".
 */
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'

const BYTES_KEY = '$b64'
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
    return JSON.parse(text, reviver)
  } catch (e) {
    throw new RbtError(ErrorCode.PROTOCOL, `malformed frame: ${errorMessage(e)}`, { cause: e })
  }
}
