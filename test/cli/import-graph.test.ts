import { expect } from 'chai'
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { ROOT } from '../helpers/cli.js'

/** Static import closure of a compiled module, following relative imports; bare specifiers are collected. */
function closure (entry: string): { files: Set<string>, packages: Set<string> } {
  const files = new Set<string>()
  const packages = new Set<string>()
  const todo = [entry]
  while (todo.length > 0) {
    const f = todo.pop()!
    if (files.has(f)) continue
    files.add(f)
    const src = readFileSync(f, 'utf8')
    // static imports and re-exports only: dynamic import() inside functions is allowed to be lazy
    for (const m of src.matchAll(/^\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|^\s*import\s+['"]([^'"]+)['"]/gm)) {
      const spec = m[1] ?? m[2]
      if (spec.startsWith('.')) {
        const p = resolve(dirname(f), spec)
        if (existsSync(p)) todo.push(p)
      } else {
        packages.add(spec.startsWith('@') ? spec.split('/').slice(0, 2).join('/') : spec.split('/')[0])
      }
    }
  }
  return { files, packages }
}

describe('cli: client commands stay thin', () => {
  const dir = join(ROOT, 'dist', 'commands')
  const commands = readdirSync(dir).filter((f) => f.endsWith('.js') && f !== 'run.js')
  const forbiddenPackages = /^(libp2p|@libp2p\/|@chainsafe\/|hono|@hono\/|classic-level|lowdb|undici|@noble\/|pngjs)/
  const forbiddenDirs = ['/src/api/server/', '/src/node/', '/src/p2p/', '/src/storage/', '/src/consensus/', '/src/wallet/', '/src/tokenchain/', '/src/tokens/', '/src/token-files/', '/src/contracts/']

  it('finds the commands', () => { expect(commands.length).to.be.greaterThan(5) })

  for (const c of commands) {
    it(`${c} imports no libp2p, server, storage or domain code`, () => {
      const { files, packages } = closure(join(dir, c))
      for (const p of packages) expect(p, `${c} imports ${p}`).to.not.match(forbiddenPackages)
      for (const f of files) for (const d of forbiddenDirs) expect(f.includes(d), `${c} reaches ${f}`).to.equal(false)
    })
  }
})
