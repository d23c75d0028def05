import { BaseCommand } from '../src/cli/base-command.js'
import { passwordFrom } from '../src/cli/password.js'

export default class SetupQuorum extends BaseCommand {
  static override summary = "Set one of the node's DIDs up as a quorum (kept across restarts)"
  static override examples = [
    '<%= config.bin %> setupquorum -did bafybmi... -quorumPWD mypassword -privPWD mypassword',
    '<%= config.bin %> setupquorum -did bafybmi... -fp'
  ]

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the DID to set up as a quorum')
    const password = await passwordFrom(this.flags, 'quorumPWD', 'quorum key password')
    const priv = await passwordFrom(this.flags, 'privPWD', 'private key password')
    this.finish(await this.client().call('quorumsSetup', { body: { did, password, priv_password: priv } }))
  }
}
