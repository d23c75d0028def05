import { BaseCommand } from '../src/cli/base-command.js'

export default class FetchNft extends BaseCommand {
  static override summary = "Download an NFT's metadata and artifact from the network into the node's NFT folder, verified against the id"
  static override examples = ['<%= config.bin %> fetch-nft -nft Qm...', '<%= config.bin %> fetch-nft -nft Qm... -port 20002']

  async run (): Promise<void> {
    const nft = this.requireFlag('nft', 'the NFT id to fetch')
    const env = await this.client().call('nftFetch', { query: { nft } })
    this.finish(env, (r) => r.path)
    if (!this.flags.json) this.info(`NFT ${nft} files in ${env.result?.path ?? ''}`)
  }
}
