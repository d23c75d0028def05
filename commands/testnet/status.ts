import { BaseCommand, UsageError } from '../../src/cli/base-command.js'

export default class TestnetStatus extends BaseCommand {
  static override summary = 'Show the nodes of a local test network (from another terminal): up or down, DIDs, balances'
  static override examples = ['<%= config.bin %> testnet status', '<%= config.bin %> testnet status -p ./mynet --json']

  async run (): Promise<void> {
    const dir = this.flags.p ?? './testnet'
    const { testnetStatus } = await import('../../src/testnet/control.js')
    const { summaryText } = await import('../../src/cli/testnet-render.js')
    const s = await testnetStatus(dir)
    if (s === undefined) throw new UsageError(`no test network in ${dir}: start one with \`rbtnode testnet -p ${dir}\``)
    const up = s.nodes.filter((n) => n.running).length
    const message = `${s.supervisor !== undefined ? `running (process ${s.supervisor})` : 'not running'}; ${up} of ${s.nodes.length} nodes answer`
    if (this.flags.json) {
      this.print(JSON.stringify({ status: true, message, result: s }, null, 2))
      return
    }
    this.info(message)
    this.print(summaryText(s, this.outPaint))
  }
}
