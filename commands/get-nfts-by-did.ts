import { BaseCommand } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'

export default class GetNftsByDid extends BaseCommand {
  static override summary = 'List the NFTs a DID holds: one line per NFT with its id and value'
  static override examples = ['<%= config.bin %> get-nfts-by-did -did bafybmi...']

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID whose NFTs to list'), 'did')
    this.finish(await this.client().call('didBalancesNft', { params: { did } }), (nfts) => nfts.map((n) => `${n.nft_id} ${n.value}`).join('\n'))
  }
}
