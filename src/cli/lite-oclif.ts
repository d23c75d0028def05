/**
 * What the client verbs take from `@oclif/core`, for the fast path's build only (build/bundle.ts
 * aliases the package to this module in dist/bundle/fast/; the oclif build is untouched). A verb
 * is loaded from there only once its argv parses plainly (src/cli/fast-flags.ts); everything else,
 * help included, goes through oclif itself. The parts kept: flag definitions of the same shape,
 * a command's life (init, run, catch, finally), `exit` as a thrown ExitError, and oclif's
 * swallowing of EPIPE on stdout. An import this module lacks fails the build.
 */
import { parseFlagsFast, type FlagDef } from './fast-flags.js'

process.stdout.on('error', (err: NodeJS.ErrnoException) => {
  if (err.code === 'EPIPE') return
  throw err
})

class CLIError extends Error {
  oclif: { exit: number }
  constructor (message: string, options: { exit?: number } = {}) {
    super(message)
    this.name = 'CLIError'
    this.oclif = { exit: options.exit ?? 2 }
  }
}

class ExitError extends CLIError {
  code = 'EEXIT'
  constructor (exitCode = 1) { super(`EEXIT: ${exitCode}`, { exit: exitCode }) }
}

export const Errors = { CLIError, ExitError }

type FlagOptions = Record<string, unknown>
const identity = async (input: unknown): Promise<unknown> => input

export const Flags = {
  string: (options: FlagOptions = {}): FlagDef => ({ parse: identity, ...options, input: [], multiple: options.multiple === true, type: 'option' }),
  boolean: (options: FlagOptions = {}): FlagDef => ({ parse: identity, ...options, allowNo: options.allowNo === true, type: 'boolean' })
}

export interface CommandClass {
  new (argv: string[], config: unknown): Command
  id?: string
  flags?: Record<string, FlagDef>
  baseFlags?: Record<string, FlagDef>
}

/** The flag set oclif parses a verb with: the shared flags, the verb's own winning. */
export function verbFlags (c: CommandClass): Record<string, FlagDef> { return { ...c.baseFlags, ...c.flags } }

export abstract class Command {
  static id: string | undefined
  static aliases: string[] = []
  static hiddenAliases: string[] = []
  static args = {}
  static strict = true
  static hidden: boolean | undefined
  static summary: string | undefined
  static description: string | undefined
  static examples: string[] | undefined
  static flags: Record<string, FlagDef> | undefined
  static baseFlags: Record<string, FlagDef> | undefined
  id: string | undefined

  constructor (public argv: string[], public config: unknown) {
    this.id = (this.constructor as typeof Command).id
  }

  static async run (this: CommandClass, argv: string[], config: unknown): Promise<unknown> {
    return await new this(argv, config)._run()
  }

  abstract run (): Promise<unknown>

  async _run (): Promise<unknown> {
    let err: Error | undefined
    let result: unknown
    try {
      await this.init()
      result = await this.run()
    } catch (e) {
      err = e as Error
      await this.catch(err)
    } finally {
      await this.finally(err)
    }
    return result
  }

  async init (): Promise<void> {}
  async finally (_err: Error | undefined): Promise<void> {}
  async catch (err: Error & { exitCode?: number }): Promise<unknown> {
    process.exitCode = process.exitCode ?? err.exitCode ?? 1
    throw err
  }

  exit (code = 0): never { throw new ExitError(code) }

  async parse (options: CommandClass = this.constructor as CommandClass, argv: string[] = this.argv): Promise<{ flags: Record<string, unknown>, args: Record<string, unknown>, argv: string[] }> {
    const flags = await parseFlagsFast(argv, verbFlags(options), this)
    // the fast path parsed this argv before it loaded the verb: this cannot happen
    if (flags === undefined) throw new CLIError(`the fast path cannot parse ${argv.join(' ')}`, { exit: 2 })
    return { flags, args: {}, argv: [] }
  }
}
