import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class PublishSct extends NotDoneCommand {
  static override summary = "Publish a smart-contract event by hand. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1 (the node publishes every new state itself; follow a contract with subscribesct)"
  static override flags = {
    pubType: acceptedString('event type: 1 deploy, 2 execute'),
    sctBlockHash: acceptedString('contract block hash')
  }

  static override examples = ['<%= config.bin %> publishsct -sct Qm... -did bafybmi... -pubType 1']
  protected readonly route = 'legacyPublishSmartContract' as const
}
