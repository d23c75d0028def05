import { readFileSync } from 'node:fs'
import { parseFlagsFast, type FlagDef } from './fast-flags.js'

/**
 * The fast path of the client verbs (docs/decisions/0019-bundle.md): a verb that only sends
 * requests to a node runs without oclif's configuration (its package.json, the 1.7 MB manifest)
 * and without oclif's code. The build writes these verbs a second time into dist/bundle/fast/ with
 * `@oclif/core` replaced by src/cli/lite-oclif.ts, and an index of their names and aliases
 * (fast/verbs.json). A verb found there whose arguments parse plainly (src/cli/fast-flags.ts) runs
 * from there; anything else (help, `run`, `testnet`, a usage error to explain) is oclif's.
 */

/** The file the build writes beside the fast verbs: verb or alias → its file under fast/. */
export const FAST_INDEX = 'verbs.json'

interface VerbClass {
  id?: string
  flags?: Record<string, FlagDef>
  baseFlags?: Record<string, FlagDef>
  run: (argv: string[], config: unknown) => Promise<unknown>
}

export interface FastVerb {
  /** the verb's id (an alias is resolved to it) */
  id: string
  /** runs it as oclif's Command.run would: an exit code comes as a thrown error with `oclif.exit` */
  run: () => Promise<unknown>
}

const indexes = new Map<string, Record<string, string> | null>()

function readIndex (fastDir: URL): Record<string, string> | null {
  let index = indexes.get(fastDir.href)
  if (index === undefined) {
    try { index = JSON.parse(readFileSync(new URL(FAST_INDEX, fastDir), 'utf8')) as Record<string, string> } catch { index = null }
    indexes.set(fastDir.href, index)
  }
  return index
}

/**
 * The verb `argv` names, ready to run on the fast path, or undefined when oclif must handle the
 * call. `fastDir` is the folder of the fast verbs (dist/bundle/fast/, ending in a slash).
 */
export async function fastVerb (fastDir: URL, argv: readonly string[]): Promise<FastVerb | undefined> {
  const [verb, ...args] = argv
  if (verb === undefined) return undefined
  const index = readIndex(fastDir)
  const file = index !== null && Object.hasOwn(index, verb) ? index[verb] : undefined
  if (file === undefined) return undefined
  const Verb = (await import(new URL(file, fastDir).href) as { default: VerbClass }).default
  if (await parseFlagsFast(args, { ...Verb.baseFlags, ...Verb.flags }) === undefined) return undefined
  const id = /^commands\/(.+)\.js$/.exec(file)?.[1] ?? verb
  Verb.id = id
  return { id, run: async () => await Verb.run(args, { bin: 'rbtnode' }) }
}

/**
 * Runs `argv` on the fast path, exiting as oclif's error handler does (an exit code ends the
 * process at once; another error goes to oclif's handler). False when oclif must handle it.
 */
export async function runFast (fastDir: URL, argv: readonly string[]): Promise<boolean> {
  const verb = await fastVerb(fastDir, argv)
  if (verb === undefined) return false
  try {
    await verb.run()
  } catch (e) {
    const exit = (e as { code?: unknown, oclif?: { exit?: unknown } })
    if (exit.code === 'EEXIT' && typeof exit.oclif?.exit === 'number') process.exit(exit.oclif.exit)
    const { handleError } = await import('./oclif-run.js')
    await handleError(e as Error)
  }
  return true
}
