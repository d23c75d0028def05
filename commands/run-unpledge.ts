import { BaseCommand } from '../src/cli/base-command.js'

export default class RunUnpledge extends BaseCommand {
  static override summary = 'Run the quorum unpledge sweep now (pledges whose period ended are released); prints the tokens released'
  static override examples = ['<%= config.bin %> run-unpledge']

  async run (): Promise<void> {
    this.finish(await this.client().call('quorumsRunUnpledge'), (r) => r.tokens.join('\n'))
  }
}
