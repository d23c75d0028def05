import { BaseCommand } from '../src/cli/base-command.js'

export default class GetAllBootstrap extends BaseCommand {
  static override summary = 'List bootstrap peers, one per line on stdout'
  static override examples = ['<%= config.bin %> getallbootstrap', '<%= config.bin %> getallbootstrap -port 20001 --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('bootstrapList'), (r) => r.peers.join('\n'))
  }
}
