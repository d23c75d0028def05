import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { wholeChainWithMaps, withoutMaps, writeReferenceDump, type ChainDump as Dump } from '../src/cli/chain-dump.js'

/** where the reference's dumptokenchain writes the blocks (and its decodetokenchain reads them) */
const DUMP_FILE = 'dump.json'

export default class DumpTokenChain extends BaseCommand {
  static override summary = 'Print the chain of a token (RBT, part token or FT): number, id, type, owner, signers, transaction id and time of every block; as the reference, also write the blocks to dump.json in the current directory (numeric keys; decodetokenchain renames them)'
  /** the reference's `dump-ft -token` dumps an FT's chain, which this verb does for any token */
  static override aliases = ['dump-ft']
  static override examples = ['<%= config.bin %> dumptokenchain -token Qm...', '<%= config.bin %> dumptokenchain -token Qm... --json']

  async run (): Promise<void> {
    const token = this.requireFlag('token', 'the token id (46 characters starting with Qm)')
    if (!/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/.test(token)) throw new UsageError(`-token must be a token id of 46 characters starting with Qm, got "${token}"`)
    const env = await wholeChainWithMaps(this.client(), token)
    const file = await writeReferenceDump(DUMP_FILE, env.result!)
    this.finish({ ...env, result: withoutMaps(env.result!) }, (d) => render(d))
    if (!this.flags.json) this.info(`token chain dumped successfully: ${env.result!.blocks.length} block(s) written to ${file}`)
  }
}

function render (d: Dump): string {
  const lines = [
    `token    ${d.token_id}`,
    `kind     ${d.kind} (token type ${d.token_type}), value ${d.value}, status ${d.status}`,
    `owner    ${d.owner}`,
    `blocks   ${d.length}`
  ]
  for (const b of d.blocks) {
    lines.push('', `block ${b.number}  ${b.block_id}`)
    lines.push(`  type     ${b.type} ${b.type_name}`)
    lines.push(`  owner    ${b.owner}`)
    if (b.sender !== undefined) lines.push(`  sender   ${b.sender}`)
    lines.push(`  signers  ${b.signers.length === 0 ? '(none)' : b.signers.join(', ')}`)
    lines.push(`  tx id    ${b.tx_id === '' ? '-' : b.tx_id}`)
    if (b.value !== undefined) lines.push(`  value    ${b.value}`)
    if (b.child_tokens !== undefined) lines.push(`  children ${b.child_tokens.join(', ')}`)
    if (b.comment !== undefined) lines.push(`  comment  ${b.comment}`)
    lines.push(`  time     ${b.time === '' ? '-' : b.time}`)
  }
  return lines.join('\n')
}
