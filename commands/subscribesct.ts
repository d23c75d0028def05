import { BaseCommand } from '../src/cli/base-command.js'

export default class SubscribeSct extends BaseCommand {
  static override summary = "Follow a smart contract: the node fetches its code and syncs and validates every new state"
  static override examples = ['<%= config.bin %> subscribesct -sct Qm...']

  async run (): Promise<void> {
    const sct = this.requireFlag('sct', 'the smart contract id')
    this.finish(await this.client().call('scSubscribe', { query: { smartContractToken: sct } }))
  }
}
