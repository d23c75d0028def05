import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { completeTwoStep } from '../src/cli/password.js'
import { cliDeps } from '../src/cli/deps.js'

export default class TransferRbt extends BaseCommand {
  static override summary = 'Transfer RBT (up to 3 decimals) between DIDs through quorum consensus'
  static override examples = [
    '<%= config.bin %> transferrbt -senderAddr bafybmi... -receiverAddr bafybmi... -rbtAmount 1.5',
    '<%= config.bin %> transferrbt -senderAddr bafybmi... -receiverAddr bafybmi... -rbtAmount 0.25 -transComment rent -fp'
  ]

  async run (): Promise<void> {
    const sender = this.requireFlag('senderAddr', 'the sending DID')
    const receiver = this.requireFlag('receiverAddr', 'the receiving DID')
    const raw = this.flags.rbtAmount ?? '0.0'
    if (!/^\d+(\.\d+)?$/.test(raw)) throw new UsageError(`-rbtAmount must be a positive number, got "${raw}"`)
    const memo = this.flags.transComment ?? 'Test transaction'
    const client = this.client()
    const first = await client.call('txInitiate', { body: { initiator: sender, owner: receiver, tokens: { rbt: raw }, memo } })
    // progress on an interactive terminal while consensus runs
    const started = Date.now()
    const tty = process.stderr.isTTY === true && !this.flags.json
    const timer = tty ? setInterval(() => { cliDeps().stderr(`\rconsensus running… ${((Date.now() - started) / 1000).toFixed(0)} s`) }, 500) : undefined
    try {
      const env = await completeTwoStep(client, first, this.flags)
      if (timer !== undefined) cliDeps().stderr('\r\x1b[K')
      const r = env.result as { transactionID?: string } | null
      this.finish(env, () => r?.transactionID ?? '')
    } finally {
      if (timer !== undefined) clearInterval(timer)
    }
  }
}
