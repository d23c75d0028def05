import { BaseCommand } from '../src/cli/base-command.js'
import { completeTwoStep } from '../src/cli/password.js'

export default class RegisterDid extends BaseCommand {
  static override summary = 'Announce a DID → peer mapping to the network (signed by the DID; asks for its password)'
  /** the reference's `setupdid` takes the same flags and calls the same route */
  static override aliases = ['setupdid']
  static override examples = ['<%= config.bin %> registerdid -did bafybmi...', '<%= config.bin %> registerdid -did bafybmi... -fp']

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the DID to register')
    const client = this.client()
    const first = await client.call('didRegister', { params: { did } })
    this.finish(await completeTwoStep(client, first, this.flags))
  }
}
