import { NotDoneCommand } from '../src/cli/not-done.js'

export default class MigrateNode extends NotDoneCommand {
  static override summary = "Migrate a Java-node (v1) wallet to this node. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override examples = ['<%= config.bin %> migratenode -didType 0 -fp']
  protected readonly route = 'legacyMigrateNode' as const
}
