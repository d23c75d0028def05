import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { didValue, wholeNumber } from '../src/cli/parse.js'
import { completeWithProgress } from '../src/cli/consensus-progress.js'

export default class GenerateFaucetRbt extends BaseCommand {
  static override summary = "Ask the test network's faucet for whole test RBT, transferred to a DID of this node through consensus (the DID proves it is yours: asks for its private key password); prints the transaction id"
  static override examples = ['<%= config.bin %> generatefaucetrbt -did bafybmi... -numTokens 5', '<%= config.bin %> generatefaucetrbt -did bafybmi... -numTokens 5 -fp']

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID that receives the tokens'), 'did')
    const count = wholeNumber(this.flags.numTokens, 'numTokens', 1, 1)
    if (count > 100) throw new UsageError(`-numTokens must be at most 100, got ${count}`)
    const client = this.client()
    const first = await client.call('tokensFaucet', { body: { did, token_count: count } })
    const env = await completeWithProgress(client, first, this.flags, 'faucet transfer running')
    const r = env.result as { transactionID?: string } | null
    this.finish(env, () => r?.transactionID ?? '')
  }
}
