import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { completeWithProgress } from '../src/cli/consensus-progress.js'

export default class TransferFt extends BaseCommand {
  static override summary = 'Transfer FTs of one name and creator between DIDs through quorum consensus'
  static override examples = [
    '<%= config.bin %> transfer-ft -senderAddr bafybmi... -receiverAddr bafybmi... -creatorDID bafybmi... -ftName ABC -ftCount 300'
  ]

  async run (): Promise<void> {
    const sender = this.requireFlag('senderAddr', 'the sending DID')
    const receiver = this.requireFlag('receiverAddr', 'the receiving DID')
    const creator = this.requireFlag('creatorDID', 'the DID that minted the FTs')
    const ftName = this.requireFlag('ftName', 'the FT name')
    const raw = this.flags.ftCount ?? ''
    if (!/^\d+$/.test(raw) || Number(raw) <= 0 || !Number.isSafeInteger(Number(raw))) throw new UsageError(`-ftCount must be a whole number greater than 0, got "${raw}"`)
    const memo = this.flags.transComment ?? 'FT transfer'
    const client = this.client()
    const first = await client.call('txInitiate', { body: { initiator: sender, owner: receiver, tokens: { ft: [{ ftName, numberOfFts: Number(raw), creatorDID: creator }] }, memo } })
    const env = await completeWithProgress(client, first, this.flags)
    const r = env.result as { transactionID?: string } | null
    this.finish(env, () => r?.transactionID ?? '')
  }
}
