import { Help } from '@oclif/core'
import { groupCommands } from './help-groups.js'

/**
 * Root help grouped by what an operator does (src/cli/help-groups.ts), `testnet` first; verbs
 * marked hidden (those this node does not do) are left out of the list but stay accepted.
 */
export default class GroupedHelp extends Help {
  protected override async showRootHelp (): Promise<void> {
    this.log(this.formatRoot())
    this.log('')
    // aliases (listed under their command's name) and help itself are not verbs of their own
    const commands = this.sortedCommands.filter((c) => c.id !== '' && c.id !== 'help' && !(c.aliases ?? []).includes(c.id))
    for (const g of groupCommands(commands)) {
      this.log(this.section(g.title, this.renderList(g.commands.map((c) => [c.id.replaceAll(':', ' '), this.summary(c) ?? '']), { indentation: 2, multiline: false, stripAnsi: this.opts.stripAnsi })))
      this.log('')
    }
    this.log(`Run \`${this.config.bin} help COMMAND\` for a command's flags and examples. The reference's verbs this node does not do are not listed; they are still accepted and answer with the alternative.`)
  }
}
