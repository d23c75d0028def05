/**
 * The command line's main (bin/run.js loads it from the bundle once the compile cache is on): the
 * polyfill before anything that loads libp2p; then a client verb with plain arguments takes the
 * fast path (src/cli/fast-path.ts), without oclif, and anything else goes to oclif, with the
 * reference's help spellings.
 */
import '../util/polyfill.js'
import { sep } from 'node:path'
import { pathToFileURL } from 'node:url'
import { helpArgv } from './go-flags.js'
import { runFast } from './fast-path.js'

/**
 * Runs the command the arguments name; `root` is the package's root (where package.json is), or
 * the file URL of a file one folder below it, as bin/run.js passes its own.
 */
export async function main (root: string, argv: string[]): Promise<void> {
  const args = helpArgv(argv)
  if (await runFast(fastDir(root), args)) return
  const { runOclif } = await import('./oclif-run.js')
  await runOclif(root, args)
}

/** dist/bundle/fast/ of the package `root` names (see main). */
export function fastDir (root: string): URL {
  const url = root.startsWith('file:') ? new URL(root) : pathToFileURL(root.endsWith(sep) ? root : root + sep)
  return new URL(url.pathname.endsWith('/') ? 'dist/bundle/fast/' : '../dist/bundle/fast/', url)
}
