import { BaseCommand } from '../src/cli/base-command.js'

export default class DumpNftTokenChain extends BaseCommand {
  static override summary = "Print an NFT's chain, oldest block first: one line per block with its id, transaction type, transaction id, initiator, owner, value, epoch and data"
  static override examples = ['<%= config.bin %> dump-nft-tokenchain -nft Qm...', '<%= config.bin %> dump-nft-tokenchain -nft Qm... --json']

  async run (): Promise<void> {
    const nft = this.requireFlag('nft', 'the NFT id')
    this.finish(await this.client().call('nftChain', { params: { nft_id: nft } }), (blocks) => blocks.map((b) =>
      [b.block_id, b.transaction_type, b.transactionId || '-', b.initiator || '-', b.owner, b.value, b.epoch, JSON.stringify(b.data)].join(' ')).join('\n'))
  }
}
