import { BaseCommand } from '../src/cli/base-command.js'
import { completeTwoStep } from '../src/cli/password.js'

export default class ExecuteSmartContract extends BaseCommand {
  static override summary = 'Execute a deployed smart contract with -sctData as input; the node and every quorum run it and record the new state'
  static override examples = ['<%= config.bin %> executesmartcontract -sct Qm... -executorAddr bafybmi... -sctData \'{"increment": 1}\'']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    const executor = this.requireFlag('executorAddr', 'the executing DID')
    const data = this.requireFlag('sctData', 'the call data (the contract input)')
    const client = this.client()
    // the value is the contract's own (set at deploy); the node ignores what is sent for an execution
    const first = await client.call('txInitiate', {
      body: { initiator: executor, owner: executor, tokens: { smartContract: [{ smartContractId: sct, value: 0, data }] }, memo: this.flags.transComment ?? 'smart contract execution' }
    })
    const env = await completeTwoStep(client, first, this.flags)
    const r = env.result as { transactionID?: string, state?: string, output?: string } | null
    this.finish(env, () => r?.transactionID !== undefined ? `${r.transactionID}\nstate: ${r.state ?? ''}\noutput: ${r.output ?? ''}` : '')
  }
}
