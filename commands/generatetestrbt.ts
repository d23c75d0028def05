import { BaseCommand } from '../src/cli/base-command.js'
import { wholeNumber } from '../src/cli/parse.js'
import { completeTwoStep } from '../src/cli/password.js'
import type { Envelope } from '../src/api/contract/envelope.js'
import type { MintLocalRbtResult } from '../src/api/contract/token-results.js'

export default class GenerateTestRbt extends BaseCommand {
  static override summary = 'Mint whole test RBT for a DID hosted on a test-network node (asks for the DID\'s private key password); prints the token ids'
  static override examples = [
    '<%= config.bin %> generatetestrbt -did bafybmi... -numTokens 10',
    '<%= config.bin %> generatetestrbt -did bafybmi... -numTokens 10 -startIndex 100 -fp'
  ]

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the DID that receives the tokens')
    const count = wholeNumber(this.flags.numTokens, 'numTokens', 1)
    // without -startIndex the node continues from the DID's next free index (the reference numbers nothing)
    const start = this.flags.startIndex === undefined ? undefined : wholeNumber(this.flags.startIndex, 'startIndex', 0, 0)
    const client = this.client()
    const first = await client.call('tokensGenerateLocalRbt', { body: { did, number_of_tokens: count, ...(start !== undefined ? { start_index: start } : {}) } })
    const env = await completeTwoStep(client, first, this.flags) as Envelope<MintLocalRbtResult>
    this.finish(env, (r) => r.token_ids.join('\n'))
  }
}
