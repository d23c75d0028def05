/**
 * The command line's main (bin/run.js loads it from the bundle once the compile cache is on): the
 * polyfill before anything that loads libp2p, then oclif with the reference's help spellings.
 */
import '../util/polyfill.js'
import { execute } from '@oclif/core'
import { helpArgv } from './go-flags.js'

/** Runs the command the arguments name; `root` is the package's root (where package.json is). */
export async function main (root: string, argv: string[]): Promise<void> {
  await execute({ dir: root, args: helpArgv(argv) })
}
