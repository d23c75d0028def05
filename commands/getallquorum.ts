import { BaseCommand } from '../src/cli/base-command.js'

export default class GetAllQuorum extends BaseCommand {
  static override summary = 'List the configured quorums, one DID per line on stdout'
  static override examples = ['<%= config.bin %> getallquorum -port 20001']

  async run (): Promise<void> {
    this.finish(await this.client().call('quorumsList'), (r) => r.join('\n'))
  }
}
