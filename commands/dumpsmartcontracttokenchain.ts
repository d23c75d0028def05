import { BaseCommand } from '../src/cli/base-command.js'

export default class DumpSmartContractTokenChain extends BaseCommand {
  static override summary = "Print a smart contract's chain, oldest block first: one line per block with its id, transaction type, transaction id, initiator, epoch, input and state"
  static override examples = ['<%= config.bin %> dumpsmartcontracttokenchain -sct Qm...', '<%= config.bin %> dumpsmartcontracttokenchain -sct Qm... --json']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    this.finish(await this.client().call('scChain', { params: { contract_id: sct } }), (blocks) => blocks.map((b) =>
      [b.block_id, b.transaction_type, b.transactionId || '-', b.initiator || '-', b.epoch, JSON.stringify(b.data), JSON.stringify(b.state)].join(' ')).join('\n'))
  }
}
