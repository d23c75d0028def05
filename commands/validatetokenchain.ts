import { Flags } from '@oclif/core'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'
import type { ResultOf } from '../src/api/contract/routes.js'

type Validation = ResultOf<'tokensValidateChain'>

export default class ValidateTokenChain extends BaseCommand {
  static override summary = 'Validate the whole chain of a token stored on the node (every block, link and signature, part tokens\' parents, FT backing), or of every token of a DID; prints one line per token, the first bad block of an invalid chain; exit 1 when any chain is invalid'
  static override flags = {
    blockCount: Flags.string({ description: 'validate only the newest N blocks (as the reference); absent or 0 validates the whole chain', helpGroup: 'TOKENS' }),
    sctValidation: Flags.boolean({ description: 'accepted as the reference takes it; smart-contract chains are validated like every chain', helpGroup: 'TOKENS' })
  }

  static override examples = [
    '<%= config.bin %> validatetokenchain -did bafybmi...',
    '<%= config.bin %> validatetokenchain -did bafybmi... -token Qm...'
  ]

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID whose tokens to validate'), 'did')
    const token = this.flags.token
    const blockCount = (this.flags as { blockCount?: string }).blockCount
    if (blockCount !== undefined && !/^-?\d{1,9}$/.test(blockCount)) throw new UsageError(`-blockCount must be an integer, got "${blockCount}"`)
    const query = {
      did,
      ...(token !== undefined && token !== '' ? { token } : {}),
      ...(blockCount !== undefined ? { blockcount: blockCount } : {}),
      ...((this.flags as { sctValidation?: boolean }).sctValidation === true ? { SCChainValidation: 'true' as const } : {})
    }
    this.finish(await this.client().call('tokensValidateChain', { query }), render)
  }
}

function render (r: Validation): string {
  return r.tokens.map((t) => t.valid
    ? `valid   ${t.token} (${t.length} blocks)`
    : `invalid ${t.token}: block ${t.bad_block!.block_number} of ${t.bad_block!.token} (${t.bad_block!.block_id ?? 'not stored'}) ${t.bad_block!.check}: ${t.bad_block!.reason}`).join('\n')
}
