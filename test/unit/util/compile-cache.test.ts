import { expect } from 'chai'
import { spawnSync } from 'node:child_process'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import Module from 'node:module'
import { compileCacheDir } from '../../../src/util/compile-cache.js'

const CACHE_MODULE = fileURLToPath(new URL('../../../src/util/compile-cache.js', import.meta.url))

describe('util: compile cache', () => {
  let dir: string
  let cache: string
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-cc-'))
    cache = join(dir, 'cache')
  })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  /**
   * Runs a fresh process that turns the cache on, then requires `main.cjs` and prints what it
   * returns. This module's own cache unless `env` says otherwise (Node 22.1 and later would use
   * Node's).
   */
  function run (env: Record<string, string> = {}): { out: string, err: string, code: number | null } {
    const entry = join(dir, 'entry.mjs')
    writeFileSync(entry, [
      `import { enableCompileCache } from ${JSON.stringify(CACHE_MODULE)}`,
      "import { createRequire } from 'node:module'",
      'enableCompileCache()',
      'const m = createRequire(import.meta.url)(\'./main.cjs\')',
      'console.log(await m.value())'
    ].join('\n'))
    const r = spawnSync(process.execPath, [entry], { env: { ...process.env, RBTNODE_COMPILE_CACHE: cache, RBTNODE_COMPILE_CACHE_OWN: '1', ...env }, encoding: 'utf8' })
    return { out: r.stdout.trim(), err: r.stderr, code: r.status }
  }

  it('serves a second process from the cache, and never stale code for a changed source of the same length', () => {
    writeFileSync(join(dir, 'main.cjs'), "const dep = require('./dep.cjs')\nexports.value = async () => 'A' + dep.x + require.resolve('./dep.cjs').endsWith('dep.cjs')\n")
    writeFileSync(join(dir, 'dep.cjs'), '#!/usr/bin/env node\nexports.x = 1\n')
    expect(run().out).to.equal('A1true')
    expect(readdirSync(cache).filter((f) => f.endsWith('.bin'))).to.have.length(1)
    expect(run().out).to.equal('A1true')
    // the same length as before: V8 alone would accept the old code for it
    writeFileSync(join(dir, 'dep.cjs'), '#!/usr/bin/env node\nexports.x = 2\n')
    expect(run().out).to.equal('A2true')
    expect(run().out).to.equal('A2true')
  })

  it('a module that imports dynamically still can, on a cached run too', () => {
    writeFileSync(join(dir, 'esm.mjs'), 'export const y = 7\n')
    writeFileSync(join(dir, 'main.cjs'), "exports.value = async () => 'B' + (await import('./esm.mjs')).y\n")
    for (let i = 0; i < 3; i++) {
      const r = run()
      expect(r.out, r.err).to.equal('B7')
      expect(r.err).to.equal('')
    }
  })

  it('is off with RBTNODE_COMPILE_CACHE=0, and refuses a directory others can write', () => {
    writeFileSync(join(dir, 'main.cjs'), "exports.value = async () => 'C'\n")
    expect(run({ RBTNODE_COMPILE_CACHE: '0' }).out).to.equal('C')
    expect(existsSync(cache)).to.equal(false)
    mkdirSync(cache)
    chmodSync(cache, 0o777)
    expect(run().out).to.equal('C')
    expect(readdirSync(cache)).to.have.length(0)
  })

  it('a damaged cache file is ignored and replaced', () => {
    writeFileSync(join(dir, 'main.cjs'), "exports.value = async () => 'D'\n")
    expect(run().out).to.equal('D')
    const file = join(cache, readdirSync(cache)[0])
    writeFileSync(file, Buffer.from([255, 255, 255, 0, 1, 2, 3]))
    expect(run().out).to.equal('D')
    expect(run().out).to.equal('D')
  })

  it('is Node\'s own cache where Node has one (22.1 and later), ES modules included, and never stale', function () {
    if (typeof (Module as { enableCompileCache?: unknown }).enableCompileCache !== 'function') this.skip()
    writeFileSync(join(dir, 'esm.mjs'), 'export const y = 1\n')
    writeFileSync(join(dir, 'main.cjs'), "exports.value = async () => 'E' + (await import('./esm.mjs')).y\n")
    expect(run({ RBTNODE_COMPILE_CACHE_OWN: '' }).out).to.equal('E1')
    const files = (d: string): string[] => readdirSync(d, { recursive: true, encoding: 'utf8' })
    expect(files(cache).some((f) => f.startsWith('node'))).to.equal(true)
    expect(files(cache).filter((f) => f.endsWith('.bin'))).to.have.length(0)
    expect(run({ RBTNODE_COMPILE_CACHE_OWN: '' }).out).to.equal('E1')
    writeFileSync(join(dir, 'esm.mjs'), 'export const y = 2\n')
    expect(run({ RBTNODE_COMPILE_CACHE_OWN: '' }).out).to.equal('E2')
  })

  it('lives under XDG_CACHE_HOME, else ~/.cache', () => {
    expect(compileCacheDir({ XDG_CACHE_HOME: '/x' })).to.equal('/x/rbtnode')
    expect(compileCacheDir({ RBTNODE_COMPILE_CACHE: '/y' })).to.equal('/y')
    expect(compileCacheDir({ RBTNODE_COMPILE_CACHE: 'off' })).to.equal(undefined)
  })
})
