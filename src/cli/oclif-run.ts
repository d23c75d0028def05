/**
 * oclif's side of the command line, loaded by src/cli/main.ts only when the fast path leaves a
 * call to it: the whole of `@oclif/core` comes in here.
 */
import { execute, handle } from '@oclif/core'

/** oclif runs the command `args` name in the package `root` (its configuration, manifest, help). */
export async function runOclif (root: string, args: string[]): Promise<void> {
  await execute({ dir: root, args })
}

/** oclif's handler of an error that ended a command (prints it, exits with its code). */
export async function handleError (err: Error): Promise<void> {
  await handle(err)
}
