import { BaseCommand } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'

export default class GetFtInfoByDid extends BaseCommand {
  static override summary = 'List the FTs a DID holds: one line per FT name and creator with the count held'
  static override examples = ['<%= config.bin %> get-ft-info-by-did -did bafybmi...']

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID whose FTs to list'), 'did')
    this.finish(await this.client().call('didBalancesFt', { params: { did } }), (fts) => fts.map((f) => `${f.name} ${f.count} ${f.creator}`).join('\n'))
  }
}
