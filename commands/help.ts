import { Args, Command, Flags, loadHelpClass } from '@oclif/core'

/**
 * `rbtnode help [COMMAND…]`: the help class this package names (src/cli/help.ts) for the root or
 * for one verb. A command of its own, so oclif loads no help plugin (its package and manifest) on
 * every call.
 */
export default class Help extends Command {
  static override summary = 'Show the verbs, or one verb\'s flags and examples'
  static override args = { command: Args.string({ description: 'the verb to explain', required: false }) }
  static override flags = { 'nested-commands': Flags.boolean({ char: 'n', description: 'list topics\' verbs as well' }) }
  // `help testnet status`: the words after help name the verb
  static override strict = false

  async run (): Promise<void> {
    const { argv, flags } = await this.parse(Help)
    const HelpClass = await loadHelpClass(this.config)
    await new HelpClass(this.config, { all: flags['nested-commands'] }).showHelp(argv as string[])
  }
}
