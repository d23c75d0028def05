import { Flags } from '@oclif/core'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'

const TYPES: Record<string, string> = { rbt: 'rbt', ft: 'ft', nft: 'nft', smartcontract: 'smartContract', sc: 'smartContract' }

export default class GetAllTokens extends BaseCommand {
  static override summary = 'List the tokens of one type a DID holds on this node: token id, status, status code (the reference\'s numbering), value, one per line'
  static override flags = {
    type: Flags.string({ description: 'token type: RBT (default, whole and part tokens), FT, NFT or SC', helpGroup: 'TOKENS' })
  }

  static override examples = ['<%= config.bin %> getalltokens -did bafybmi...', '<%= config.bin %> getalltokens -did bafybmi... -type FT']

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID whose tokens to list'), 'did')
    const raw = (this.flags as { type?: string }).type ?? 'RBT'
    const type = TYPES[raw.toLowerCase()]
    if (type === undefined) throw new UsageError(`-type must be RBT, FT, NFT or SC, got "${raw}"`)
    this.finish(await this.client().call('tokensList', { query: { did, type } }),
      (list) => list.map((t) => `${t.token_id} ${t.token_status} ${t.token_status_code} ${t.token_value}`).join('\n'))
  }
}
