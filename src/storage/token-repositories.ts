/**
 * Read side of token storage: one repository per collection, behind interfaces. Writes that touch
 * several records go through TokenLedger (token-ledger.ts), never through these.
 */
import type { KvStore } from './kv-store.js'
import {
  Collections, blockKey, freeFtPrefix, ownerPrefix, type BalanceRecord, type BlockRecord, type OwnerIndexEntry, type TokenFamily,
  type TokenRecord, type TokenStatus, type TransactionRecord
} from './token-records.js'

export interface TokenRepository {
  get: (tokenId: string) => Promise<TokenRecord | undefined>
  getMany: (tokenIds: string[]) => Promise<Array<TokenRecord | undefined>>
  /** Token content (RAC hex text) of RAC-backed tokens. */
  content: (tokenId: string) => Promise<string | undefined>
  /** Contents of several tokens in one read, in the same order. */
  contents: (tokenIds: string[]) => Promise<Array<string | undefined>>
  all: () => AsyncIterable<TokenRecord>
}

export interface OwnerIndex {
  /** Token ids (with value) a DID holds, optionally of one family and status, in key order. */
  list: (did: string, family?: TokenFamily, status?: TokenStatus, limit?: number) => Promise<Array<{ tokenId: string, family: TokenFamily, status: TokenStatus } & OwnerIndexEntry>>
  /** Ids of the first `limit` Free FTs of one name and creator a DID holds, latest block first in key order. */
  freeFts: (did: string, name: string, creator: string, limit: number) => Promise<string[]>
}

export interface BlockRepository {
  /** Blocks of a token in chain order, from `fromNumber` (default 0). */
  chain: (tokenId: string, opts?: { fromNumber?: number, limit?: number }) => Promise<BlockRecord[]>
  latest: (tokenId: string) => Promise<BlockRecord | undefined>
  get: (tokenId: string, number: number) => Promise<BlockRecord | undefined>
  /** Several block records in one read, in the order asked (undefined where absent). */
  getMany: (at: ReadonlyArray<{ tokenId: string, number: number }>) => Promise<Array<BlockRecord | undefined>>
  /**
   * The block records of several tokens' chains, each from genesis up to the number of its token
   * record's latest block, read by key (no range scan); undefined for a token whose chain is not
   * exactly that long, which the caller reads with `chain`.
   */
  chainsTo: (tips: ReadonlyArray<{ tokenId: string, latestBlockNumber: number }>) => Promise<Array<BlockRecord[] | undefined>>
  /** Envelope bytes of stored blocks, in the same order. */
  envelopes: (blocks: BlockRecord[]) => Promise<Uint8Array[]>
}

export interface TransactionRepository {
  get: (txId: string) => Promise<TransactionRecord | undefined>
  list: (opts?: { limit?: number }) => Promise<TransactionRecord[]>
  /** Transactions a DID took part in, oldest first. */
  byDid: (did: string, opts?: { limit?: number, reverse?: boolean }) => Promise<TransactionRecord[]>
}

export interface BalanceRepository {
  get: (did: string) => Promise<BalanceRecord | undefined>
}

export interface TokenRepositories {
  tokens: TokenRepository
  owners: OwnerIndex
  blocks: BlockRepository
  transactions: TransactionRepository
  balances: BalanceRepository
}

const b64 = (s: string): Uint8Array => new Uint8Array(Buffer.from(s, 'base64'))

