import { BaseCommand } from '../src/cli/base-command.js'
import type { ResultOf } from '../src/api/contract/routes.js'

type Release = ResultOf<'tokensReleaseLocked'>

export default class ReleaseAllLockedTokens extends BaseCommand {
  static override summary = 'Free the Locked tokens of transactions that can no longer commit; tokens of transfers that may still commit are kept. One line per token on stdout: released|kept, token, DID, value, transaction, record state, reason'
  static override examples = ['<%= config.bin %> releaseAllLockedTokens', '<%= config.bin %> releaseAllLockedTokens -port 20001 --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('tokensReleaseLocked', { body: {} }), render)
  }
}

function render (r: Release): string {
  const line = (what: string, t: Release['released'][number]): string =>
    `${what} ${t.token} ${t.did} ${t.value} ${t.transaction_id ?? '-'} ${t.record_state}: ${t.reason}`
  return [...r.released.map((t) => line('released', t)), ...r.kept.map((t) => line('kept', t))].join('\n')
}
