import { BaseCommand } from '../src/cli/base-command.js'
import { wholeChainWithMaps, writeReferenceDump } from '../src/cli/chain-dump.js'

export default class DumpNftTokenChain extends BaseCommand {
  static override summary = "Print an NFT's chain, oldest block first: one line per block with its id, transaction type, transaction id, initiator, owner, value, epoch and data; as the reference, also write the blocks to nft.json in the current directory"
  static override examples = ['<%= config.bin %> dump-nft-tokenchain -nft Qm...', '<%= config.bin %> dump-nft-tokenchain -nft Qm... --json']

  async run (): Promise<void> {
    const nft = this.requireFlag('nft', 'the NFT id')
    const client = this.client()
    const env = await client.call('nftChain', { params: { nft_id: nft } })
    const file = await writeReferenceDump('nft.json', (await wholeChainWithMaps(client, nft)).result!)
    this.finish(env, (blocks) => blocks.map((b) =>
      [b.block_id, b.transaction_type, b.transactionId || '-', b.initiator || '-', b.owner, b.value, b.epoch, JSON.stringify(b.data)].join(' ')).join('\n'))
    if (!this.flags.json) this.info(`NFT token chain dumped successfully: ${env.result?.length ?? 0} block(s) written to ${file}`)
  }
}
