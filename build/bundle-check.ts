/**
 * Checks the bundle esbuild wrote (build/bundle.ts runs it; a failure fails `npm run build`):
 * - no package that must stay external (EXTERNAL: native addons, files read by path) was copied in;
 * - the JavaScript stays under a stated size (MAX_BUNDLE_BYTES): growth past it is a dependency
 *   pulled in by mistake, or a limit to raise on purpose in the same commit;
 * - every `new URL('./….js', import.meta.url)` in it (worker threads) names a file of the bundle;
 * - a client verb's static imports reach no libp2p, server, storage or domain package (and, in the
 *   fast path's build, no package of `clientForbidden`: oclif there).
 */
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'

/** The bundle's JavaScript (not the maps) may not grow past this: 5.2 MB when it was set, so about half as much again. */
export const MAX_BUNDLE_BYTES = 8 * 1024 * 1024

/** The parts of esbuild's metafile read here. */
export interface Metafile {
  inputs: Record<string, unknown>
  outputs: Record<string, { imports: Array<{ path: string, kind: string, external?: boolean }>, inputs: Record<string, unknown>, entryPoint?: string }>
}

export interface CheckOptions {
  external: readonly string[]
  maxBytes?: number
  /** commands that start a node (their closure may hold it all) */
  nodeCommands?: readonly string[]
  /** packages a client verb's static imports may not reach either */
  clientForbidden?: readonly string[]
}

const CLIENT_FORBIDDEN = /(^|\/)node_modules\/(libp2p|@libp2p\/|@chainsafe\/|hono|@hono\/|classic-level|lowdb|@noble\/|pngjs|prom-client)/
const CLIENT_FORBIDDEN_DIRS = ['src/api/server/', 'src/node/', 'src/p2p/', 'src/storage/', 'src/consensus/', 'src/wallet/', 'src/tokenchain/', 'src/tokens/', 'src/token-files/', 'src/contracts/']

/** The package a metafile input belongs to (`node_modules/@a/b/x.js` → `@a/b`), if any. */
export function packageOf (input: string): string | undefined {
  const i = input.lastIndexOf('node_modules/')
  if (i === -1) return undefined
  const parts = input.slice(i + 'node_modules/'.length).split('/')
  return parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0]
}

function jsFiles (dir: string): string[] {
  return (readdirSync(dir, { recursive: true }) as string[]).filter((f) => f.endsWith('.js')).map((f) => join(dir, f))
}

/** Output paths statically reachable from `start` (dynamic imports load later, on first use). */
function staticClosure (meta: Metafile, start: string): Set<string> {
  const seen = new Set<string>()
  const todo = [start]
  while (todo.length > 0) {
    const o = todo.pop()!
    if (seen.has(o) || meta.outputs[o] === undefined) continue
    seen.add(o)
    for (const imp of meta.outputs[o].imports) if (imp.kind === 'import-statement' && imp.external !== true) todo.push(imp.path)
  }
  return seen
}

/** Problems found in the bundle in `outDir` built with `meta`; none when it is fine. */
export function checkBundle (outDir: string, meta: Metafile, opts: CheckOptions): string[] {
  const problems: string[] = []
  const external = new Set(opts.external)
  const bundled = new Set<string>()
  for (const input of Object.keys(meta.inputs)) {
    const pkg = packageOf(input)
    if (pkg !== undefined && external.has(pkg)) bundled.add(pkg)
  }
  for (const pkg of bundled) problems.push(`${pkg} must stay external but was bundled`)

  const files = jsFiles(outDir)
  const bytes = files.reduce((n, f) => n + statSync(f).size, 0)
  const max = opts.maxBytes ?? MAX_BUNDLE_BYTES
  if (bytes > max) problems.push(`the bundle's JavaScript is ${bytes} bytes, over the limit of ${max} (MAX_BUNDLE_BYTES in build/bundle-check.ts)`)

  for (const f of files) {
    const text = readFileSync(f, 'utf8')
    for (const m of text.matchAll(/new URL\(\s*["'](\.{1,2}\/[^"']+\.js)["']\s*,\s*import\.meta\.url\s*\)/g)) {
      if (!existsSync(resolve(dirname(f), m[1]))) problems.push(`${f.slice(outDir.length + 1)} refers to ${m[1]}, which is not in the bundle beside it`)
    }
  }

  const nodeCommands = new Set(opts.nodeCommands ?? [])
  const forbidden = new Set(opts.clientForbidden ?? [])
  for (const [out, o] of Object.entries(meta.outputs)) {
    const m = o.entryPoint !== undefined ? /^commands\/(.+)\.ts$/.exec(o.entryPoint) : null
    if (m === null || nodeCommands.has(m[1])) continue
    for (const part of staticClosure(meta, out)) {
      for (const input of Object.keys(meta.outputs[part].inputs)) {
        const pkg = packageOf(input)
        if (CLIENT_FORBIDDEN.test(input) || CLIENT_FORBIDDEN_DIRS.some((d) => input.startsWith(d)) || (pkg !== undefined && forbidden.has(pkg))) {
          problems.push(`the client verb ${m[1]} loads ${input} at start (make it a dynamic import)`)
          break
        }
      }
    }
  }
  return problems
}
