import { Flags } from '@oclif/core'
import { BaseCommand } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'

export default class ArbiterRegister extends BaseCommand {
  static override summary = 'Take an arbiter seat for a quorum DID of this node, staking whole RBT of its own (kept out of its transfers and pledges while the seat stands); -leave ends the seat'
  static override flags = {
    leave: Flags.boolean({ description: 'end the DID\'s seat instead of taking one', helpGroup: 'QUORUM' })
  }

  static override examples = ['<%= config.bin %> arbiter-register -did bafybmi...', '<%= config.bin %> arbiter-register -did bafybmi... -leave']

  async run (): Promise<void> {
    const did = didValue(this.flags.did ?? this.requireFlag('did', 'the quorum DID taking the seat'), 'did')
    const leave = (this.flags as { leave?: boolean }).leave === true
    this.finish(await this.client().call('arbitersRegister', { body: { did, ...(leave ? { leave } : {}) } }), (r) => `${r.state} ${r.did} peer ${r.peer}${r.stake.length > 0 ? ` stake ${r.stake.map((s) => s.token).join(',')}` : ''}`)
  }
}
