import { NotDoneCommand } from '../src/cli/not-done.js'

export default class ValidateToken extends NotDoneCommand {
  static override summary = "Validate one token. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1; validatetokenchain -did -token validates its genesis, every block and its ownership"
  static override examples = ['<%= config.bin %> validatetoken -token Qm...']
  protected readonly route = 'legacyValidateToken' as const
}
