import { BaseCommand, UsageError } from '../../src/cli/base-command.js'

export default class TestnetStop extends BaseCommand {
  static override summary = 'Stop a local test network started by `rbtnode testnet` (from another terminal)'
  static override examples = ['<%= config.bin %> testnet stop', '<%= config.bin %> testnet stop -p ./mynet']

  async run (): Promise<void> {
    const dir = this.flags.p ?? './testnet'
    const { stopTestnet } = await import('../../src/testnet/control.js')
    const r = await stopTestnet(dir)
    if (r === 'none') throw new UsageError(`no test network in ${dir}`)
    const message = r === 'stopped' ? `test network in ${dir} stopped` : `no test network was running from ${dir}`
    if (this.flags.json) this.print(JSON.stringify({ status: true, message, result: null }, null, 2))
    else this.info(message)
  }
}
