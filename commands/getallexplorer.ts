import { NotDoneCommand } from '../src/cli/not-done.js'

export default class GetAllExplorer extends NotDoneCommand {
  static override summary = "List the explorer URLs. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override examples = ['<%= config.bin %> getallexplorer']
  protected readonly route = 'legacyGetAllExplorer' as const
}
