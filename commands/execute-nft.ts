import { BaseCommand } from '../src/cli/base-command.js'
import { nftTransaction, nftValueFrom } from '../src/cli/nft-tx.js'

export default class ExecuteNft extends BaseCommand {
  static override summary = "Execute a deployed NFT (a new state with data) or, with -receiverAddr, transfer it to another DID"
  static override examples = [
    '<%= config.bin %> execute-nft -executorAddr bafybmi... -nft Qm... -nftValue 1 -nftData "state 2"',
    '<%= config.bin %> execute-nft -executorAddr bafybmi... -receiverAddr bafybmi... -nft Qm... -nftValue 1'
  ]

  async run (): Promise<void> {
    const executor = this.requireFlag('executorAddr', 'the DID that owns the NFT')
    const nftId = this.requireFlag('nft', 'the NFT id')
    const value = nftValueFrom(this.flags)
    const receiver = this.flags.receiverAddr ?? ''
    const transfer = receiver !== '' && receiver !== executor
    const env = await nftTransaction(this.client(), this.flags, {
      initiator: executor, owner: transfer ? receiver : executor, nftId, value, data: this.flags.nftData ?? '', transfer, memo: this.flags.transComment ?? ''
    })
    const txid = env.result?.transactionID ?? ''
    this.finish(env, () => txid)
    if (!this.flags.json) this.info(transfer ? `NFT ${nftId} transferred from ${executor} to ${receiver}, transaction ${txid}` : `NFT ${nftId} executed by ${executor}, transaction ${txid}`)
  }
}
