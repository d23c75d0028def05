import { cpSync, mkdirSync, rmSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

/** What the evidence keeps of a node: its name, data dir and everything its processes wrote. */
export interface EvidenceNode {
  name: string
  dir: string
  /** stdout and stderr of every start of the node, in order */
  logs: () => string
}

/** Files of a data dir not copied: the disk-fault filler and the API bridge's socket. */
const SKIP = /(^|\/)(chaos-filler|api\.sock)$/

/**
 * The evidence of a soak (docs/chaos.md, "The evidence of a problem"): for a problem seen during
 * the run (a restart that failed, an acknowledged transfer missing after one), a copy of the node's
 * data dir as it was then and the node's whole output; at the end, a copy of every node's data dir
 * and output. It lives in `<tmpdir>/chaos-<seed>-evidence/` and is kept only when the soak ends
 * with a problem or a failed restart (`discard()` otherwise).
 */
export class Evidence {
  private count = 0
  /** evidence lines (last log lines, the copy's path) by problem */
  private readonly byProblem = new Map<string, string[]>()

  constructor (readonly dir: string, private readonly lines = 30) {}

  /**
   * Copies the node's data dir and writes its whole output, now (the dir changes as the run goes
   * on); the lines to attach to a problem: where the copy is, and the node's last output lines.
   */
  keep (n: EvidenceNode, label: string): string[] {
    const to = join(this.dir, `${String(++this.count).padStart(3, '0')}-${n.name}-${label.replace(/[^a-z0-9-]+/gi, '-')}`)
    let copied = `data dir copied to ${to}`
    try {
      mkdirSync(to, { recursive: true })
      cpSync(n.dir, join(to, 'data'), { recursive: true, filter: (src) => !SKIP.test(src) })
    } catch (e) { copied = `data dir ${n.dir} not copied (${(e as Error).message})` }
    const logs = n.logs()
    try { writeFileSync(join(to, 'output.log'), logs) } catch {}
    return [
      `    ${n.name}: ${copied}; its whole output in ${join(to, 'output.log')}; its last ${this.lines} lines:`,
      ...logs.trimEnd().split('\n').slice(-this.lines).map((l) => `      | ${l}`)
    ]
  }

  /** Attaches evidence lines to a problem (as written to the problems file). */
  attach (problem: string, lines: string[]): void {
    this.byProblem.set(problem, [...(this.byProblem.get(problem) ?? []), ...lines])
  }

  /** The problems, each followed by its evidence; a problem without any gets `fallback(problem)`. */
  render (problems: string[], fallback: (problem: string) => string[]): string[] {
    return problems.flatMap((p) => [p, ...(this.byProblem.get(p) ?? this.byProblem.get(p.replace(/^chain: /, '')) ?? fallback(p))])
  }

  get kept (): number { return this.count }

  discard (): void { rmSync(this.dir, { recursive: true, force: true }) }
}

/**
 * The soak's nodes a problem's text names: by name (q0…, u0…) or by one of their DIDs (problems
 * name DIDs by their first 12 characters or more).
 */
export function namedNodes (problem: string, dids: ReadonlyArray<{ name: string, dids: readonly string[] }> = []): string[] {
  const byName = problem.match(/\b(q\d+|u\d+)\b/g) ?? []
  const byDid = dids.filter((n) => n.dids.some((d) => problem.includes(d.slice(0, 12)))).map((n) => n.name)
  return [...new Set([...byName, ...byDid])]
}
