import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { completeTwoStep } from '../src/cli/password.js'

export default class DeploySmartContract extends BaseCommand {
  static override summary = "Deploy a generated smart contract through quorum consensus: its first state is recorded in the contract's chain"
  static override examples = ['<%= config.bin %> deploysmartcontract -sct Qm... -deployerAddr bafybmi... -rbtAmount 1']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    const deployer = this.requireFlag('deployerAddr', 'the deploying DID')
    const raw = this.flags.rbtAmount ?? '0.0'
    if (!/^\d+(\.\d+)?$/.test(raw) || Number(raw) <= 0) throw new UsageError(`-rbtAmount must be a positive number (the contract's value), got "${raw}"`)
    const client = this.client()
    const first = await client.call('txInitiate', {
      body: { initiator: deployer, owner: deployer, tokens: { smartContract: [{ smartContractId: sct, value: Number(raw), data: this.flags.sctData ?? '' }] }, memo: this.flags.transComment ?? 'smart contract deploy' }
    })
    const env = await completeTwoStep(client, first, this.flags)
    const r = env.result as { transactionID?: string, state?: string } | null
    this.finish(env, () => r?.transactionID !== undefined ? `${r.transactionID}\nstate: ${r.state ?? ''}` : '')
  }
}
