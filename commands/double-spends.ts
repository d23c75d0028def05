import { Flags } from '@oclif/core'
import { BaseCommand } from '../src/cli/base-command.js'
import type { ResultOf } from '../src/api/contract/routes.js'

export default class DoubleSpends extends BaseCommand {
  static override summary = 'The double spends this node saw (two valid blocks, two verified spent markers, or two certificates of arbiters\' grants, spending one token state), newest first: one line each (when, token state, the two transactions, the evidence, the arbiters that granted both and those distrusted, the role that saw them); --json for the proofs themselves'
  static override flags = {
    limit: Flags.integer({ description: 'at most this many (default 100)', min: 1, max: 1000, helpGroup: 'TOKENS' })
  }

  static override examples = ['<%= config.bin %> double-spends', '<%= config.bin %> double-spends -token Qm... --json']

  async run (): Promise<void> {
    const token = this.flags.token
    const limit = (this.flags as { limit?: number }).limit
    this.finish(await this.client().call('doubleSpends', { query: { ...(token !== undefined && token !== '' ? { token } : {}), ...(limit !== undefined ? { limit } : {}) } }), render)
  }
}

function render (r: ResultOf<'doubleSpends'>): string {
  if (r.length === 0) return 'no double spends seen by this node'
  return r.map((d) => {
    // certificates: how many arbiters granted both, and those no longer trusted here
    const twice = d.evidence === 'certificates' ? `, granted by ${d.granted_twice?.length ?? 0} arbiter(s) on both sides${(d.distrusted ?? []).length > 0 ? `, distrusted: ${d.distrusted!.join(' ')}` : ''}` : ''
    return `${d.seen_at} ${d.state} spent by ${d.spent_by.join(' and ')} (${d.evidence}${twice}, seen by ${d.seen_by}) proof ${d.id}`
  }).join('\n')
}
