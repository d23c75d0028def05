import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class LockTokens extends NotDoneCommand {
  static override summary = "Lock tokens by hand (the reference's arbitrary mode). Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    tokenList: acceptedString('file listing the tokens to lock')
  }

  static override examples = ['<%= config.bin %> locktokens -tokenList tokens.txt']
  protected readonly route = 'legacyLockTokens' as const
}
