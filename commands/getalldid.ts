import { BaseCommand } from '../src/cli/base-command.js'

export default class GetAllDid extends BaseCommand {
  static override summary = 'List the DIDs hosted on the node, one per line (exit 1 while the node is starting: scripts poll it for readiness)'
  static override examples = ['<%= config.bin %> getalldid']

  async run (): Promise<void> {
    const client = this.client()
    // as the reference's getalldid, which calls /api/getalldid: refused (exit 1) while the node's core
    // is starting, so a script that polls this verb for readiness goes on only once the node can work
    await client.call('legacyGetAllDid')
    const env = await client.call('didList')
    this.finish(env, (dids) => dids.join('\n'))
  }
}
