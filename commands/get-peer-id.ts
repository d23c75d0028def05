import { BaseCommand } from '../src/cli/base-command.js'

export default class GetPeerId extends BaseCommand {
  static override summary = "Print the node's peer id (only the id on stdout)"
  static override examples = ['<%= config.bin %> get-peer-id -port 20001']

  async run (): Promise<void> {
    const env = await this.client().call('nodePeerId')
    if (this.flags.json) { this.finish(env); return }
    this.print(env.result ?? env.message)
  }
}
