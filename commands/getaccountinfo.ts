import { BaseCommand } from '../src/cli/base-command.js'

export default class GetAccountInfo extends BaseCommand {
  static override summary = 'Show the RBT balance of a DID (free, pledged, locked, pinned)'
  static override examples = ['<%= config.bin %> getaccountinfo -did bafybmi...', '<%= config.bin %> getaccountinfo -did bafybmi... --json']

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the DID whose balance to show')
    const env = await this.client().call('legacyGetAccountInfo', { query: { did } })
    this.finish(env, (list) => list.map((a) => [
      `DID          ${a.did}`,
      `DID type     ${a.did_type}`,
      `RBT (free)   ${a.rbt_amount.toFixed(3)}`,
      `Pledged RBT  ${a.pledged_rbt.toFixed(3)}`,
      `Locked RBT   ${a.locked_rbt.toFixed(3)}`,
      `Pinned RBT   ${a.pinned_rbt.toFixed(3)}`
    ].join('\n')).join('\n\n'))
  }
}
