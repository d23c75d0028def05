import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { completeWithProgress } from '../src/cli/consensus-progress.js'
import { didValue } from '../src/cli/parse.js'
import type { SelfTransferResult } from '../src/api/contract/operator-results.js'

export default class SelfTransferRbt extends BaseCommand {
  static override summary = 'Re-issue a DID\'s own RBT to itself through quorum consensus (tokens unchanged for the 7-day pledge period, at most 100 a run), so the pledges that backed them are released; prints the transaction id'
  static override examples = ['<%= config.bin %> self-transfer-rbt -senderAddr bafybmi...', '<%= config.bin %> self-transfer-rbt -senderAddr bafybmi... -transType 2 -fp']

  async run (): Promise<void> {
    // the reference strips a "<peer id>." prefix from addresses
    const raw = this.requireFlag('senderAddr', 'the DID whose tokens to re-issue')
    const did = didValue(raw.includes('.') ? raw.slice(raw.lastIndexOf('.') + 1) : raw, 'senderAddr')
    const type = this.flags.transType ?? '2'
    if (type !== '1' && type !== '2') throw new UsageError(`-transType must be 1 or 2, got "${type}"`)
    const client = this.client()
    const first = await client.call('txSelfTransfer', { body: { did } })
    const env = await completeWithProgress(client, first, this.flags)
    const r = env.result as SelfTransferResult | null
    this.finish(env, () => r?.transactionID ?? '')
  }
}
