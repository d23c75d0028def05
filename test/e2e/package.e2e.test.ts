import { expect } from 'chai'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, runProcess } from '../helpers/cli.js'
import { commandArgs, freeBasePort, TestnetProcess } from '../helpers/testnet-process.js'

/** Whether an HTTP server answers at `url` (a node's API). */
async function answers (url: string): Promise<boolean> {
  try { await fetch(url, { signal: AbortSignal.timeout(3000) }); return true } catch { return false }
}

/**
 * The package as users get it: `npm pack`, installed into an empty project (from the local npm
 * cache, with install scripts refused except those the package declares in allowScripts), then
 * `npx rbtnode testnet` for one transfer, a script importing `rbtnode/client`, and a TypeScript
 * file type-checked against the shipped declarations. A file missing from `files`, a broken
 * export or an undeclared native package fails here.
 */
describe('e2e: the packed package in an empty project', function () {
  this.timeout(900_000)
  let tmp = ''
  let proj = ''
  let net: TestnetProcess | undefined

  before(async function () {
    tmp = mkdtempSync(join(tmpdir(), 'rbtnode-pack-'))
    proj = join(tmp, 'proj')
    mkdirSync(proj)
    const pack = await runProcess('npm', ['pack', '--ignore-scripts', '--pack-destination', tmp, '--loglevel=error'], { cwd: ROOT, timeoutMs: 120_000 })
    expect(pack.code, pack.stderr).to.equal(0)
    const tarball = join(tmp, readdirSync(tmp).find((f) => f.endsWith('.tgz'))!)
    // what a user writes: the package's declared native packages allowed; the tarball's own prepare
    // script (run only for non-registry sources) refused
    const ours = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> }
    writeFileSync(join(proj, 'package.json'), JSON.stringify({
      name: 'try-rbtnode', version: '1.0.0', private: true, type: 'module',
      allowScripts: { ...ours.allowScripts, [`file:${tarball}`]: false },
      dependencies: { rbtnode: `file:${tarball}` }
    }, null, 2))
    // better-sqlite3's install script (prebuild-install, else a compile of SQLite) is handed the
    // binary this checkout's own install built, as a local prebuild: the script still runs (and
    // only because allowScripts lets it), but CI compiles SQLite once, not twice
    const sqlite = JSON.parse(readFileSync(join(ROOT, 'node_modules/better-sqlite3/package.json'), 'utf8')) as { version: string }
    const prebuilds = join(tmp, 'prebuilds')
    mkdirSync(prebuilds)
    const tar = await runProcess('tar', ['-czf', join(prebuilds, `better-sqlite3-v${sqlite.version}-node-v${process.versions.modules}-${process.platform}-${process.arch}.tar.gz`), 'build/Release/better_sqlite3.node'], { cwd: join(ROOT, 'node_modules/better-sqlite3') })
    expect(tar.code, tar.stderr).to.equal(0)
    const install = await runProcess('npm', ['install', '--prefer-offline', '--no-audit', '--no-fund', '--strict-allow-scripts', '--loglevel=error'],
      { cwd: proj, timeoutMs: 840_000, env: { npm_config_better_sqlite3_local_prebuilds: prebuilds } })
    expect(install.code, install.stderr).to.equal(0)
  })

  after(async () => {
    await net?.stop()
    rmSync(tmp, { recursive: true, force: true })
  })

  it('installs with only the declared install scripts, and the native modules load', async () => {
    const allowed = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { allowScripts: Record<string, boolean> }
    expect(Object.entries(allowed.allowScripts).filter(([, v]) => v).map(([k]) => k).sort()).to.deep.equal(['better-sqlite3', 'classic-level', 'secp256k1'])
    const load = [
      "const sqlite = require('better-sqlite3')",
      "const { ClassicLevel } = require('classic-level')",
      "const secp = require('secp256k1')",
      "console.log(new sqlite(':memory:').prepare('select 7 as x').get().x, typeof ClassicLevel, secp.privateKeyVerify(Buffer.alloc(32, 1)))"
    ].join(';')
    const r = await runProcess(process.execPath, ['-e', load], { cwd: join(proj, 'node_modules/rbtnode') })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout.trim()).to.equal('7 function true')
    expect(existsSync(join(proj, 'node_modules/rbtnode/dist/src/client/index.d.ts'))).to.equal(true)
  })

  it('ships the bundle with its source maps, not the compiled tree', () => {
    const pkg = join(proj, 'node_modules/rbtnode')
    for (const f of ['dist/bundle/index.js', 'dist/bundle/client.js', 'dist/bundle/client.js.map', 'dist/bundle/cli/main.js', 'dist/bundle/commands/run.js', 'dist/bundle/commands/run.js.map', 'dist/bundle/chain-validation-worker.js', 'oclif.manifest.json',
      'dist/bundle/fast/verbs.json', 'dist/bundle/fast/commands/transferrbt.js', 'dist/bundle/fast/commands/transferrbt.js.map']) {
      expect(existsSync(join(pkg, f)), f).to.equal(true)
    }
    const jsOutsideBundle = (readdirSync(join(pkg, 'dist'), { recursive: true }) as string[]).filter((f) => f.endsWith('.js') && !f.startsWith('bundle/'))
    expect(jsOutsideBundle).to.deep.equal([])
    expect(existsSync(join(pkg, 'dist/bundle/meta.json'))).to.equal(false)
    expect(existsSync(join(pkg, 'dist/bundle/fast/meta.json'))).to.equal(false)
  })

  it('npx rbtnode testnet starts a network whose printed transfer command works; a script using rbtnode/client transfers too', async () => {
    const base = await freeBasePort(7)
    net = new TestnetProcess(['-quorums', '5', '-users', '2', '-basePort', String(base)], { cwd: proj, command: ['npx', 'rbtnode'] })
    const s = await net.ready(180_000)
    const t = await runProcess('npx', ['rbtnode', ...commandArgs(s.commands.transfer)], { cwd: proj, timeoutMs: 120_000 })
    expect(t.code, t.stderr).to.equal(0)
    const [from, to] = s.nodes.filter((n) => n.role === 'user')
    writeFileSync(join(proj, 'transfer.mjs'), [
      "import { RbtClient } from 'rbtnode/client'",
      "import { startNode } from 'rbtnode'",
      `const client = new RbtClient({ baseUrl: ${JSON.stringify(from.api)} })`,
      `const r = await client.transfer({ from: ${JSON.stringify(from.did)}, to: ${JSON.stringify(to.did)}, amount: 0.5 }, { password: () => ${JSON.stringify(s.password)} })`,
      `const bal = await client.call('didBalancesRbt', { params: { did: ${JSON.stringify(from.did)} } })`,
      "const resolved = import.meta.resolve('rbtnode/client')",
      'console.log(JSON.stringify({ state: r.state, id: r.transactionId, startNode: typeof startNode, balance: bal.result, resolved }))',
      'await client.close()'
    ].join('\n'))
    const script = await runProcess(process.execPath, ['transfer.mjs'], { cwd: proj, timeoutMs: 120_000 })
    expect(script.code, script.stderr).to.equal(0)
    const out = JSON.parse(script.stdout) as { state: string, id: string, startNode: string, balance: unknown, resolved: string }
    expect(out.resolved).to.match(/\/node_modules\/rbtnode\/dist\/bundle\/client\.js$/)
    expect(out.state).to.equal('committed')
    expect(out.id).to.match(/^[0-9a-f]{64}$/)
    expect(out.startNode).to.equal('function')
    expect(JSON.stringify(out.balance)).to.match(/"balance":8\.5\b/)
    // stopped as Ctrl-C stops it, nothing of the network is left running (through npx the nodes
    // outlived the test)
    await net.stop()
    for (const n of s.nodes) expect(await answers(n.api), `${n.api} after the stop`).to.equal(false)
  })

  it('the shipped declarations type-check a program using rbtnode and rbtnode/client', async () => {
    writeFileSync(join(proj, 'check.ts'), [
      "import { RbtClient, ApiError, type TransferResult } from 'rbtnode/client'",
      "import { startNode, type EmbeddedNode } from 'rbtnode'",
      "const c = new RbtClient({ baseUrl: 'http://127.0.0.1:20000' })",
      "const st: Promise<{ result: { core_started: boolean } | null }> = c.call('nodeStatus')",
      "const r: Promise<TransferResult> = c.transfer({ from: 'a', to: 'b', amount: 1 }, { password: () => 'x' })",
      'const s: (o: { p?: string }) => Promise<EmbeddedNode> = startNode',
      'console.log(st, r, s, ApiError.name)'
    ].join('\n'))
    const tsc = join(ROOT, 'node_modules/typescript/bin/tsc')
    const r = await runProcess(process.execPath, [tsc, '--noEmit', '--strict', '--skipLibCheck', '--module', 'nodenext', '--moduleResolution', 'nodenext', '--target', 'es2022', 'check.ts'], { cwd: proj, timeoutMs: 120_000 })
    expect(r.code, r.stdout + r.stderr).to.equal(0)
  })
})
