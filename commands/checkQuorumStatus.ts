import { Flags } from '@oclif/core'
import { BaseCommand } from '../src/cli/base-command.js'
import { didValue } from '../src/cli/parse.js'

export default class CheckQuorumStatus extends BaseCommand {
  static override summary = 'Ask a quorum (hosted here or on another node) whether it is set up; exit 1 when it is not or cannot be reached'
  static override flags = {
    quorumAddr: Flags.string({ description: 'the quorum DID to ask about', helpGroup: 'QUORUM' })
  }

  static override examples = ['<%= config.bin %> checkQuorumStatus -quorumAddr bafybmi...']

  async run (): Promise<void> {
    const addr = (this.flags as { quorumAddr?: string }).quorumAddr ?? this.flags.did
    const quorumAddress = didValue(addr ?? this.requireFlag('did', 'the quorum DID (-quorumAddr)'), 'quorumAddr')
    this.finish(await this.client().call('quorumsStatus', { query: { quorumAddress } }))
  }
}
