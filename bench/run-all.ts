import '../src/util/polyfill.js'
import { readdirSync } from 'node:fs'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { dirname, join } from 'node:path'

/**
 * Runs every bench/*.bench.ts (compiled) and prints its figures.
 * `npm run bench` runs all; `npm run bench -- node wallet` runs the named ones.
 */
const here = dirname(fileURLToPath(import.meta.url))
const only = process.argv.slice(2)
const files = readdirSync(here).filter((f) => f.endsWith('.bench.js')).sort()
  .filter((f) => only.length === 0 || only.includes(f.replace(/\.bench\.js$/, '')))

let failed = false
for (const f of files) {
  const name = f.replace(/\.bench\.js$/, '')
  process.stdout.write(`\n== ${name}\n`)
  try {
    const mod = await import(pathToFileURL(join(here, f)).href) as { run: () => Promise<Record<string, string | number>> }
    const figures = await mod.run()
    const width = Math.max(...Object.keys(figures).map((k) => k.length))
    for (const [k, v] of Object.entries(figures)) process.stdout.write(`  ${k.padEnd(width)}  ${String(v)}\n`)
  } catch (e) {
    failed = true
    process.stdout.write(`  FAILED: ${(e as Error).stack ?? String(e)}\n`)
  }
}
process.exit(failed ? 1 : 0)
