/**
 * Where the explorer's export reads from: the node's own storage, never the HTTP API. Kept apart
 * from the export itself (explorer-sync.ts), which is loaded only once a database is configured.
 */
import type { KvStore } from '../../storage/kv-store.js'
import { Collections, type BlockRecord, type TokenRecord, type TransactionRecord } from '../../storage/token-records.js'
import type { DidInfo } from './rows.js'

/** What the explorer reads from the node: its own storage, never the HTTP API. */
export interface ExplorerSource {
  dids: () => Promise<DidInfo[]>
  /** All tokens, or the named ones that exist. */
  tokens: (ids?: string[]) => AsyncIterable<TokenRecord>
  blocks: (keys?: string[]) => AsyncIterable<BlockRecord>
  transactions: (ids?: string[]) => AsyncIterable<TransactionRecord>
  /** Block envelopes by body key (BlockRecord.bodyKey); undefined where missing. */
  blockBodies: (keys: string[]) => Promise<Array<Uint8Array | undefined>>
}

export function kvExplorerSource (store: KvStore, dids: () => Promise<DidInfo[]>): ExplorerSource {
  const read = <V>(name: string) => async function * (keys?: string[]): AsyncIterable<V> {
    const col = store.collection<V>(name)
    if (keys === undefined) {
      for await (const [, v] of col.entries()) yield v
      return
    }
    for (let i = 0; i < keys.length; i += CHUNK) {
      for (const v of await col.getMany(keys.slice(i, i + CHUNK))) if (v !== undefined) yield v
    }
  }
  return {
    dids,
    tokens: read<TokenRecord>(Collections.tokens),
    blocks: read<BlockRecord>(Collections.blocks),
    transactions: read<TransactionRecord>(Collections.transactions),
    blockBodies: async (keys) => keys.length === 0
      ? []
      : (await store.collection<string>(Collections.blockBodies).getMany(keys)).map((s) => s === undefined ? undefined : new Uint8Array(Buffer.from(s, 'base64')))
  }
}

const CHUNK = 500
