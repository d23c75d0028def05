import { BaseCommand } from '../src/cli/base-command.js'

export default class SubscribeNft extends BaseCommand {
  static override summary = "Follow an NFT: the node syncs and validates every new state its owner publishes"
  static override examples = ['<%= config.bin %> subscribe-nft -nft Qm...', '<%= config.bin %> subscribe-nft -nft Qm... -port 20002']

  async run (): Promise<void> {
    const nft = this.requireFlag('nft', 'the NFT id to follow')
    this.finish(await this.client().call('nftsSubscribe', { query: { nft } }))
    if (!this.flags.json) this.info(`following NFT ${nft}`)
  }
}
