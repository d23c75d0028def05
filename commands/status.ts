import { BaseCommand } from '../src/cli/base-command.js'
import { cliDeps } from '../src/cli/deps.js'
import { renderOverview } from '../src/cli/overview-render.js'

export default class Status extends BaseCommand {
  static override summary = "An operator's overview of the node: version, peer id, uptime, peers, DIDs with balances, quorum role, pending operations, transfers in flight, last errors"
  static override description = 'Reads GET /svc/v1/node/overview. --json prints the envelope as it came.'
  static override examples = ['<%= config.bin %> status', '<%= config.bin %> status -port 20001 --json']

  async run (): Promise<void> {
    const env = await this.client().call('nodeOverview')
    if (this.flags.json) { this.finish(env); return }
    this.info(env.message)
    // rendered with the painter of stdout directly: the summary colours its own parts
    if (env.result !== null) cliDeps().stdout(renderOverview(env.result, this.outPaint) + '\n')
  }
}
