import { BaseCommand } from '../src/cli/base-command.js'
import { splitList } from '../src/cli/parse.js'

export default class AddBootstrap extends BaseCommand {
  static override summary = 'Add bootstrap peers (persisted, dialled at once)'
  static override examples = ['<%= config.bin %> addbootstrap -peers /ip4/127.0.0.1/tcp/4003/p2p/12D3KooW...,/ip4/127.0.0.1/tcp/4004/p2p/12D3KooW...']

  async run (): Promise<void> {
    const peers = splitList(this.requireFlag('peers', 'comma-separated multiaddresses'))
    const env = await this.client().call('bootstrapAdd', { body: { peers } })
    this.finish(env)
  }
}
