/**
 * A block as the reference's `dumptokenchain` writes it into dump.json: the content map under its
 * numeric keys, "98" the block hash and "99" the signatures by DID; byte strings (embedded blocks,
 * contract envelopes) as hex, floats and integers as JSON numbers.
 */
import { decodeBlockEnvelope } from './block.js'
import { CborFloat, type CborValue } from './cbor.js'
import { bytesToHex } from './hash.js'

export type DumpValue = null | boolean | number | string | DumpValue[] | { [key: string]: DumpValue }

export function referenceDumpMap (envelope: Uint8Array): { [key: string]: DumpValue } {
  const block = decodeBlockEnvelope(envelope)
  const out = dumpValue(block.raw) as { [key: string]: DumpValue }
  out['98'] = block.hash
  out['99'] = { ...block.signatures }
  return out
}

function dumpValue (v: CborValue): DumpValue {
  if (v === undefined || v === null) return null
  if (v instanceof Uint8Array) return bytesToHex(v)
  if (v instanceof CborFloat) return v.value
  if (typeof v === 'bigint') return Number(v)
  if (Array.isArray(v)) return v.map(dumpValue)
  if (v instanceof Map) {
    const out: { [key: string]: DumpValue } = {}
    for (const [k, x] of v) out[k instanceof Uint8Array ? bytesToHex(k) : String(k)] = dumpValue(x)
    return out
  }
  if (typeof v === 'object') {
    const out: { [key: string]: DumpValue } = {}
    for (const [k, x] of Object.entries(v)) if (x !== undefined) out[k] = dumpValue(x)
    return out
  }
  return v
}
