import { BaseCommand } from '../src/cli/base-command.js'
import { wholeNumber } from '../src/cli/parse.js'
import { completeTwoStep } from '../src/cli/password.js'
import type { Envelope } from '../src/api/contract/envelope.js'
import type { FtMintResult } from '../src/api/contract/ft-results.js'

export default class CreateFt extends BaseCommand {
  static override summary = 'Mint FTs backed by whole RBT of the creator (those RBT are burnt for the FTs); asks for the DID\'s private key password'
  static override examples = [
    '<%= config.bin %> create-ft -did bafybmi... -ftName ABC -ftCount 10000 -rbtAmount 10',
    '<%= config.bin %> create-ft -did bafybmi... -ftName ABC -ftCount 100 -rbtAmount 1 -startIndex 100 -fp'
  ]

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the creator DID')
    const ftName = this.requireFlag('ftName', 'the FT name')
    const ftCount = wholeNumber(this.flags.ftCount, 'ftCount', 1)
    const tokenCount = wholeNumber(this.flags.rbtAmount, 'rbtAmount', 1)
    const start = wholeNumber(this.flags.startIndex, 'startIndex', 0, 0)
    const client = this.client()
    const first = await client.call('ftsMint', { body: { did, ft_name: ftName, ft_count: ftCount, token_count: tokenCount, ft_num_start_index: start } })
    const env = await completeTwoStep(client, first, this.flags) as Envelope<FtMintResult>
    this.finish(env, (r) => `${r.ft_count} ${r.ft_name} worth ${r.ft_value} RBT each, transaction ${r.tx_id}`)
  }
}
