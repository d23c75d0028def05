/**
 * A V8 code cache for the CommonJS modules a process loads (oclif and its dependencies are
 * CommonJS). Node 20 compiles every such module from source on every start; a client verb spends
 * a third of its CPU there. With this cache, a module whose source is unchanged is deserialised
 * from code V8 produced in an earlier process, including the functions that ran there.
 *
 * One file per Node version and architecture holds all entries, keyed by file name and a SHA-1 of
 * the source (V8 itself only checks the source's length). It is read once, when the first CommonJS
 * module is compiled, and written (to a temporary file, then renamed) at exit when a module was new
 * or its cached code was rejected. The directory is private to the user (0700): cached code is
 * executed as is.
 * `RBTNODE_COMPILE_CACHE=0` turns it off; `RBTNODE_COMPILE_CACHE=<dir>` puts it elsewhere.
 * Node 22.1 and later have a compile cache of their own that covers ES modules too: there it is
 * used instead, in `<dir>/node` (`RBTNODE_COMPILE_CACHE_OWN=1` keeps this module's, for its tests).
 * Anything that goes wrong leaves the process compiling from source as before.
 */
import Module from 'node:module'
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, statSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import vm from 'node:vm'
import { writeFileDurableSync } from './durable-write.js'

/** Entries beyond this total size are dropped at the next write, oldest (not used this run) first. */
const MAX_BYTES = 24 * 1024 * 1024

interface ModuleInternals {
  exports: unknown
  require: (id: string) => unknown
  _compile: (content: string, filename: string, format?: string) => unknown
}
interface ModuleStatics {
  prototype: ModuleInternals
  wrap: (src: string) => string
  _resolveFilename: (request: string, parent: unknown, isMain: boolean, options?: unknown) => string
  _resolveLookupPaths: (request: string, parent: unknown) => string[] | null
  _extensions: unknown
  _cache: unknown
}

let enabled = false
const DYNAMIC_IMPORT = /\bimport\s*\(/

/** The directory the cache lives in, or undefined when it is turned off. */
export function compileCacheDir (env: NodeJS.ProcessEnv = process.env): string | undefined {
  const v = env.RBTNODE_COMPILE_CACHE
  if (v === '0' || v === 'off' || v === 'false') return undefined
  if (v !== undefined && v !== '') return v
  const xdg = env.XDG_CACHE_HOME
  const home = homedir()
  if (xdg !== undefined && xdg !== '') return join(xdg, 'rbtnode')
  if (home !== '') return join(home, '.cache', 'rbtnode')
  return join(tmpdir(), `rbtnode-cache-${process.getuid?.() ?? 'user'}`)
}

/** Reads the entries of a cache file: [u32 index length][JSON [key, length][]][data...]. */
function readEntries (file: string): Map<string, Buffer> {
  const entries = new Map<string, Buffer>()
  let buf: Buffer
  try { buf = readFileSync(file) } catch { return entries }
  try {
    const n = buf.readUInt32LE(0)
    const index = JSON.parse(buf.subarray(4, 4 + n).toString('utf8')) as Array<[string, number]>
    let off = 4 + n
    for (const [key, len] of index) {
      if (typeof key !== 'string' || typeof len !== 'number' || off + len > buf.length) break
      entries.set(key, buf.subarray(off, off + len))
      off += len
    }
  } catch { entries.clear() }
  return entries
}

function writeEntries (file: string, entries: Map<string, Buffer>, used: Set<string>): void {
  // this run's modules first, then older entries while they fit
  const keys = [...used, ...[...entries.keys()].filter((k) => !used.has(k))]
  const index: Array<[string, number]> = []
  const parts: Buffer[] = []
  let total = 0
  for (const k of keys) {
    const b = entries.get(k)
    if (b === undefined || b.length === 0) continue
    if (total + b.length > MAX_BYTES) break
    index.push([k, b.length]); parts.push(b); total += b.length
  }
  const head = Buffer.from(JSON.stringify(index), 'utf8')
  const len = Buffer.alloc(4)
  len.writeUInt32LE(head.length)
  writeFileDurableSync(file, Buffer.concat([len, head, ...parts]), { mode: 0o600 })
}

/** A directory only this user can write (created 0700), or undefined. */
function privateDir (dir: string): boolean {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 })
    const st = statSync(dir)
    const uid = process.getuid?.()
    if (uid !== undefined && st.uid !== uid) return false
    return (st.mode & 0o022) === 0
  } catch { return false }
}

