import { expect } from 'chai'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { checkBundle, packageOf, type Metafile } from '../../../build/bundle-check.js'
import { EXTERNAL, FAST_DIR, NODE_COMMANDS, OUT_DIR } from '../../../build/bundle.js'

/** A bundle folder with these files, and a metafile whose outputs name them. */
function fixture (files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bundle-check-'))
  for (const [name, text] of Object.entries(files)) {
    mkdirSync(join(dir, name, '..'), { recursive: true })
    writeFileSync(join(dir, name), text)
  }
  return dir
}

const output = (inputs: string[], imports: Array<{ path: string, kind: string }> = [], entryPoint?: string): Metafile['outputs'][string] =>
  ({ imports, inputs: Object.fromEntries(inputs.map((i) => [i, {}])), ...(entryPoint !== undefined ? { entryPoint } : {}) })

describe('build: bundle check', () => {
  const dirs: string[] = []
  after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })
  const make = (files: Record<string, string>): string => { const d = fixture(files); dirs.push(d); return d }

  it('names the package of an input path', () => {
    expect(packageOf('node_modules/classic-level/index.js')).to.equal('classic-level')
    expect(packageOf('node_modules/@libp2p/tcp/dist/src/index.js')).to.equal('@libp2p/tcp')
    expect(packageOf('node_modules/a/node_modules/@x/y/z.js')).to.equal('@x/y')
    expect(packageOf('src/node/rbt-node.ts')).to.equal(undefined)
  })

  it('passes a bundle that keeps the rules', () => {
    const dir = make({ 'index.js': 'new URL("./w.js", import.meta.url)', 'w.js': '', 'commands/a.js': '' })
    const meta: Metafile = {
      inputs: { 'src/index.ts': {}, 'node_modules/libp2p/dist/index.js': {} },
      outputs: {
        'dist/bundle/index.js': output(['src/index.ts', 'node_modules/libp2p/dist/index.js']),
        'dist/bundle/commands/a.js': output(['commands/a.ts'], [{ path: 'dist/bundle/index.js', kind: 'dynamic-import' }], 'commands/a.ts')
      }
    }
    expect(checkBundle(dir, meta, { external: ['classic-level'] })).to.deep.equal([])
  })

  it('fails when a package that must stay external was bundled', () => {
    const dir = make({ 'index.js': '' })
    const meta: Metafile = { inputs: { 'node_modules/classic-level/index.js': {}, 'node_modules/@scope/native/x.js': {} }, outputs: {} }
    expect(checkBundle(dir, meta, { external: ['classic-level', '@scope/native', 'secp256k1'] })).to.deep.equal([
      'classic-level must stay external but was bundled',
      '@scope/native must stay external but was bundled'
    ])
  })

  it('fails when the JavaScript grows past the limit (maps not counted)', () => {
    const dir = make({ 'a.js': 'x'.repeat(600), 'b.js': 'y'.repeat(500), 'a.js.map': 'z'.repeat(5000) })
    const meta: Metafile = { inputs: {}, outputs: {} }
    expect(checkBundle(dir, meta, { external: [], maxBytes: 1100 })).to.deep.equal([])
    const problems = checkBundle(dir, meta, { external: [], maxBytes: 1099 })
    expect(problems).to.have.length(1)
    expect(problems[0]).to.match(/1100 bytes, over the limit of 1099/)
  })

  it('fails when a worker URL names a file that is not beside the code', () => {
    const dir = make({ 'commands/run.js': 'new URL("./chain-validation-worker.js", import.meta.url)', 'chain-validation-worker.js': '' })
    expect(checkBundle(dir, { inputs: {}, outputs: {} }, { external: [] })).to.deep.equal([
      'commands/run.js refers to ./chain-validation-worker.js, which is not in the bundle beside it'
    ])
  })

  it('fails when a client verb statically loads node code, not when it loads it on first use', () => {
    const dir = make({ 'commands/a.js': '', 'commands/run.js': '', 'chunk.js': '', 'node.js': '' })
    const meta: Metafile = {
      inputs: {},
      outputs: {
        'dist/bundle/commands/a.js': output(['commands/a.ts'], [{ path: 'dist/bundle/chunk.js', kind: 'import-statement' }, { path: 'dist/bundle/node.js', kind: 'dynamic-import' }], 'commands/a.ts'),
        'dist/bundle/commands/run.js': output(['commands/run.ts'], [{ path: 'dist/bundle/node.js', kind: 'import-statement' }], 'commands/run.ts'),
        'dist/bundle/chunk.js': output(['src/cli/flags.ts']),
        'dist/bundle/node.js': output(['src/node/rbt-node.ts', 'node_modules/@libp2p/tcp/dist/index.js'])
      }
    }
    expect(checkBundle(dir, meta, { external: [], nodeCommands: ['run'] })).to.deep.equal([])
    meta.outputs['dist/bundle/chunk.js'] = output(['src/cli/flags.ts', 'node_modules/prom-client/index.js'])
    expect(checkBundle(dir, meta, { external: [], nodeCommands: ['run'] })).to.deep.equal([
      'the client verb a loads node_modules/prom-client/index.js at start (make it a dynamic import)'
    ])
  })

  it('fails when a fast verb statically loads a package named for it (oclif there)', () => {
    const dir = make({ 'commands/a.js': '', 'chunk.js': '' })
    const meta: Metafile = {
      inputs: {},
      outputs: {
        'dist/bundle/fast/commands/a.js': output(['commands/a.ts'], [{ path: 'dist/bundle/fast/chunk.js', kind: 'import-statement' }], 'commands/a.ts'),
        'dist/bundle/fast/chunk.js': output(['src/cli/lite-oclif.ts'])
      }
    }
    expect(checkBundle(dir, meta, { external: [], clientForbidden: ['@oclif/core'] })).to.deep.equal([])
    meta.outputs['dist/bundle/fast/chunk.js'] = output(['node_modules/@oclif/core/lib/index.js'])
    expect(checkBundle(dir, meta, { external: [], clientForbidden: ['@oclif/core'] })).to.deep.equal([
      'the client verb a loads node_modules/@oclif/core/lib/index.js at start (make it a dynamic import)'
    ])
  })

  it('passes the fast path\'s build this build wrote: the client verbs without oclif or node code', () => {
    const fastOut = join(OUT_DIR, FAST_DIR)
    const meta = JSON.parse(readFileSync(join(fastOut, 'meta.json'), 'utf8')) as Metafile
    expect(checkBundle(fastOut, meta, { external: EXTERNAL, clientForbidden: ['@oclif/core'] })).to.deep.equal([])
    const inputs = Object.keys(meta.inputs)
    expect(inputs.some((i) => i.includes('node_modules/@oclif/core/'))).to.equal(false)
    expect(inputs).to.include('src/cli/lite-oclif.ts')
    expect(Object.values(meta.outputs).filter((o) => o.entryPoint?.startsWith('commands/') === true).length).to.be.greaterThan(60)
  })

  it('passes the bundle this build wrote', () => {
    const meta = JSON.parse(readFileSync(join(OUT_DIR, 'meta.json'), 'utf8')) as Metafile
    expect(checkBundle(OUT_DIR, meta, { external: EXTERNAL, nodeCommands: NODE_COMMANDS })).to.deep.equal([])
    // and what the check reads is real: natives were kept out while libp2p and oclif went in
    const inputs = Object.keys(meta.inputs)
    expect(inputs.some((i) => i.includes('node_modules/libp2p/'))).to.equal(true)
    expect(inputs.some((i) => i.includes('node_modules/@oclif/core/'))).to.equal(true)
    expect(inputs.some((i) => i.includes('node_modules/classic-level/'))).to.equal(false)
  })
})
