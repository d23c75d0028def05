import { NotDoneCommand } from '../src/cli/not-done.js'

export default class FaucetTokenCheck extends NotDoneCommand {
  static override summary = "Check whether a token is a faucet token. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1 (validatetokenchain checks a token's chain)"
  static override examples = ['<%= config.bin %> faucettokencheck -token Qm... -did bafybmi...']
  protected readonly route = 'legacyFaucetTokenCheck' as const
}