interface NodeCompileCache {
  enableCompileCache?: (dir?: string) => { status: number }
  constants?: { compileCacheStatus?: { ENABLED: number, ALREADY_ENABLED: number } }
}

/**
 * Node's own compile cache (Node 22.1 and later): every module, ES modules as well as CommonJS,
 * from V8 code kept under `dir` (Node checks each entry against the source it was made from).
 * `NODE_DISABLE_COMPILE_CACHE` turns it off as Node documents. Answers whether it is on.
 */
function enableNodeCompileCache (dir: string): boolean {
  const M = Module as unknown as NodeCompileCache
  if (typeof M.enableCompileCache !== 'function') return false
  try {
    const status = M.enableCompileCache(join(dir, 'node')).status
    const known = M.constants?.compileCacheStatus
    return known !== undefined && (status === known.ENABLED || status === known.ALREADY_ENABLED)
  } catch { return false }
}

/**
 * Installs the cache for every module compiled from now on (call it before loading oclif): Node's
 * own where it has one (22.1 and later: ES modules too), else this module's, CommonJS only.
 * Returns whether it is on. Calling it twice does nothing more.
 */
export function enableCompileCache (env: NodeJS.ProcessEnv = process.env): boolean {
  if (enabled) return true
  const dir = compileCacheDir(env)
  if (dir === undefined || !privateDir(dir)) return false
  if (env.RBTNODE_COMPILE_CACHE_OWN !== '1' && enableNodeCompileCache(dir)) { enabled = true; return true }
  const M = Module as unknown as ModuleStatics
  const file = join(dir, `cjs-${process.version}-${process.arch}.bin`)
  // read at the first CommonJS module compiled: a process that loads none (a client verb on the
  // fast path loads only the bundle's ES modules) does not read the file at all
  let entries: Map<string, Buffer> | undefined
  const cache = (): Map<string, Buffer> => (entries ??= readEntries(file))
  const used = new Set<string>()
  const fresh: Array<[string, vm.Script]> = []
  const original = M.prototype._compile
  enabled = true

  M.prototype._compile = function compileCached (this: ModuleInternals, content: string, filename: string, format?: string): unknown {
    // import() needs a callback that Node 20 loses on code read from a cache: such modules (oclif's
    // module loader, a few others) compile from source as before
    if ((format !== undefined && format !== 'commonjs') || DYNAMIC_IMPORT.test(content)) return original.call(this, content, filename, format)
    let source = content.charCodeAt(0) === 0xFEFF ? content.slice(1) : content
    // a hashbang line is only valid at the very start of a script: keep the line, drop its text
    if (source.startsWith('#!')) source = '//' + source.slice(2)
    const key = filename + '\0' + createHash('sha1').update(source).digest('base64')
    const cachedData = cache().get(key)
    let script: vm.Script
    try {
      script = new vm.Script(M.wrap(source), { filename, cachedData })
    } catch {
      // a syntax error: let Node report it its own way
      return original.call(this, content, filename, format)
    }
    used.add(key)
    if (cachedData === undefined || script.cachedDataRejected === true) fresh.push([key, script])
    const fn = script.runInThisContext({ displayErrors: true }) as (...a: unknown[]) => unknown
    const mod = this
    const require = Object.assign((id: string): unknown => mod.require(id), {
      resolve: Object.assign(
        (request: string, options?: unknown): string => M._resolveFilename(request, mod, false, options),
        { paths: (request: string) => M._resolveLookupPaths(request, mod) }
      ),
      main: process.mainModule,
      extensions: M._extensions,
      cache: M._cache
    })
    return fn.call(mod.exports, mod.exports, require, mod, filename, dirname(filename))
  }

  process.once('exit', () => {
    if (fresh.length === 0) return
    try {
      // produced now, after the run: the functions that ran are compiled and go in too
      const all = cache()
      for (const [key, script] of fresh) all.set(key, script.createCachedData())
      writeEntries(file, all, used)
    } catch { /* a read-only or full disk: the next start compiles from source */ }
  })
  return true
}
