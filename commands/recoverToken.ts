import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class RecoverToken extends NotDoneCommand {
  static override summary = "Recover RBT pinned on a pinning node. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    pinningAddress: acceptedString('DID of the pinning node')
  }

  static override examples = ['<%= config.bin %> recoverToken -pinningAddress bafybmi... -senderAddr bafybmi... -rbtAmount 1']
  protected readonly route = 'legacyRecoverToken' as const
}
