import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class CheckPinnedState extends NotDoneCommand {
  static override summary = "Check the pins of a token state and unpledge. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1 (getpledgedtokendetails and run-unpledge do this work here)"
  static override flags = {
    tokenstatehash: acceptedString('token state hash')
  }

  static override examples = ['<%= config.bin %> checkpinnedstate -tokenstatehash Qm...']
  protected readonly route = 'legacyCheckPinnedState' as const
}
