import { BaseCommand } from '../src/cli/base-command.js'
import { fullnodeTarget } from '../src/cli/flags.js'
import { didValue, fullnodeValue } from '../src/cli/parse.js'
import { completeTwoStep } from '../src/cli/password.js'
import { withProgress } from '../src/cli/consensus-progress.js'
import type { Envelope } from '../src/api/contract/envelope.js'
import type { SyncSummaryResult } from '../src/api/contract/routes.js'

export default class SyncWallet extends BaseCommand {
  static override summary = 'Rebuild the wallet of a DID hosted on this node from a fullnode (the DID signs the fullnode\'s challenge: asks for its private key password); prints what was recovered'
  static override aliases = ['sync']
  static override flags = { fullnode: fullnodeTarget }
  static override examples = [
    '<%= config.bin %> syncwallet -did bafybmi...',
    '<%= config.bin %> syncwallet -did bafybmi... -fullnode /ip4/127.0.0.1/tcp/4010/p2p/12D3KooW... -fp',
    '<%= config.bin %> sync -did bafybmi... -privPWD mypassword --json'
  ]

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID whose wallet to rebuild'), 'did')
    const fullnode = fullnodeValue(this.flags.fullnode)
    const client = this.client()
    const env = await withProgress(this.flags, 'wallet sync running', async () => {
      const first = await client.call('sync', { body: { did, ...(fullnode !== undefined ? { fullnode } : {}) } })
      return await completeTwoStep(client, first, this.flags)
    }) as Envelope<SyncSummaryResult>
    this.finish(env, renderSummary)
  }
}

const rbt = (v: number): string => `${v.toFixed(3)} RBT`

/** The recovery summary, one fact a line. */
export function renderSummary (s: SyncSummaryResult): string {
  const lines = [
    `DID            ${s.did}`,
    `fullnode       ${s.fullnode}`,
    `tokens         ${s.tokens}${s.already_held > 0 ? ` (${s.already_held} already held here)` : ''}`
  ]
  for (const [kind, t] of Object.entries(s.by_type).sort(([a], [b]) => a.localeCompare(b))) {
    lines.push(`  ${kind.padEnd(13)}${String(t.count).padStart(6)} token(s)  ${rbt(t.value)}`)
  }
  const statuses = Object.entries(s.by_status).sort(([a], [b]) => a.localeCompare(b))
  lines.push(`by status      ${statuses.length === 0 ? '-' : statuses.map(([k, n]) => `${k} ${n}`).join(', ')}`)
  lines.push(`blocks stored  ${s.blocks_stored} (${s.blocks_fetched} fetched from the fullnode)`)
  return lines.join('\n')
}
