import { expect } from 'chai'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, relative, resolve, sep } from 'node:path'
import { ROOT } from '../helpers/cli.js'

/**
 * The house rules over the whole source tree (docs/architecture.md, "Floors"). The graph is read
 * from the TypeScript sources, not from dist/, so that type-only imports count: a type import is
 * still a dependency a reader has to follow, and a circle of types is a circle of ideas.
 */

export interface ImportGraph {
  /** file (relative to the root, forward slashes) → the files it imports */
  files: Map<string, Set<string>>
  /** file → bare package specifiers it imports (package name only) */
  packages: Map<string, Set<string>>
}

// static imports, `import type`, re-exports, side-effect imports and dynamic import('...') with a literal
const IMPORT_RE = /^\s*(?:import|export)\s+(?:type\s+)?[^'";]*?\sfrom\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]|\bimport\(\s*['"]([^'"]+)['"]\s*\)/gm

function walk (dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) walk(p, out)
    else if (p.endsWith('.ts')) out.push(p)
  }
  return out
}

const rel = (p: string): string => relative(ROOT, p).split(sep).join('/')
const packageName = (spec: string): string => spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0]

/** The import graph of the given top-level folders (e.g. src, commands). */
export function importGraph (roots: string[]): ImportGraph {
  const files = new Map<string, Set<string>>()
  const packages = new Map<string, Set<string>>()
  for (const r of roots) {
    for (const f of walk(join(ROOT, r))) {
      const deps = new Set<string>()
      const pkgs = new Set<string>()
      for (const m of readFileSync(f, 'utf8').matchAll(IMPORT_RE)) {
        const spec = m[1] ?? m[2] ?? m[3]
        if (spec.startsWith('.')) {
          const target = resolve(dirname(f), spec.replace(/\.js$/, '.ts'))
          if (existsSync(target)) deps.add(rel(target))
        } else if (!spec.startsWith('node:')) {
          pkgs.add(packageName(spec))
        }
      }
      files.set(rel(f), deps)
      packages.set(rel(f), pkgs)
    }
  }
  return { files, packages }
}

/** Strongly connected components with more than one file, or a file importing itself (Tarjan). */
export function cycles (g: Map<string, Set<string>>): string[][] {
  let index = 0
  const stack: string[] = []
  const onStack = new Set<string>()
  const idx = new Map<string, number>()
  const low = new Map<string, number>()
  const out: string[][] = []
  const visit = (v: string): void => {
    idx.set(v, index); low.set(v, index); index++
    stack.push(v); onStack.add(v)
    for (const w of g.get(v) ?? []) {
      if (!idx.has(w)) { visit(w); low.set(v, Math.min(low.get(v)!, low.get(w)!)) } else if (onStack.has(w)) low.set(v, Math.min(low.get(v)!, idx.get(w)!))
    }
    if (low.get(v) === idx.get(v)) {
      const c: string[] = []
      let w: string
      do { w = stack.pop()!; onStack.delete(w); c.push(w) } while (w !== v)
      if (c.length > 1 || g.get(v)?.has(v) === true) out.push(c.sort())
    }
  }
  for (const v of g.keys()) if (!idx.has(v)) visit(v)
  return out
}

/** One path around a cycle, for the failure message: a → b → … → a. */
export function cyclePath (g: Map<string, Set<string>>, members: string[]): string {
  const inCycle = new Set(members)
  const start = members[0]
  const prev = new Map<string, string>()
  const queue = [start]
  const seen = new Set([start])
  while (queue.length > 0) {
    const v = queue.shift()!
    for (const w of g.get(v) ?? []) {
      if (!inCycle.has(w)) continue
      if (w === start) {
        const path = [start]
        for (let x: string | undefined = v; x !== undefined && x !== start; x = prev.get(x)) path.splice(1, 0, x)
        return [...path, start].join(' → ')
      }
      if (!seen.has(w)) { seen.add(w); prev.set(w, v); queue.push(w) }
    }
  }
  return members.join(', ')
}

/** Static closure (dynamic imports excluded: they are allowed to be lazy) of one file. */
function staticClosure (entry: string): { files: Set<string>, packages: Set<string> } {
  const files = new Set<string>()
  const packages = new Set<string>()
  const todo = [entry]
  while (todo.length > 0) {
    const f = todo.pop()!
    if (files.has(f)) continue
    files.add(f)
    const src = readFileSync(join(ROOT, f), 'utf8')
    for (const m of src.matchAll(IMPORT_RE)) {
      if (m[3] !== undefined) continue
      const spec = m[1] ?? m[2]
      if (spec.startsWith('.')) {
        const target = resolve(dirname(join(ROOT, f)), spec.replace(/\.js$/, '.ts'))
        if (existsSync(target)) todo.push(rel(target))
      } else if (!spec.startsWith('node:')) packages.add(packageName(spec))
    }
  }
  return { files, packages }
}

