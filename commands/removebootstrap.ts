import { BaseCommand } from '../src/cli/base-command.js'
import { splitList } from '../src/cli/parse.js'

export default class RemoveBootstrap extends BaseCommand {
  static override summary = 'Remove bootstrap peers'
  static override examples = ['<%= config.bin %> removebootstrap -peers /ip4/127.0.0.1/tcp/4003/p2p/12D3KooW...']

  async run (): Promise<void> {
    const peers = splitList(this.requireFlag('peers', 'comma-separated multiaddresses'))
    const env = await this.client().call('bootstrapRemove', { body: { peers } })
    this.finish(env)
  }
}