export function levelTokenRepositories (store: KvStore): TokenRepositories {
  const tokens = store.collection<TokenRecord>(Collections.tokens)
  const content = store.collection<string>(Collections.tokenContent)
  const blocks = store.collection<BlockRecord>(Collections.blocks)
  const bodies = store.collection<string>(Collections.blockBodies)
  const txs = store.collection<TransactionRecord>(Collections.transactions)
  const txByDid = store.collection<{ role: string }>(Collections.txByDid)
  const owners = store.collection<OwnerIndexEntry>(Collections.ownerIndex)
  const freeFts = store.collection<number>(Collections.freeFts)
  const balances = store.collection<BalanceRecord>(Collections.balances)

  return {
    tokens: {
      get: async (id) => await tokens.get(id),
      getMany: async (ids) => ids.length === 0 ? [] : await tokens.getMany(ids),
      content: async (id) => await content.get(id),
      contents: async (ids) => ids.length === 0 ? [] : await content.getMany(ids),
      all: async function * () { for await (const [, v] of tokens.entries()) yield v }
    },
    owners: {
      list: async (did, family, status, limit) => {
        const out: Array<{ tokenId: string, family: TokenFamily, status: TokenStatus } & OwnerIndexEntry> = []
        for await (const [k, v] of owners.entries({ prefix: ownerPrefix(did, family, status), limit })) {
          const [, fam, st, tokenId] = k.split('/')
          out.push({ tokenId: tokenId!, family: fam as TokenFamily, status: st as TokenStatus, ...v })
        }
        return out
      },
      freeFts: async (did, name, creator, limit) => {
        const out: string[] = []
        for await (const k of freeFts.keys({ prefix: freeFtPrefix(did, name, creator), limit })) out.push(k.slice(k.lastIndexOf('\u0000') + 1))
        return out
      }
    },
    blocks: {
      chain: async (tokenId, opts = {}) => {
        const out: BlockRecord[] = []
        const range = { gte: blockKey(tokenId, opts.fromNumber ?? 0), lt: `${tokenId}/\uffff`, limit: opts.limit }
        for await (const [, v] of blocks.entries(range)) out.push(v)
        return out
      },
      latest: async (tokenId) => {
        for await (const [, v] of blocks.entries({ prefix: `${tokenId}/`, reverse: true, limit: 1 })) return v
        return undefined
      },
      get: async (tokenId, n) => await blocks.get(blockKey(tokenId, n)),
      getMany: async (at) => at.length === 0 ? [] : await blocks.getMany(at.map((b) => blockKey(b.tokenId, b.number))),
      chainsTo: async (tips) => {
        // one block past the tip too: a chain stored longer than its record says is read whole by the caller
        const keys = tips.flatMap((t) => Array.from({ length: t.latestBlockNumber + 2 }, (_, n) => blockKey(t.tokenId, n)))
        const got = keys.length === 0 ? [] : await blocks.getMany(keys)
        let at = 0
        return tips.map((t) => {
          const recs = got.slice(at, at + t.latestBlockNumber + 1)
          const past = got[at + t.latestBlockNumber + 1]
          at += t.latestBlockNumber + 2
          return past === undefined && recs.every((r) => r !== undefined) ? recs as BlockRecord[] : undefined
        })
      },
      envelopes: async (list) => {
        if (list.length === 0) return []
        const raw = await bodies.getMany(list.map((b) => b.bodyKey))
        return raw.map((s, i) => {
          if (s === undefined) throw new Error(`block body ${list[i]!.bodyKey} of ${list[i]!.tokenId} is missing`)
          return b64(s)
        })
      }
    },
    transactions: {
      get: async (id) => await txs.get(id),
      list: async (opts = {}) => {
        const out: TransactionRecord[] = []
        for await (const [, v] of txs.entries({ limit: opts.limit })) out.push(v)
        return out.sort((a, b) => a.createdAt - b.createdAt)
      },
      byDid: async (did, opts = {}) => {
        const ids: string[] = []
        for await (const k of txByDid.keys({ prefix: `${did}/`, limit: opts.limit, reverse: opts.reverse })) ids.push(k.slice(k.lastIndexOf('/') + 1))
        const recs = ids.length === 0 ? [] : await txs.getMany(ids)
        return recs.filter((r): r is TransactionRecord => r !== undefined)
      }
    },
    balances: {
      get: async (did) => await balances.get(did)
    }
  }
}
