import { BaseCommand } from '../src/cli/base-command.js'

export default class GetAllNft extends BaseCommand {
  static override summary = 'List the NFTs this node knows: one line per NFT with its id, owner, value and status'
  static override examples = ['<%= config.bin %> getallnft', '<%= config.bin %> getallnft --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('nftsList'), (nfts) => nfts.map((n) => `${n.nft_id} ${n.owner} ${n.value} ${n.status}`).join('\n'))
  }
}
