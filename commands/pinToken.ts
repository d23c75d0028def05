import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class PinToken extends NotDoneCommand {
  static override summary = "Pin RBT on a pinning node. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    pinningAddress: acceptedString('DID of the pinning node')
  }

  static override examples = ['<%= config.bin %> pinToken -pinningAddress bafybmi... -senderAddr bafybmi... -rbtAmount 1']
  protected readonly route = 'legacyInitiatePinToken' as const
}
