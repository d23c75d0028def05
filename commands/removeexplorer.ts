import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class RemoveExplorer extends NotDoneCommand {
  static override summary = "Remove explorer URLs. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    links: acceptedString('comma-separated explorer URLs')
  }

  static override examples = ['<%= config.bin %> removeexplorer -links https://a.example']
  protected readonly route = 'legacyRemoveExplorer' as const
}
