import { acceptedString, NotDoneCommand } from '../src/cli/not-done.js'

export default class AddExplorer extends NotDoneCommand {
  static override summary = "Add explorer URLs. Not done by this node: logs the node's reason, which names the alternative, as [ERROR] and exits 1"
  static override flags = {
    links: acceptedString('comma-separated explorer URLs')
  }

  static override examples = ['<%= config.bin %> addexplorer -links https://a.example,https://b.example']
  protected readonly route = 'legacyAddExplorer' as const
}
