import { normaliseArgv, type FlagInfo } from './go-flags.js'

/**
 * The flags of a client verb parsed without oclif, for the fast path (src/cli/fast-path.ts). It
 * takes only the plain case: every token names a declared flag once, with a value that cannot be
 * mistaken for a flag. It gives the same flags object oclif's parser gives for that argv (the
 * tests compare the two), and `undefined` for anything else (help, a positional argument, an
 * unknown or repeated flag, a missing or empty value, a flag attribute it does not apply): oclif
 * then parses it and says what is wrong, so no message is written twice.
 */

/** A flag definition as `Flags.string` and `Flags.boolean` make it (the parts read here). */
export interface FlagDef {
  type: 'boolean' | 'option'
  allowNo?: boolean
  default?: unknown
  multiple?: boolean
  parse?: (input: unknown, context: unknown, def: FlagDef) => Promise<unknown>
  [attribute: string]: unknown
}

/** Attributes whose effect only oclif's parser gives: a verb using one always goes through oclif. */
const OCLIF_ONLY = ['char', 'env', 'options', 'required', 'dependsOn', 'exclusive', 'exactlyOne', 'relationships', 'delimiter', 'aliases', 'charAliases', 'deprecated', 'deprecateAliases', 'allowStdin', 'defaultHelp']

/** Whether the fast parser reproduces oclif for a verb with these flags. */
export function fastParsable (defs: Record<string, FlagDef>): boolean {
  return Object.values(defs).every((d) =>
    (d.type === 'boolean' || d.type === 'option') && d.multiple !== true && typeof d.default !== 'function' &&
    OCLIF_ONLY.every((a) => d[a] === undefined))
}

/** The flags object of `argv` (the arguments after the verb), or undefined when oclif must parse it. */
export async function parseFlagsFast (argv: readonly string[], defs: Record<string, FlagDef>, context?: unknown): Promise<Record<string, unknown> | undefined> {
  if (!fastParsable(defs)) return undefined
  const info: Record<string, FlagInfo> = {}
  for (const [name, d] of Object.entries(defs)) info[name] = { type: d.type, allowNo: d.allowNo }
  let tokens: string[]
  try { tokens = normaliseArgv([...argv], info) } catch { return undefined }
  const given = new Map<string, unknown>()
  for (const t of tokens) {
    const m = /^--([A-Za-z][A-Za-z0-9_-]*)(?:=(.*))?$/s.exec(t)
    if (m === null) return undefined
    let name = m[1]
    const value = m[2]
    let on = true
    if (!Object.hasOwn(defs, name) && name.startsWith('no-')) {
      name = name.slice(3)
      on = false
      if (defs[name]?.type !== 'boolean' || defs[name].allowNo !== true) return undefined
    }
    const def = defs[name]
    if (def === undefined || given.has(name)) return undefined
    if (def.type === 'boolean') {
      if (value !== undefined) return undefined
      given.set(name, on)
    } else {
      // oclif reads a value that looks like a flag as a missing one: its message, not ours
      if (value === undefined || value === '' || value.startsWith('-')) return undefined
      given.set(name, value)
    }
  }
  const flags: Record<string, unknown> = {}
  try {
    for (const [name, def] of Object.entries(defs)) {
      let v: unknown = def.default
      if (given.has(name)) v = def.parse !== undefined ? await def.parse(given.get(name), context, def) : given.get(name)
      if (v !== undefined) flags[name] = v
    }
  } catch { return undefined }
  return flags
}
