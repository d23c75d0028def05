import { existsSync, statSync, writeFileSync } from 'node:fs'
import { dirname, resolve } from 'node:path'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'
import { fullnodeTarget } from '../src/cli/flags.js'
import { didValue, fullnodeValue, splitList, tokenIdList, wholeNumber } from '../src/cli/parse.js'
import { withProgress } from '../src/cli/consensus-progress.js'
import type { Envelope } from '../src/api/contract/envelope.js'
import type { SyncTransactionChainResult } from '../src/api/contract/routes.js'

type Chain = SyncTransactionChainResult['chains'][number]

/** Token ids per request (the node takes at most 1000). */
const IDS_PER_REQUEST = 1000
const MAX_EXCLUDED = 100_000

export default class SyncTransactionChain extends BaseCommand {
  static override summary = 'Fetch the ordered transaction chains of tokens (pulled from a fullnode and validated when this node does not hold them), following every page; prints one line per token'
  static override flags = { fullnode: fullnodeTarget }
  static override examples = [
    '<%= config.bin %> synctransactionchain -did bafybmi... -tokenIDs Qm...,Qm...',
    '<%= config.bin %> synctransactionchain -did bafybmi... -tokenIDs Qm... -excludeTxnIDs 3fa4...,9bc1... -out chains.json',
    '<%= config.bin %> synctransactionchain -did bafybmi... -tokenIDs Qm... -fullnode 12D3KooW... --json'
  ]

  async run (): Promise<void> {
    const did = didValue(this.requireFlag('did', 'the DID asking for the chains'), 'did')
    const ids = tokenIdList(this.flags.tokenIDs, 'tokenIDs')
    const exclude = [...new Set(splitList(this.flags.excludeTxnIDs ?? ''))]
    if (exclude.length > MAX_EXCLUDED) throw new UsageError(`-excludeTxnIDs: at most ${MAX_EXCLUDED} transaction ids, got ${exclude.length}`)
    for (const t of exclude) if (t.length > 200) throw new UsageError(`-excludeTxnIDs: "${t.slice(0, 20)}…" is longer than 200 characters`)
    const fullnode = fullnodeValue(this.flags.fullnode)
    const limit = this.flags.pageSize !== undefined ? wholeNumber(this.flags.pageSize, 'pageSize', 1) : undefined
    if (limit !== undefined && limit > 10_000) throw new UsageError(`-pageSize must be at most 10000, got ${limit}`)
    const out = this.flags.out !== undefined && this.flags.out !== '' ? resolve(this.flags.out) : undefined
    if (out !== undefined && !(existsSync(dirname(out)) && statSync(dirname(out)).isDirectory())) throw new UsageError(`-out: the folder ${dirname(out)} does not exist`)
    if (out !== undefined && existsSync(out) && statSync(out).isDirectory()) throw new UsageError(`-out: ${out} is a folder; name a file`)

    const client = this.client()
    const chains = new Map<string, Chain>()
    let blocks = 0
    let pages = 0
    let last: Envelope<SyncTransactionChainResult> | undefined
    await withProgress(this.flags, 'syncing transaction chains', async () => {
      for (let i = 0; i < ids.length; i += IDS_PER_REQUEST) {
        const batch = ids.slice(i, i + IDS_PER_REQUEST)
        let cursor = ''
        do {
          const env = await client.call('syncTransactionChain', {
            body: {
              did,
              token_ids: batch,
              exclude_transaction_ids: exclude,
              ...(cursor !== '' ? { cursor } : {}),
              ...(limit !== undefined ? { limit } : {}),
              ...(fullnode !== undefined ? { fullnode } : {})
            }
          })
          const r = env.result
          if (r === null || !Array.isArray(r.chains) || typeof r.next_cursor !== 'string') throw new Error('the node answered sync-transaction-chain without chains')
          if (r.next_cursor !== '' && r.next_cursor === cursor) throw new Error(`the node answered the cursor "${cursor}" with itself: paging does not advance`)
          for (const c of r.chains) {
            // a chain cut by a page boundary continues in the next answer
            const held = chains.get(c.token_id)
            if (held === undefined) chains.set(c.token_id, { ...c, blocks: [...c.blocks] })
            else held.blocks.push(...c.blocks)
            blocks += c.blocks.length
          }
          pages++
          cursor = r.next_cursor
          last = env
        } while (cursor !== '')
      }
    }, () => `${blocks} block(s) in ${pages} page(s)`)

    const ordered = ids.map((id) => chains.get(id)).filter((c): c is Chain => c !== undefined)
    const result: SyncTransactionChainResult = { did, chains: ordered, count: blocks, next_cursor: '' }
    if (out !== undefined) {
      writeFileSync(out, JSON.stringify({ did, chains: ordered }, null, 2) + '\n')
    }
    const message = pages > 1 ? `Transaction chains of ${ordered.length} token(s), ${blocks} block(s) in ${pages} pages` : last!.message
    this.finish({ status: true, message, result }, (r) => renderChains(r.chains))
    if (out !== undefined && !this.flags.json) this.info(`chains written to ${out}`)
  }
}

/** One line per token: id, kind, blocks returned (of the chain's length when some were excluded), latest block returned. */
export function renderChains (chains: Chain[]): string {
  const rows = chains.map((c) => {
    const tip = c.blocks[c.blocks.length - 1]
    const n = c.blocks.length === c.length ? String(c.length) : `${c.blocks.length} of ${c.length}`
    return [c.token_id, c.kind, n, tip?.block_id ?? '-']
  })
  const head = ['TOKEN', 'KIND', 'BLOCKS', 'LATEST BLOCK']
  const width = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  return [head, ...rows].map((r) => r.map((v, i) => i === r.length - 1 ? v : v.padEnd(width[i]!)).join('  ')).join('\n')
}
