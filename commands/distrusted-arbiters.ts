import { BaseCommand } from '../src/cli/base-command.js'
import type { ResultOf } from '../src/api/contract/routes.js'

export default class DistrustedArbiters extends BaseCommand {
  static override summary = 'The arbiters this node no longer trusts, newest first: one line each (since when, the peer id, the state it granted twice, the two transactions, the double-spend record with the proof); --json for its two signed grants'

  static override examples = ['<%= config.bin %> distrusted-arbiters', '<%= config.bin %> distrusted-arbiters --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('arbitersDistrusted'), render)
  }
}

function render (r: ResultOf<'arbitersDistrusted'>): string {
  if (r.length === 0) return 'no arbiter distrusted by this node'
  return r.map((a) => `${a.since} ${a.peer} granted state ${a.state_hash} to ${a.transactions.join(' and ')} (proof in double spend ${a.conflict})`).join('\n')
}
