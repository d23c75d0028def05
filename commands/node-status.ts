import { BaseCommand } from '../src/cli/base-command.js'
import type { ResultOf } from '../src/api/contract/routes.js'

export default class NodeStatusCommand extends BaseCommand {
  static override summary = 'Whether the node is up: core, peer id, listen addresses, connected peers'
  static override examples = ['<%= config.bin %> node-status', '<%= config.bin %> node-status -port 20001 --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('nodeStatus'), render)
  }
}

function render (s: ResultOf<'nodeStatus'>): string {
  return [
    `version          ${s.version}`,
    `core started     ${String(s.core_started)}`,
    `peer id          ${s.peer_id ?? '-'}`,
    `listen           ${s.listen.join(' ') || '-'}`,
    `connected peers  ${s.connected_peers}`,
    `test network     ${String(s.test_net)}`
  ].join('\n')
}
