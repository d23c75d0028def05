import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class CommitDataToken extends NotDoneCommand {
  static override summary = "Commit the data tokens of a batch. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    bid: acceptedString('batch id')
  }

  static override examples = ['<%= config.bin %> commitdatatoken -did bafybmi... -bid batchID1']
  protected readonly route = 'legacyCommitDataToken' as const
}
