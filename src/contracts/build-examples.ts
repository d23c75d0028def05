/**
 * Compiles the example contracts (examples/contracts/<name>/<name>.wat, WebAssembly text) to
 * dist/examples/contracts/<name>/<name>.wasm. A contract's ";; @runtime" line is replaced by the
 * shared examples/contracts/runtime.wat. Run by `npm run build`; tests call `exampleContract`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The package root (this file runs from dist/src/contracts/). */
export const PACKAGE_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..', '..')
const SOURCES = join(PACKAGE_ROOT, 'examples', 'contracts')
export const EXAMPLES_OUT = join(PACKAGE_ROOT, 'dist', 'examples', 'contracts')

/** WebAssembly text to binary (the wabt package is a build-time dependency only). */
export async function compileWat (name: string, text: string): Promise<Uint8Array> {
  const wabt = (await import('wabt')).default
  const w = await wabt()
  const mod = w.parseWat(`${name}.wat`, text, { bulk_memory: true })
  try {
    mod.validate()
    return new Uint8Array(mod.toBinary({ log: false, write_debug_names: false }).buffer)
  } finally { mod.destroy() }
}

export function exampleNames (): string[] {
  return readdirSync(SOURCES, { withFileTypes: true }).filter((d) => d.isDirectory() && existsSync(join(SOURCES, d.name, `${d.name}.wat`))).map((d) => d.name).sort()
}

/** Source text of an example with the runtime inserted. */
export function exampleSource (name: string): string {
  const runtime = readFileSync(join(SOURCES, 'runtime.wat'), 'utf8')
  return readFileSync(join(SOURCES, name, `${name}.wat`), 'utf8').replace(';; @runtime', runtime)
}

/** Builds every example; returns the written paths. */
export async function buildExampleContracts (): Promise<string[]> {
  const out: string[] = []
  for (const name of exampleNames()) {
    const dir = join(EXAMPLES_OUT, name)
    mkdirSync(dir, { recursive: true })
    const file = join(dir, `${name}.wasm`)
    writeFileSync(file, await compileWat(name, exampleSource(name)))
    out.push(file)
  }
  return out
}

/** Path of a built example, building the examples first when it is missing. */
export async function exampleContract (name: string): Promise<{ wasm: string, source: string }> {
  const wasm = join(EXAMPLES_OUT, name, `${name}.wasm`)
  if (!existsSync(wasm)) await buildExampleContracts()
  return { wasm, source: join(SOURCES, name, `${name}.wat`) }
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const files = await buildExampleContracts()
  for (const f of files) process.stdout.write(`built ${f}\n`)
}
