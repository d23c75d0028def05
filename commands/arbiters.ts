import { BaseCommand } from '../src/cli/base-command.js'
import type { ResultOf } from '../src/api/contract/routes.js'

export default class Arbiters extends BaseCommand {
  static override summary = 'The arbiter committee as this node counts it: whether it is in force, then one line per registration (state, since when, DID, peer, staked tokens); --json for the whole answer'

  static override examples = ['<%= config.bin %> arbiters', '<%= config.bin %> arbiters --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('arbiters'), render)
  }
}

function render (r: ResultOf<'arbiters'>): string {
  const head = r.in_force ? `committee in force: ${r.seats} seat(s)` : `no committee in force: ${r.seats} seat(s) of ${r.minimum} needed (the claims count peers)`
  // the charter: the joins that put (or will put) the committee in force, for good
  const charter = r.charter !== undefined ? [`charter ${r.in_force ? 'in force since' : 'counts from'} ${r.charter.in_force_from}: ${r.charter.dids.join(', ')}`] : []
  return [head, ...charter, ...r.registrations.map((a) => `${a.state} ${a.registered_at} ${a.did} peer ${a.peer}${a.stake.length > 0 ? ` stake ${a.stake.map((s) => s.token).join(',')}` : ''}${a.why !== undefined ? ` (${a.why})` : ''}`)].join('\n')
}
