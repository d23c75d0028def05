/**
 * Stack traces that name the TypeScript files of the bundle (dist/bundle), read from its source
 * maps when a stack is first formatted.
 *
 * Node's own source map support (`--enable-source-maps`, `process.setSourceMapsEnabled`) reads and
 * parses the map of every module as it loads, and scans each module's text for the map's comment:
 * about 60-75 ms of a node's start on Node 20 (decision 0019), for traces that most runs never
 * print. Here a module's map is read the first time a frame of that module is formatted; a frame
 * elsewhere (Node's own modules, native addons, files outside the bundle) is left as V8 writes it.
 * With Node's support turned on (NODE_OPTIONS=--enable-source-maps), this installs nothing.
 */
import { readFileSync } from 'node:fs'
import { SourceMap } from 'node:module'
import { fileURLToPath, pathToFileURL } from 'node:url'

type Entry = { originalSource?: string, originalLine?: number, originalColumn?: number }

const maps = new Map<string, SourceMap | null>()

/** The map of a file of the bundle (URL or path), read once; null when it has none. */
function mapOf (file: string): SourceMap | null {
  let m = maps.get(file)
  if (m !== undefined) return m
  m = null
  try {
    const path = file.startsWith('file:') ? fileURLToPath(file) : file
    m = new SourceMap(JSON.parse(readFileSync(`${path}.map`, 'utf8')) as ConstructorParameters<typeof SourceMap>[0])
  } catch { /* no map: the frame stays as it is */ }
  maps.set(file, m)
  return m
}

/** `file:line:column` of the source a position of a bundle file comes from, or undefined. */
export function originalPosition (file: string, line: number, column: number): string | undefined {
  const m = mapOf(file)
  if (m === null) return undefined
  const e = m.findEntry(line - 1, column - 1) as Entry
  if (e.originalSource === undefined || e.originalLine === undefined || e.originalColumn === undefined) return undefined
  const base = file.startsWith('file:') ? file : pathToFileURL(file).href
  const source = fileURLToPath(new URL(e.originalSource, base))
  return `${source}:${e.originalLine + 1}:${e.originalColumn + 1}`
}

function frameText (frame: NodeJS.CallSite, bundleDir: string): string {
  const text = String(frame)
  const file = frame.getFileName() ?? undefined
  const line = frame.getLineNumber()
  const column = frame.getColumnNumber()
  if (file === undefined || line === null || column === null) return text
  const path = file.startsWith('file:') ? fileURLToPath(file) : file
  if (!path.startsWith(bundleDir)) return text
  const at = `${file}:${line}:${column}`
  const original = originalPosition(file, line, column)
  return original === undefined ? text : text.replace(at, original)
}

/**
 * Formats stack traces with the bundle's source maps, for frames in files under `bundleDir` (a path
 * ending in a separator). Returns whether it was installed.
 */
export function installBundleStackTraces (bundleDir: string): boolean {
  if ((process as { sourceMapsEnabled?: boolean }).sourceMapsEnabled === true) return false
  Error.prepareStackTrace = (error: Error, frames: NodeJS.CallSite[]): string => {
    let header: string
    try { header = Error.prototype.toString.call(error) } catch { header = '<error>' }
    let out = header
    for (const f of frames) {
      let t: string
      try { t = frameText(f, bundleDir) } catch { t = String(f) }
      out += `\n    at ${t}`
    }
    return out
  }
  return true
}