/**
 * Floors, lowest first. A file may import files of its own floor or of a floor below, never
 * one above. Within src/node, each feature component's folder sits above the shared framework
 * and below the composition root (the files directly in src/node).
 */
export const FLOORS: Array<{ floor: number, prefixes: string[] }> = [
  { floor: 0, prefixes: ['src/util/'] },
  { floor: 1, prefixes: ['src/wallet/', 'src/tokenchain/', 'src/storage/', 'src/contracts/', 'src/config/', 'src/api/contract/'] },
  { floor: 2, prefixes: ['src/tokens/', 'src/p2p/', 'src/client/'] },
  { floor: 3, prefixes: ['src/consensus/', 'src/cli/', 'src/testnet/'] },
  { floor: 4, prefixes: ['src/token-files/', 'src/api/server/'] },
  { floor: 5, prefixes: ['src/node/component/'] },
  { floor: 6, prefixes: ['src/node/'] }, // feature components: src/node/<feature>/
  { floor: 7, prefixes: [] }, // the composition root: files directly in src/node/
  { floor: 8, prefixes: ['src/index.ts'] } // the package's entry: startNode embeds the composition root
]

export function floorOf (file: string): number | undefined {
  if (/^src\/node\/[^/]+\.ts$/.test(file)) return 7
  let best: { floor: number, len: number } | undefined
  for (const { floor, prefixes } of FLOORS) {
    for (const p of prefixes) if (file.startsWith(p) && (best === undefined || p.length > best.len)) best = { floor, len: p.length }
  }
  return best?.floor
}

const DOMAIN = ['src/wallet/', 'src/tokenchain/', 'src/consensus/', 'src/tokens/']
const NETWORK_HTTP_STORAGE_PACKAGES = /^(libp2p|@libp2p\/|@chainsafe\/|@multiformats\/multiaddr|hono|@hono\/|classic-level|level|lowdb|better-sqlite3|pg|mssql|undici)$/
const STORAGE_ENGINE_FILES = ['src/storage/level-store.ts', 'src/storage/node-config-store.ts']

describe('architecture: the dependency rules hold over the whole tree', () => {
  const graph = importGraph(['src', 'commands'])
  const src = new Map([...graph.files].filter(([f]) => f.startsWith('src/')))

  it('reads the tree', () => { expect(src.size).to.be.greaterThan(100) })

  it('no import cycles in src/ (static, type-only and dynamic imports all count)', () => {
    const found = cycles(src)
    expect(found.map((c) => cyclePath(src, c)), 'import cycles').to.deep.equal([])
  })

  it('domain folders (wallet, tokenchain, consensus, tokens) never reach libp2p, Hono, an HTTP client or a storage engine', () => {
    const bad: string[] = []
    for (const f of src.keys()) {
      if (!DOMAIN.some((d) => f.startsWith(d))) continue
      const { files, packages } = staticClosure(f)
      for (const p of packages) if (NETWORK_HTTP_STORAGE_PACKAGES.test(p)) bad.push(`${f} reaches package ${p}`)
      for (const x of files) {
        if (x.startsWith('src/p2p/') || x.startsWith('src/api/server/') || x.startsWith('src/node/') || STORAGE_ENGINE_FILES.includes(x)) bad.push(`${f} reaches ${x}`)
      }
    }
    expect(bad).to.deep.equal([])
  })

  it('the HTTP layer (src/api) imports only itself and util: never node internals, p2p, storage or domain code', () => {
    const bad: string[] = []
    for (const [f, deps] of src) {
      if (!f.startsWith('src/api/')) continue
      for (const d of deps) if (!d.startsWith('src/api/') && !d.startsWith('src/util/')) bad.push(`${f} → ${d}`)
      if (f.startsWith('src/api/contract/')) for (const d of deps) if (d.startsWith('src/api/server/')) bad.push(`${f} → ${d}`)
    }
    expect(bad).to.deep.equal([])
  })

  it('commands never load the server (static closure of every command, run included)', () => {
    const bad: string[] = []
    for (const f of graph.files.keys()) {
      if (!f.startsWith('commands/')) continue
      const { files, packages } = staticClosure(f)
      for (const x of files) if (x.startsWith('src/api/server/') || x.startsWith('src/node/')) bad.push(`${f} reaches ${x}`)
      for (const p of packages) if (/^(hono|@hono\/)/.test(p)) bad.push(`${f} reaches package ${p}`)
    }
    expect(bad).to.deep.equal([])
  })

  it('every file of src/ sits on a floor', () => {
    expect([...src.keys()].filter((f) => floorOf(f) === undefined)).to.deep.equal([])
  })

  it('no import runs back up a floor', () => {
    const bad: string[] = []
    for (const [f, deps] of src) {
      const from = floorOf(f)!
      for (const d of deps) {
        const to = floorOf(d)!
        if (to > from) bad.push(`${f} (floor ${from}) → ${d} (floor ${to})`)
      }
    }
    expect(bad).to.deep.equal([])
  })
})
