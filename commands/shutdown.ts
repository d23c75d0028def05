import { BaseCommand } from '../src/cli/base-command.js'

export default class Shutdown extends BaseCommand {
  static override summary = 'Shut the node down gracefully'
  static override examples = ['<%= config.bin %> shutdown -port 20001']

  async run (): Promise<void> {
    this.finish(await this.client().call('nodeShutdown'))
  }
}
