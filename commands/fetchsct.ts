import { BaseCommand } from '../src/cli/base-command.js'

export default class FetchSct extends BaseCommand {
  static override summary = "Download a smart contract's files from the network into the node's contract folder, verified against the id; prints the folder"
  static override examples = ['<%= config.bin %> fetchsct -sct Qm...']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    this.finish(await this.client().call('scFetch', { query: { smartContractToken: sct } }), (r) => r.path)
  }
}
