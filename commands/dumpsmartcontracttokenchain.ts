import { BaseCommand } from '../src/cli/base-command.js'
import { wholeChainWithMaps, writeReferenceDump } from '../src/cli/chain-dump.js'

export default class DumpSmartContractTokenChain extends BaseCommand {
  static override summary = "Print a smart contract's chain, oldest block first: one line per block with its id, transaction type, transaction id, initiator, epoch, input and state; as the reference, also write the blocks to dump.json in the current directory"
  static override examples = ['<%= config.bin %> dumpsmartcontracttokenchain -sct Qm...', '<%= config.bin %> dumpsmartcontracttokenchain -sct Qm... --json']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    const client = this.client()
    const env = await client.call('scChain', { params: { contract_id: sct } })
    const file = await writeReferenceDump('dump.json', (await wholeChainWithMaps(client, sct)).result!)
    this.finish(env, (blocks) => blocks.map((b) =>
      [b.block_id, b.transaction_type, b.transactionId || '-', b.initiator || '-', b.epoch, JSON.stringify(b.data), JSON.stringify(b.state)].join(' ')).join('\n'))
    if (!this.flags.json) this.info(`smart contract token chain dumped successfully: ${env.result?.length ?? 0} block(s) written to ${file}`)
  }
}
