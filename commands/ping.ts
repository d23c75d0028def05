import { BaseCommand } from '../src/cli/base-command.js'

export default class Ping extends BaseCommand {
  static override summary = 'Ping a peer through the node (a real libp2p round trip)'
  static override examples = ['<%= config.bin %> ping -peerID 12D3KooW...']

  async run (): Promise<void> {
    const peerID = this.requireFlag('peerID', 'the peer id to ping')
    const env = await this.client().call('nodePing', { query: { peerID } })
    this.finish(env, (r) => `${r.peerID} ${r.rtt_ms.toFixed(2)} ms`)
  }
}
