/**
 * Builds what the package ships: the node, the command line and the client as a few ES module files
 * in dist/bundle/ (esbuild, docs/decisions/0019-bundle.md). Node's module loader then opens a
 * handful of files at start instead of some 1,500.
 *
 * - one entry per oclif command (dist/bundle/commands/<id>.js, found by oclif through its manifest),
 *   the help class and the preparse hook; what they share goes to chunks, so a verb loads its own
 *   file and the chunks it imports, nothing else;
 * - `index` (the package's main entry: startNode) and `client` (`rbtnode/client`);
 * - one entry per worker thread, named as the code that starts it refers to it
 *   (`new URL('./chain-validation-worker.js', import.meta.url)`): chunks and workers share one folder;
 * - `cli/boot` (the compile cache and the stack traces), which bin/run.js loads first;
 * - then, in a second build into dist/bundle/fast/, the client verbs again with `@oclif/core`
 *   aliased to src/cli/lite-oclif.ts, and their index `verbs.json` (ids and aliases from
 *   oclif.manifest.json): the fast path src/cli/main.ts takes for a verb with plain arguments.
 *
 * Native modules and what is loaded by path at run time stay outside (EXTERNAL). Source maps are
 * linked (`.map` beside each file): stack traces name the TypeScript files (src/util/stack-traces.ts).
 * The licences of the packages copied in are gathered in dist/bundle/THIRD-PARTY-LICENSES.txt.
 * Run after tsc: `node dist/build/bundle.js` (npm run build does).
 */
import { existsSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { join, relative, sep } from 'node:path'
import { fileURLToPath } from 'node:url'

export const ROOT = fileURLToPath(new URL('../../', import.meta.url))
export const OUT_DIR = join(ROOT, 'dist', 'bundle')

/**
 * Packages that must never be copied into the bundle: native addons (their .node binary is found
 * relative to their own package) and packages whose files are read by path at run time.
 */
export const EXTERNAL = [
  'classic-level',
  'secp256k1',
  // libsodium for the private network's cipher, loaded with require() where it exists (optional)
  'sodium-native',
  'better-sqlite3',
  'better-sqlite3-napi',
  'pngjs',
  'swagger-ui-dist',
  // oclif reads a tsconfig with it in development only (a devDependency here)
  'typescript',
  // the explorer's database drivers: loaded only once a database is configured, so copying them in
  // gains nothing at start (pg-native, which pg tries, stays outside too)
  'pg',
  'mssql',
  // optional native add-ons that some bundled packages try to load and do without
  'pg-native',
  'bufferutil',
  'utf-8-validate'
]

/** Commands whose static imports may hold the whole node (the others are client verbs). */
export const NODE_COMMANDS = ['run']

/**
 * Commands oclif always runs (help, the test network's supervisor and its topic); with `run`, the
 * others are client verbs, built a second time for the fast path (src/cli/fast-path.ts).
 */
export const OCLIF_ONLY_COMMANDS = ['help', 'testnet']

/** Where the fast path's verbs go, under OUT_DIR (src/cli/main.ts looks for them there). */
export const FAST_DIR = 'fast'

/** Worker thread files: the entry name must match the file name the starter's URL names. */
export const WORKERS: Record<string, string> = {
  'chain-validation-worker': 'src/tokens/chain-validation-worker.ts',
  'unpledge-pow-worker': 'src/consensus/unpledge-pow-worker.ts',
  'contract-worker': 'src/contracts/contract-worker.ts',
  'leaf-hash-worker': 'src/token-files/nft/leaf-hash-worker.ts'
}

/** Every entry point: output name (under dist/bundle, without .js) → TypeScript source. */
export function entryPoints (): Record<string, string> {
  const entries: Record<string, string> = {
    index: 'src/index.ts',
    client: 'src/client/index.ts',
    'cli/boot': 'src/cli/boot.ts',
    'cli/main': 'src/cli/main.ts',
    'cli/help': 'src/cli/help.ts',
    'cli/preparse-hook': 'src/cli/preparse-hook.ts',
    'cli/deps': 'src/cli/deps.ts',
    ...WORKERS
  }
  const dir = join(ROOT, 'commands')
  for (const f of readdirSync(dir, { recursive: true }) as string[]) {
    if (!f.endsWith('.ts') || f.endsWith('.d.ts')) continue
    entries[`commands/${f.slice(0, -3).split(sep).join('/')}`] = `commands/${f.split(sep).join('/')}`
  }
  return entries
}

/** Whether the command file `id` (`testnet/status`) is a client verb of the fast path. */
export function isFastVerb (id: string): boolean {
  const top = id.split('/')[0]
  return !NODE_COMMANDS.includes(top) && !OCLIF_ONLY_COMMANDS.includes(top)
}

/**
 * The fast path's entries: the client verbs, and for the CLI tests the dependency hook and the
 * client of that build (a verb there checks errors against that build's own classes).
 */
export function fastEntryPoints (): Record<string, string> {
  const entries: Record<string, string> = { 'cli/deps': 'src/cli/deps.ts', 'cli/rbt-client': 'src/client/rbt-client.ts' }
  for (const [name, source] of Object.entries(entryPoints())) {
    if (name.startsWith('commands/') && isFastVerb(name.slice('commands/'.length))) entries[name] = source
  }
  return entries
}

/**
 * The fast path's index (FAST_DIR/verbs.json): each fast verb's id and aliases, as oclif's
 * manifest names them, → its file under FAST_DIR.
 */
export function fastIndex (manifest: { commands: Record<string, { aliases?: string[], hiddenAliases?: string[] }> }, built: string[]): Record<string, string> {
  const index: Record<string, string> = {}
  for (const [id, c] of Object.entries(manifest.commands)) {
    const file = `commands/${id.split(':').join('/')}`
    if (!built.includes(file)) continue
    for (const name of [id, ...(c.aliases ?? []), ...(c.hiddenAliases ?? [])]) index[name] = `${file}.js`
  }
  return index
}

// ES module output has no `require`, `__filename` or `__dirname`; the CommonJS packages bundled
// into it (oclif among them) use them. Each output file gets its own, for its own location.
const BANNER = [
  "import { createRequire as __rbtCreateRequire } from 'node:module';",
  "import { fileURLToPath as __rbtFileURLToPath } from 'node:url';",
  "import { dirname as __rbtDirname } from 'node:path';",
  'const require = __rbtCreateRequire(import.meta.url);',
  'const __filename = __rbtFileURLToPath(import.meta.url);',
  'const __dirname = __rbtDirname(__filename);'
].join('\n')

export async function bundle (): Promise<void> {
  const esbuild = await import('esbuild')
  rmSync(OUT_DIR, { recursive: true, force: true })
  const options = {
    absWorkingDir: ROOT,
    bundle: true,
    splitting: true,
    format: 'esm',
    platform: 'node',
    target: 'node20',
    // chunks beside the worker entries (see WORKERS)
    chunkNames: '[name]-[hash]',
    sourcemap: 'linked',
    sourcesContent: false,
    external: EXTERNAL,
    banner: { js: BANNER },
    // mainFields and conditions are esbuild's own for Node: a require() gets a package's CommonJS
    // build, an import its ES one (forcing the ES build on require() handed pg its pool as a module
    // namespace instead of a class)
    metafile: true,
    logLevel: 'warning',
    legalComments: 'none',
    // less text to read, parse and map at every start (Node 20 caches no compiled ES module code);
    // names are kept as written, so stack traces and constructor names read as in the source
    minifyWhitespace: true,
    minifySyntax: true,
    // a crash prints the line it happened on: short lines, not a whole module on one
    lineLimit: 160
  } satisfies Parameters<typeof esbuild.build>[0]
  const result = await esbuild.build({ ...options, entryPoints: entryPoints(), outdir: OUT_DIR })
  // the fast path: the client verbs again, with oclif's module replaced by the few parts they use
  const fastOut = join(OUT_DIR, FAST_DIR)
  const fastEntries = fastEntryPoints()
  const fast = await esbuild.build({ ...options, entryPoints: fastEntries, outdir: fastOut, alias: { '@oclif/core': './src/cli/lite-oclif.ts' } })
  const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as Parameters<typeof fastIndex>[0]
  writeFileSync(join(fastOut, 'verbs.json'), JSON.stringify(fastIndex(manifest, Object.keys(fastEntries))))
  writeFileSync(join(OUT_DIR, 'meta.json'), JSON.stringify(result.metafile))
  writeFileSync(join(fastOut, 'meta.json'), JSON.stringify(fast.metafile))
  writeFileSync(join(OUT_DIR, 'THIRD-PARTY-LICENSES.txt'), thirdPartyLicenses(Object.keys(result.metafile.inputs)))
  const { checkBundle } = await import('./bundle-check.js')
  const problems = [
    ...checkBundle(OUT_DIR, result.metafile, { external: EXTERNAL, nodeCommands: NODE_COMMANDS }),
    ...checkBundle(fastOut, fast.metafile, { external: EXTERNAL, clientForbidden: ['@oclif/core'] }).map((p) => `${FAST_DIR}/: ${p}`)
  ]
  if (problems.length > 0) throw new Error(`bundle check failed:\n- ${problems.join('\n- ')}`)
}

/**
 * The licence texts of the packages the bundle holds code of (their LICENSE files, or the licence
 * their package.json names where they ship none), one section per package and version.
 */
export function thirdPartyLicenses (inputs: string[]): string {
  const dirs = new Set<string>()
  for (const input of inputs) {
    const i = input.lastIndexOf('node_modules/')
    if (i === -1) continue
    const parts = input.slice(i + 'node_modules/'.length).split('/')
    dirs.add(input.slice(0, i + 'node_modules/'.length) + parts.slice(0, parts[0].startsWith('@') ? 2 : 1).join('/'))
  }
  const sections: string[] = []
  for (const dir of [...dirs].sort()) {
    const abs = join(ROOT, dir)
    let pkg: { name?: string, version?: string, license?: string }
    try { pkg = JSON.parse(readFileSync(join(abs, 'package.json'), 'utf8')) as typeof pkg } catch { continue }
    const file = existsSync(abs) ? readdirSync(abs).find((f) => /^(licen[cs]e|copying)(\.|$)/i.test(f)) : undefined
    const text = file !== undefined ? readFileSync(join(abs, file), 'utf8').trim() : `License: ${pkg.license ?? 'see the package'}`
    sections.push(`${pkg.name ?? dir}@${pkg.version ?? '?'}\n\n${text}`)
  }
  return `Packages whose code is included in this bundle, with their licences.\n\n${sections.join('\n\n' + '-'.repeat(72) + '\n\n')}\n`
}

if (process.argv[1] !== undefined && relative(process.argv[1], fileURLToPath(import.meta.url)) === '') {
  await bundle()
}
