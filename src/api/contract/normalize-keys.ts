import type { z } from 'zod'

/**
 * Go's encoding/json matches object keys case-insensitively, and real clients rely on it
 * (`{DID, PeerID}` and `{did, peerID}` are the same request). This renames input keys to the
 * spelling the schema declares, recursively, before validation. Unknown keys are kept as they are.
 */
export function normalizeKeys (value: unknown, schema: z.ZodType | undefined): unknown {
  if (schema === undefined || value === null || typeof value !== 'object') return value
  const inner = unwrap(schema)
  const def = (inner as unknown as { def: { type: string, element?: z.ZodType } }).def
  if (def.type === 'array' && Array.isArray(value) && def.element !== undefined) {
    return value.map((v) => normalizeKeys(v, def.element))
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
      out[target] = normalizeKeys(v, shape[target])
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
