import { BaseCommand } from '../src/cli/base-command.js'
import { nftTransaction, nftValueFrom } from '../src/cli/nft-tx.js'

export default class DeployNft extends BaseCommand {
  static override summary = "Deploy a created NFT through quorum consensus: starts its chain with the value and optional data"
  static override examples = [
    '<%= config.bin %> deploy-nft -deployerAddr bafybmi... -nft Qm... -nftValue 1',
    '<%= config.bin %> deploy-nft -deployerAddr bafybmi... -nft Qm... -nftValue 0.5 -nftData "first edition" -fp'
  ]

  async run (): Promise<void> {
    const deployer = this.requireFlag('deployerAddr', 'the DID that created the NFT')
    const nftId = this.requireFlag('nft', 'the NFT id from create-nft')
    const value = nftValueFrom(this.flags)
    const env = await nftTransaction(this.client(), this.flags, {
      initiator: deployer, owner: deployer, nftId, value, data: this.flags.nftData ?? '', transfer: false, memo: this.flags.transComment ?? ''
    })
    const txid = env.result?.transactionID ?? ''
    this.finish(env, () => txid)
    if (!this.flags.json) this.info(`NFT ${nftId} deployed by ${deployer}, transaction ${txid}`)
  }
}
