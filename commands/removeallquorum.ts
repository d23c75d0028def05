import { BaseCommand } from '../src/cli/base-command.js'

export default class RemoveAllQuorum extends BaseCommand {
  static override summary = 'Remove all quorums from the node'
  static override examples = ['<%= config.bin %> removeallquorum -port 20001']

  async run (): Promise<void> {
    this.finish(await this.client().call('quorumsRemoveAll'))
  }
}
