import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class SetupDb extends NotDoneCommand {
  static override summary = "Configure the node's database. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1 (the explorer database is set up with setupservice)"
  static override flags = {
    storageType: acceptedString('storage type')
  }

  static override examples = ['<%= config.bin %> setupdb']
  protected readonly route = 'legacySetupDb' as const
}
