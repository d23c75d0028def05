import { BaseCommand } from '../src/cli/base-command.js'

export default class RemoveAllBootstrap extends BaseCommand {
  static override summary = 'Remove all bootstrap peers'
  static override examples = ['<%= config.bin %> removeallbootstrap -port 20001']

  async run (): Promise<void> {
    this.finish(await this.client().call('bootstrapRemoveAll'))
  }
}
