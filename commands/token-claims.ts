import { Flags } from '@oclif/core'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import type { ResultOf } from '../src/api/contract/routes.js'

export default class TokenClaims extends BaseCommand {
  static override summary = 'The claims this node holds as an arbiter on a token\'s states, with their evidence: one line per state (free, open or committed, the holding transaction, the spent marker known here), then one per claimant (peer, quorum DID, transaction, nonce, the quorum\'s signature)'
  static override flags = {
    block: Flags.string({ description: 'one state only: the block id <n>-<hash> (default: every state of the chain known here)', helpGroup: 'TOKENS' })
  }

  static override examples = ['<%= config.bin %> token-claims -token Qm...', '<%= config.bin %> token-claims -token Qm... -block 1-abc... --json']

  async run (): Promise<void> {
    const token = this.flags.token
    if (token === undefined || token === '') throw new UsageError('-token is required: the token whose claims to show')
    const block = (this.flags as { block?: string }).block
    this.finish(await this.client().call('tokensClaims', { query: { token, ...(block !== undefined ? { block } : {}) } }), render)
  }
}

function render (r: ResultOf<'tokensClaims'>): string {
  return r.states.map((s) => {
    const head = `${s.state} ${s.claim === null ? 'free' : `${s.claim.status} ${s.claim.transaction_id} granted ${s.claim.granted_at}`}${s.marker !== null ? ` marker ${s.marker.transaction_id} by ${s.marker.quorum}` : ''}`
    return [head, ...(s.claim?.claimants ?? []).map((c) => `  claimant ${c.peer} ${c.quorum} ${c.transaction_id} nonce ${c.nonce ?? '-'} sig ${c.signature ?? '-'}`)].join('\n')
  }).join('\n')
}
