import { BaseCommand } from '../src/cli/base-command.js'

export default class GetByNode extends BaseCommand {
  static override summary = 'Transactions sent and received by each DID hosted on the node: DID, sent, received, one per line'
  static override examples = ['<%= config.bin %> get-by-node']

  async run (): Promise<void> {
    this.finish(await this.client().call('nodeTxCounts'), (list) => list.map((c) => `${c.DID} ${c.TxnSend} ${c.TxnReceived}`).join('\n'))
  }
}
