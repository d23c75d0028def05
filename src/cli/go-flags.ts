/**
 * Go-style flags for oclif: `-port 20001`, `-port=20001` and `--port 20001` all mean the same.
 * Only tokens naming a declared flag are rewritten; a non-boolean flag takes the next token as its
 * value whatever it looks like (Go's rule). An undeclared flag is an error with a suggestion.
 */
export interface FlagInfo { type: 'boolean' | 'option', allowNo?: boolean }

export class UnknownFlagError extends Error {
  constructor (readonly flag: string, readonly suggestion?: string) {
    super(`unknown flag ${flag}` + (suggestion !== undefined ? `; did you mean -${suggestion}?` : '') + ' (see --help)')
    this.name = 'UnknownFlagError'
  }
}

const HELP = new Set(['-h', '-help', '--help'])

/**
 * `-h` and `-help` as `--help`, before oclif sees the arguments: oclif decides whether to show help
 * before the preparse hook runs, so the entry points apply this to the raw arguments. The
 * reference's `-v` subcommand (the version) is oclif's `--version`.
 */
export function helpArgv (argv: string[]): string[] {
  if (argv.length === 1 && argv[0] === '-v') return ['--version']
  const end = argv.indexOf('--')
  return argv.map((a, i) => (end === -1 || i < end) && HELP.has(a) ? '--help' : a)
}

export function normaliseArgv (argv: string[], flags: Record<string, FlagInfo>): string[] {
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]
    if (a === '--') { out.push(...argv.slice(i)); break }
    if (HELP.has(a)) { out.push('--help'); continue }
    const m = /^--?([A-Za-z][A-Za-z0-9_-]*)(=(.*))?$/s.exec(a)
    if (m === null) { out.push(a); continue }
    const raw = m[1]
    const name = resolveName(raw, flags)
    if (name === undefined) {
      if (raw.startsWith('no-') && flags[raw.slice(3)]?.allowNo === true) { out.push('--' + raw); continue }
      throw new UnknownFlagError(a.split('=')[0], suggest(raw, Object.keys(flags)))
    }
    const info = flags[name]
    const value = m[3]
    if (info.type === 'boolean') {
      if (value === undefined) { out.push('--' + name); continue }
      const v = value.toLowerCase()
      if (v === 'false' || v === '0' || v === 'f') { out.push(info.allowNo === true ? '--no-' + name : ''); continue }
      if (v === 'true' || v === '1' || v === 't') { out.push('--' + name); continue }
      throw new Error(`invalid boolean value "${value}" for -${name}`)
    }
    if (value !== undefined) { out.push(`--${name}=${value}`); continue }
    if (i + 1 >= argv.length) throw new Error(`flag -${name} needs a value`)
    out.push(`--${name}=${argv[++i]}`)
  }
  return out.filter((t) => t !== '')
}

function resolveName (raw: string, flags: Record<string, FlagInfo>): string | undefined {
  if (Object.hasOwn(flags, raw)) return raw
  // Go's flag package is case-sensitive, but the reference documents -ChildPath and -childPath alike
  const lower = raw.toLowerCase()
  const hits = Object.keys(flags).filter((k) => k.toLowerCase() === lower)
  return hits.length === 1 ? hits[0] : undefined
}

function suggest (raw: string, names: string[]): string | undefined {
  let best: string | undefined
  let bestD = Infinity
  for (const n of names) {
    const d = distance(raw.toLowerCase(), n.toLowerCase())
    if (d < bestD) { bestD = d; best = n }
  }
  return best !== undefined && bestD <= Math.max(2, Math.floor(raw.length / 3)) ? best : undefined
}

function distance (a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0]
    dp[0] = i
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j]
      dp[j] = Math.min(dp[j] + 1, dp[j - 1] + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = tmp
    }
  }
  return dp[b.length]
}
