import { NotDoneCommand } from '../src/cli/not-done.js'

export default class UnpledgePowPledgeTokens extends NotDoneCommand {
  static override summary = "Force-unpledge proof-of-work pledges. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1 (run-unpledge releases this node's pledges)"
  static override examples = ['<%= config.bin %> unpledge-pow-pledge-tokens']
  protected readonly route = 'legacyUnpledgePowUnpledgeTokens' as const
}
