import { readFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'

/** Both quorum-list formats: `[{"type":2,"address":"<did>"}]` and a plain array of DIDs. */
export function parseQuorumList (text: string, file: string): string[] {
  let data: unknown
  try { data = JSON.parse(text) } catch { throw new UsageError(`${file} is not valid JSON`) }
  if (!Array.isArray(data) || data.length === 0) throw new UsageError(`${file} must be a non-empty JSON array of quorums`)
  return data.map((e, i) => {
    const did = typeof e === 'string' ? e : (e !== null && typeof e === 'object' ? (e as { address?: unknown }).address : undefined)
    if (typeof did !== 'string') throw new UsageError(`${file}: entry ${i} is neither a DID nor {"type":2,"address":"<did>"}`)
    // the pre-0.0.18 form "<peerID>.<DID>" is accepted too
    return did.includes('.') ? did.slice(did.lastIndexOf('.') + 1) : did
  })
}

export default class AddQuorum extends BaseCommand {
  static override summary = 'Add the quorums of a quorum list file to the node (one call per quorum)'
  static override examples = ['<%= config.bin %> addquorum', '<%= config.bin %> addquorum -quorumList quorumlist.json -port 20001']

  async run (): Promise<void> {
    const file = this.flags.quorumList ?? 'quorumlist.json'
    let text: string
    try { text = await readFile(resolve(process.cwd(), file), 'utf8') } catch (e) { throw new UsageError(`cannot read the quorum list ${file}: ${(e as Error).message}`) }
    const dids = parseQuorumList(text, file)
    const client = this.client()
    let added = 0
    for (const did of dids) {
      const env = await client.envelope('quorumsAdd', { body: { did } })
      if (env.status) added++
      else if (!/already exist/.test(env.message)) throw new UsageError(`quorum ${did}: ${env.message}`)
    }
    this.finish({ status: true, message: `Quorums added successfully (${added} new, ${dids.length - added} already known)`, result: null })
  }
}
