import { BaseCommand } from '../src/cli/base-command.js'

export default class GetAllDid extends BaseCommand {
  static override summary = 'List the DIDs hosted on the node, one per line'
  static override examples = ['<%= config.bin %> getalldid']

  async run (): Promise<void> {
    const env = await this.client().call('didList')
    this.finish(env, (dids) => dids.join('\n'))
  }
}
