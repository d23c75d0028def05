import type { z } from 'zod'
import { ErrorCode, RbtError } from '../../util/errors.js'

/**
 * Keys that reach an object's prototype machinery when assigned: refused anywhere in a request
 * (400), so no body or query can set a prototype or reach inherited members.
 */
const FORBIDDEN_KEYS = new Set(['__proto__', 'constructor', 'prototype'])

/** Throws INVALID_INPUT when any object in `value`, at any depth, has a forbidden key. Iterative: a deeply nested body cannot exhaust the stack. */
function refuseForbiddenKeys (value: unknown): void {
  const todo: unknown[] = [value]
  while (todo.length > 0) {
    const v = todo.pop()
    if (v === null || typeof v !== 'object') continue
    if (Array.isArray(v)) { for (const x of v) todo.push(x); continue }
    for (const k of Object.keys(v)) {
      if (FORBIDDEN_KEYS.has(k.toLowerCase())) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid input: the key ${JSON.stringify(k)} is not allowed`)
      todo.push((v as Record<string, unknown>)[k])
    }
  }
}

/**
 * Go's encoding/json matches object keys case-insensitively, and real clients rely on it
 * (`{DID, PeerID}` and `{did, peerID}` are the same request). This renames input keys to the
 * spelling the schema declares, recursively, before validation. Unknown keys are kept as they are
 * (a key named like an inherited member, e.g. `toString`, is just an unknown key); `__proto__`,
 * `constructor` and `prototype` are refused with INVALID_INPUT wherever they appear.
 */
export function normalizeKeys (value: unknown, schema: z.ZodType | undefined): unknown {
  refuseForbiddenKeys(value)
  return normalize(value, schema)
}

function normalize (value: unknown, schema: z.ZodType | undefined): unknown {
  if (schema === undefined || value === null || typeof value !== 'object') return value
  const inner = unwrap(schema)
  const def = (inner as unknown as { def: { type: string, element?: z.ZodType } }).def
  if (def.type === 'array' && Array.isArray(value) && def.element !== undefined) {
    return value.map((v) => normalize(v, def.element))
  }
  if (def.type === 'object' && !Array.isArray(value)) {
    const shape = (inner as unknown as { shape: Record<string, z.ZodType> }).shape
    const byLower = new Map<string, string>()
    for (const k of Object.keys(shape)) byLower.set(k.toLowerCase(), k)
    const out: Record<string, unknown> = {}
    for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
      const target = Object.hasOwn(shape, k) ? k : (byLower.get(k.toLowerCase()) ?? k)
      // an exact-case key wins over a differently cased duplicate
      if (Object.hasOwn(out, target) && target !== k) continue
      // only the schema's own fields: `toString` must not find Object.prototype.toString
      out[target] = normalize(v, Object.hasOwn(shape, target) ? shape[target] : undefined)
    }
    return out
  }
  return value
}

function unwrap (schema: z.ZodType): z.ZodType {
  let s = schema as unknown as { def: { type: string, innerType?: z.ZodType, in?: z.ZodType } }
  for (let i = 0; i < 10; i++) {
    const t = s.def.type
    if ((t === 'optional' || t === 'nullable' || t === 'default' || t === 'prefault' || t === 'catch' || t === 'readonly') && s.def.innerType !== undefined) {
      s = s.def.innerType as unknown as typeof s
    } else if (t === 'pipe' && s.def.in !== undefined) {
      s = s.def.in as unknown as typeof s
    } else break
  }
  return s as unknown as z.ZodType
}
