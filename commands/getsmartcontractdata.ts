import { Flags } from '@oclif/core'
import { BaseCommand } from '../src/cli/base-command.js'

export default class GetSmartContractData extends BaseCommand {
  static override summary = "Print the inputs a smart contract's blocks record, oldest first (-latest: the latest block only); one line per block: number, block id, input"
  static override flags = {
    latest: Flags.boolean({ description: 'the latest block only', helpGroup: 'ASSETS' })
  }

  static override examples = ['<%= config.bin %> getsmartcontractdata -sct Qm...', '<%= config.bin %> getsmartcontractdata -sct Qm... -latest']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    const latest = (this.flags as { latest?: boolean }).latest === true
    const env = await this.client().call('scChain', { params: { contract_id: sct } })
    const numbered = (env.result ?? []).map((b, i) => ({ block_no: i, block_id: b.block_id, data: b.data }))
    const result = latest ? numbered.slice(-1) : numbered
    this.finish({ ...env, result }, (rows) => rows.map((r) => `${r.block_no} ${r.block_id} ${JSON.stringify(r.data)}`).join('\n'))
  }
}
