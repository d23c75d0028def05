import { acceptedBoolean, acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class CreateDataToken extends NotDoneCommand {
  static override summary = "Create a data token. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    uid: acceptedString('user id'),
    uinfo: acceptedString('user info'),
    file: acceptedString('file to upload'),
    fmode: acceptedBoolean('file mode')
  }

  static override examples = ['<%= config.bin %> createdatatoken -did bafybmi... -file file.txt']
  protected readonly route = 'legacyCreateDataToken' as const
}
