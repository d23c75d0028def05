import { BaseCommand } from '../src/cli/base-command.js'

export default class GetPledgedTokenDetails extends BaseCommand {
  static override summary = 'Tokens the quorum DIDs of the node hold pledged: quorum DID, token, the transaction it backs, the release time, one per line'
  static override examples = ['<%= config.bin %> getpledgedtokendetails', '<%= config.bin %> getpledgedtokendetails --json']

  async run (): Promise<void> {
    this.finish(await this.client().call('quorumsPledgedTokens'), (list) => list.map((p) => `${p.did} ${p.token} ${p.transaction_id} ${p.release_at}`).join('\n'))
  }
}
