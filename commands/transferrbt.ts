import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { completeWithProgress } from '../src/cli/consensus-progress.js'

export default class TransferRbt extends BaseCommand {
  static override summary = 'Transfer RBT (up to 3 decimals) between DIDs through quorum consensus'
  static override examples = [
    '<%= config.bin %> transferrbt -senderAddr bafybmi... -receiverAddr bafybmi... -rbtAmount 1.5',
    '<%= config.bin %> transferrbt -senderAddr bafybmi... -receiverAddr bafybmi... -rbtAmount 0.25 -transComment rent -fp'
  ]

  async run (): Promise<void> {
    const sender = this.requireFlag('senderAddr', 'the sending DID')
    const receiver = this.requireFlag('receiverAddr', 'the receiving DID')
    const raw = this.flags.rbtAmount ?? '0.0'
    if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError(`-rbtAmount must be a positive number, got "${raw}"`)
    const memo = this.flags.transComment ?? 'Test transaction'
    const client = this.client()
    const first = await client.call('txInitiate', { body: { initiator: sender, owner: receiver, tokens: { rbt: raw }, memo } })
    const env = await completeWithProgress(client, first, this.flags)
    const r = env.result as { transactionID?: string } | null
    this.finish(env, () => r?.transactionID ?? '')
  }
}
