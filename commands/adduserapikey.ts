import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class AddUserApiKey extends NotDoneCommand {
  static override summary = "Store a per-DID API key. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1 (start the node with -apiAuth and send the token in api.cookie)"
  static override flags = {
    apikey: acceptedString('the API key')
  }

  static override examples = ['<%= config.bin %> adduserapikey -did bafybmi... -apikey KEY']
  protected readonly route = 'legacyAddUserApiKey' as const
}
