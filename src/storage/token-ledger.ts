/**
 * The write side of token storage. A `LedgerChange` names every record one state change touches
 * (token records, chain blocks, transaction records, token contents); `commit` turns it into one
 * atomic, synced LevelDB batch together with the owner-index and balance updates it implies.
 *
 * Commits are serialised in-process, and the current token records are read inside that critical
 * section, so balance deltas never race and `expect` preconditions (compare-and-set on status,
 * owner or latest block) hold at the moment of the write. A crash before the batch lands leaves
 * the old state; after, the new one: there is no in-between on disk.
 */
import type { BatchOp, KvStore } from './kv-store.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import {
  Collections, FREE_FT_INDEX_VERSION_KEY, blockKey, emptyBalance, familyOf, freeFtKeyOf, mintIndexKey, ownerKey, txByDidKey,
  type BalanceRecord, type BlockRecord, type OwnerIndexEntry, type TokenRecord, TokenStatus, type TransactionRecord
} from './token-records.js'

export interface TokenPrecondition {
  /** The stored token must exist (true) or must not exist (false). */
  exists?: boolean
  status?: readonly TokenStatus[]
  owner?: string
  latestBlockId?: string
}

export interface StoredBlockInput {
  record: Omit<BlockRecord, 'bodyKey'>
  /** The envelope exactly as received or built. */
  envelope: Uint8Array
}

export interface LedgerChange {
  tokens?: Array<{ record: TokenRecord, expect?: TokenPrecondition }>
  blocks?: StoredBlockInput[]
  transactions?: TransactionRecord[]
  /** Token content (RAC hex text) by token id. */
  contents?: Record<string, string>
  /** Mint indexes claimed by this change: `did` + `index` → token id; a taken index is a conflict. */
  mintIndexes?: Array<{ did: string, index: number, tokenId: string }>
  /** Roles of DIDs in the transactions, for the per-DID transaction index. Default: initiator and receiver. */
  txParticipants?: Array<{ txId: string, did: string, role: string, epoch: number }>
  /** Further puts/deletes in other collections (e.g. consensus records) that must land in the same batch. */
  extra?: BatchOp[]
}

export interface CommitResult { ops: number }

/** Key of a stored envelope: block hash plus a digest of the exact envelope bytes. */
export const bodyKeyOf = (hash: string, envelopeDigestHex: string): string => `${hash}-${envelopeDigestHex.slice(0, 16)}`

type Digest = (b: Uint8Array) => string

export class TokenLedger {
  private tail: Promise<unknown> = Promise.resolve()
  private readonly listeners = new Set<(change: LedgerChange) => void>()
  private readonly timers = new Set<(ms: number, ok: boolean) => void>()

  constructor (private readonly store: KvStore, private readonly digest: Digest) {}

  /** Calls `fn` after every commit that landed, with its change (the explorer follows these). Returns an unsubscribe. */
  onCommit (fn: (change: LedgerChange) => void): () => void {
    this.listeners.add(fn)
    return () => { this.listeners.delete(fn) }
  }

  /**
   * Calls `fn` after every commit attempt with how long it took (reads, checks and the synced
   * batch; not the wait for the commit lock) and whether it landed. For metrics. Returns an unsubscribe.
   */
  observeCommit (fn: (ms: number, ok: boolean) => void): () => void {
    this.timers.add(fn)
    return () => { this.timers.delete(fn) }
  }

  /** Runs `fn` alone: no other commit or exclusive section interleaves with it. */
  async exclusive<T> (fn: () => Promise<T>): Promise<T> {
    const run = this.tail.then(fn, fn)
    this.tail = run.catch(() => {})
    return await run
  }

  /** The index after the highest one minted for `did` (0 when none was): where a mint without a start index begins. */
  async nextMintIndex (did: string): Promise<number> {
    const col = this.store.collection<string>(Collections.mintIndex)
    for await (const [k] of col.entries({ gte: `${did}/`, lt: `${did}/\uffff`, reverse: true, limit: 1 })) {
      return Number(k.slice(k.lastIndexOf('/') + 1)) + 1
    }
    return 0
  }

  /** Throws CONFLICT when an index in [start, start+count) was already minted for `did`. */
  async checkMintIndexesFree (did: string, start: number, count: number): Promise<void> {
    const col = this.store.collection<string>(Collections.mintIndex)
    for await (const [k, v] of col.entries({ gte: mintIndexKey(did, start), lt: mintIndexKey(did, start + count), limit: 1 })) {
      const index = Number(k.slice(k.lastIndexOf('/') + 1))
      throw new RbtError(ErrorCode.CONFLICT, `token index ${index} was already minted for ${did} (token ${v}); choose another start_index`)
    }
  }

  /**
   * Fills the free-FT index once, for a store written before the index existed (commits keep it
   * up to date from then on). Returns how many entries it wrote; 0 when the index was complete.
   */
  async indexFreeFts (): Promise<number> {
    return await this.exclusive(async () => {
      const col = this.store.collection<number>(Collections.freeFts)
      if (await col.get(FREE_FT_INDEX_VERSION_KEY) !== undefined) return 0
      const ops: BatchOp[] = []
      for await (const [, t] of this.store.collection<TokenRecord>(Collections.tokens).entries()) {
        const k = freeFtKeyOf(t)
        if (k !== undefined) ops.push({ type: 'put', collection: Collections.freeFts, key: k, value: t.value })
      }
      ops.push({ type: 'put', collection: Collections.freeFts, key: FREE_FT_INDEX_VERSION_KEY, value: 1 })
      await this.store.batch(ops, { sync: true })
      return ops.length - 1
    })
  }

  async commit (change: LedgerChange): Promise<CommitResult> {
    return await this.exclusive(async () => await this.commitUnlocked(change))
  }

  /** Commit from inside an `exclusive` section (the caller already holds the lock). */
  async commitUnlocked (change: LedgerChange): Promise<CommitResult> {
    if (this.timers.size === 0) return await this.write(change)
    const started = performance.now()
    let ok = false
    try {
      const r = await this.write(change)
      ok = true
      return r
    } finally {
      const ms = performance.now() - started
      for (const fn of this.timers) { try { fn(ms, ok) } catch { /* an observer never fails a commit */ } }
    }
  }

  private async write (change: LedgerChange): Promise<CommitResult> {
    const ops: BatchOp[] = []
    const now = Date.now()
    const tokenChanges = change.tokens ?? []
    const ids = tokenChanges.map((t) => t.record.tokenId)
    if (new Set(ids).size !== ids.length) throw new RbtError(ErrorCode.INTERNAL, 'a ledger change names the same token twice')
    const tokensCol = this.store.collection<TokenRecord>(Collections.tokens)
    const before = ids.length > 0 ? await tokensCol.getMany(ids) : []

    // preconditions
    tokenChanges.forEach(({ record, expect }, i) => {
      const old = before[i]
      if (expect === undefined) return
      const fail = (why: string): never => { throw new RbtError(ErrorCode.CONFLICT, `token ${record.tokenId} ${why}`, { details: { tokenId: record.tokenId } }) }
      if (expect.exists === true && old === undefined) fail('is not stored on this node')
      if (expect.exists === false && old !== undefined) fail('already exists')
      if (expect.status !== undefined && (old === undefined || !expect.status.includes(old.status))) fail(`is ${old?.status ?? 'absent'}, expected ${expect.status.join(' or ')}`)
      if (expect.owner !== undefined && old?.owner !== expect.owner) fail(`is owned by ${old?.owner ?? 'nobody'}, not ${expect.owner}`)
      if (expect.latestBlockId !== undefined && old?.latestBlockId !== expect.latestBlockId) fail(`is at block ${old?.latestBlockId ?? '(none)'}, expected ${expect.latestBlockId}`)
    })

    if (change.mintIndexes !== undefined && change.mintIndexes.length > 0) {
      const col = this.store.collection<string>(Collections.mintIndex)
      const keys = change.mintIndexes.map((m) => mintIndexKey(m.did, m.index))
      const taken = await col.getMany(keys)
      const clash = taken.findIndex((v) => v !== undefined)
      if (clash >= 0) {
        const m = change.mintIndexes[clash]!
        throw new RbtError(ErrorCode.CONFLICT, `token index ${m.index} was already minted for ${m.did} (token ${taken[clash]!}); choose another start_index`)
      }
      change.mintIndexes.forEach((m, i) => ops.push({ type: 'put', collection: Collections.mintIndex, key: keys[i]!, value: m.tokenId }))
    }

    // balances and owner index
    const deltas = new Map<string, BalanceRecord>()
    const touch = (did: string): BalanceRecord => {
      let b = deltas.get(did)
      if (b === undefined) { b = emptyBalance(did); deltas.set(did, b) }
      return b
    }
    const apply = (r: TokenRecord, sign: 1 | -1): void => {
      const b = touch(r.owner)
      const fam = familyOf(r.kind)
      const sums = (b.sums[fam] ??= {})
      const counts = (b.counts[fam] ??= {})
      sums[r.status] = (sums[r.status] ?? 0) + sign * r.value
      counts[r.status] = (counts[r.status] ?? 0) + sign
      if (fam === 'ft' && r.status === 'Free') {
        const g = `${r.ftName ?? ''}\u0000${r.creator ?? ''}`
        const cur = (b.ftGroups[g] ??= { name: r.ftName ?? '', creator: r.creator ?? '', count: 0, value: 0 })
        cur.count += sign
        cur.value += sign * r.value
      }
    }
    tokenChanges.forEach(({ record }, i) => {
      const old = before[i]
      const rec: TokenRecord = { ...record, createdAt: old?.createdAt ?? record.createdAt ?? now, updatedAt: now }
      const freeFt = freeFtKeyOf(rec)
      if (old !== undefined) {
        apply(old, -1)
        const k = ownerKey(old.owner, familyOf(old.kind), old.status, old.tokenId)
        const nk = ownerKey(rec.owner, familyOf(rec.kind), rec.status, rec.tokenId)
        if (k !== nk) ops.push({ type: 'del', collection: Collections.ownerIndex, key: k })
        const oldFreeFt = freeFtKeyOf(old)
        if (oldFreeFt !== undefined && oldFreeFt !== freeFt) ops.push({ type: 'del', collection: Collections.freeFts, key: oldFreeFt })
      }
      apply(rec, 1)
      const entry: OwnerIndexEntry = { value: rec.value, tokenType: rec.tokenType, kind: rec.kind }
      ops.push({ type: 'put', collection: Collections.ownerIndex, key: ownerKey(rec.owner, familyOf(rec.kind), rec.status, rec.tokenId), value: entry })
      if (freeFt !== undefined) ops.push({ type: 'put', collection: Collections.freeFts, key: freeFt, value: rec.value })
      ops.push({ type: 'put', collection: Collections.tokens, key: rec.tokenId, value: rec })
    })
    if (deltas.size > 0) {
      const dids = [...deltas.keys()]
      const stored = await this.store.collection<BalanceRecord>(Collections.balances).getMany(dids)
      dids.forEach((did, i) => {
        const merged = mergeBalance(stored[i] ?? emptyBalance(did), deltas.get(did)!)
        merged.updatedAt = now
        ops.push({ type: 'put', collection: Collections.balances, key: did, value: merged })
      })
    }

    // blocks: one body per distinct envelope, one summary per token entry
    const seenBodies = new Set<string>()
    // a block shared by many tokens is usually one array: digest it once
    const digests = new Map<Uint8Array, string>()
    for (const b of change.blocks ?? []) {
      let d = digests.get(b.envelope)
      if (d === undefined) { d = this.digest(b.envelope); digests.set(b.envelope, d) }
      const bodyKey = bodyKeyOf(b.record.hash, d)
      if (!seenBodies.has(bodyKey)) {
        seenBodies.add(bodyKey)
        ops.push({ type: 'put', collection: Collections.blockBodies, key: bodyKey, value: Buffer.from(b.envelope).toString('base64') })
      }
      ops.push({ type: 'put', collection: Collections.blocks, key: blockKey(b.record.tokenId, b.record.number), value: { ...b.record, bodyKey } })
    }

    for (const [tokenId, text] of Object.entries(change.contents ?? {})) {
      ops.push({ type: 'put', collection: Collections.tokenContent, key: tokenId, value: text })
    }

    const participants = change.txParticipants ?? (change.transactions ?? []).flatMap((t) => {
      const list = [{ txId: t.txId, did: t.initiator, role: 'initiator', epoch: t.epoch }]
      if (t.receiver !== undefined && t.receiver !== t.initiator) list.push({ txId: t.txId, did: t.receiver, role: 'receiver', epoch: t.epoch })
      return list
    })
    for (const t of change.transactions ?? []) {
      ops.push({ type: 'put', collection: Collections.transactions, key: t.txId, value: { ...t, updatedAt: now } })
    }
    for (const p of participants) {
      ops.push({ type: 'put', collection: Collections.txByDid, key: txByDidKey(p.did, p.epoch, p.txId), value: { role: p.role } })
    }

    for (const op of change.extra ?? []) {
      if ((Object.values(Collections) as string[]).includes(op.collection)) throw new RbtError(ErrorCode.INTERNAL, `extra ops may not write the token collection ${op.collection}`)
      ops.push(op)
    }
    await this.store.batch(ops, { sync: true })
    for (const fn of this.listeners) { try { fn(change) } catch { /* a listener never fails a commit */ } }
    return { ops: ops.length }
  }
}

function mergeBalance (base: BalanceRecord, delta: BalanceRecord): BalanceRecord {
  const out: BalanceRecord = structuredClone(base)
  for (const part of ['sums', 'counts'] as const) {
    for (const [fam, byStatus] of Object.entries(delta[part])) {
      const target = (out[part][fam as keyof BalanceRecord['sums']] ??= {})
      for (const [st, v] of Object.entries(byStatus ?? {})) {
        const next = (target[st as TokenStatus] ?? 0) + (v ?? 0)
        if (next === 0) delete target[st as TokenStatus]
        else target[st as TokenStatus] = next
      }
    }
  }
  for (const [k, g] of Object.entries(delta.ftGroups)) {
    const cur = out.ftGroups[k] ?? { name: g.name, creator: g.creator, count: 0, value: 0 }
    cur.count += g.count
    cur.value += g.value
    if (cur.count === 0) delete out.ftGroups[k]
    else out.ftGroups[k] = cur
  }
  return out
}

/** Consensus records (src/consensus/records.ts) a token's txId may name: a sender's transfer, keyed by txid, and a quorum's vote, keyed `<quorum DID>/<txid>`. */
const CONSENSUS_OUTGOING = 'cs-outgoing'
const CONSENSUS_VOTES = 'cs-votes'
/** Part-token ancestors a quorum or receiver validated and keeps with their chains (src/consensus/bundle.ts). */
const CONSENSUS_ANCESTORS = 'cs-ancestors'
/** Block transaction type of a token burnt for FTs (tokenchain TransactionType.BURNT_FOR_FT). */
const BURNT_FOR_FT_BLOCK = '13'
/** Statuses in which a DID holds a token: its record must be at the end of its chain. */
const HELD_STATUSES: ReadonlySet<string> = new Set([TokenStatus.Free, TokenStatus.Locked, TokenStatus.Pledged])

export interface AuditReport {
  tokens: number
  blocks: number
  transactions: number
  problems: string[]
}

/**
 * Walks every token collection and checks that they agree: each token's latest block is stored and
 * is the last of its chain, every stored block belongs to a stored token (or, on a quorum, to a
 * transfer it signed: its copy of the block it signed), the owner index holds
 * exactly one entry per token (a validator's remembered part-token ancestors are explained by their
 * 'cs-ancestors' record), the free-FT index exactly one per Free FT, each token's transaction
 * record exists and names it (or, for a token consensus locked or pledged, the transfer's or the
 * vote's record exists), and the balance records equal the sums recomputed from the token records.
 */
export async function auditLedger (store: KvStore): Promise<AuditReport> {
  const problems: string[] = []
  const tokens = new Map<string, TokenRecord>()
  for await (const [k, v] of store.collection<TokenRecord>(Collections.tokens).entries()) {
    if (k !== v.tokenId) problems.push(`token key ${k} holds ${v.tokenId}`)
    tokens.set(k, v)
  }
  const lastBlock = new Map<string, BlockRecord>()
  let blocks = 0
  const bodies = store.collection<string>(Collections.blockBodies)
  const bodyKeys = new Set<string>()
  // blocks of tokens not stored here: a quorum keeps the blocks it signed (its pledge's evidence),
  // which are single blocks of other DIDs' chains, each naming a transaction the quorum recorded;
  // a receiver keeps the chains of a part token's parents (burnt at the sender) and of an FT's
  // backing tokens (burnt for the FT by its creator), which it validated
  const foreign: Array<[string, BlockRecord]> = []
  const blockIds = new Set<string>()
  // part token → the token it was split from, from the token records and the burn blocks' children
  const parentOf = new Map<string, string>()
  for (const t of tokens.values()) if (t.parent !== undefined) parentOf.set(t.tokenId, t.parent)
  for await (const [k, b] of store.collection<BlockRecord>(Collections.blocks).entries()) {
    blocks++
    for (const c of b.childTokens ?? []) if (!parentOf.has(c)) parentOf.set(c, b.tokenId)
    blockIds.add(`${b.tokenId}\u0000${b.blockId}`)
    if (!tokens.has(b.tokenId)) {
      foreign.push([k, b])
      bodyKeys.add(b.bodyKey)
      continue
    }
    const prev = lastBlock.get(b.tokenId)
    if (prev === undefined ? b.number !== 0 : b.number !== prev.number + 1) problems.push(`chain of ${b.tokenId} has a gap before block ${b.number}`)
    lastBlock.set(b.tokenId, b)
    bodyKeys.add(b.bodyKey)
  }
  const keys = [...bodyKeys]
  const present = keys.length > 0 ? await bodies.getMany(keys) : []
  keys.forEach((k, i) => { if (present[i] === undefined) problems.push(`block body ${k} is missing`) })

  const txCol = store.collection<TransactionRecord>(Collections.transactions)
  const signedIds = [...new Set(foreign.map(([, b]) => b.txId).filter((x): x is string => x !== undefined))]
  const signedTxs = signedIds.length > 0 ? await txCol.getMany(signedIds) : []
  const signedBy = new Map(signedIds.map((id, i) => [id, signedTxs[i]]))
  const ancestors = new Set<string>()
  for (const id of tokens.keys()) {
    for (let p = parentOf.get(id); p !== undefined && !tokens.has(p) && !ancestors.has(p); p = parentOf.get(p)) ancestors.add(p)
  }
  const ftCreators = new Set([...tokens.values()].filter((t) => t.kind === 'ft' && t.creator !== undefined).map((t) => t.creator!))
  const foreignLast = new Map<string, BlockRecord>()
  for (const [, b] of foreign) foreignLast.set(b.tokenId, b)
  // a validator (quorum or receiver) keeps the chain of each part-token ancestor it validated, with
  // a record saying so, whether or not it holds a token of that line
  const foreignIds = [...foreignLast.keys()]
  const remembered = foreignIds.length > 0 ? await store.collection(CONSENSUS_ANCESTORS).getMany(foreignIds) : []
  foreignIds.forEach((id, i) => { if (remembered[i] !== undefined) ancestors.add(id) })
  for (const [k, b] of foreign) {
    if (ancestors.has(b.tokenId)) continue
    const last = foreignLast.get(b.tokenId)!
    if (last.transactionType === BURNT_FOR_FT_BLOCK && ftCreators.has(last.owner)) continue
    const tx = b.txId !== undefined ? signedBy.get(b.txId) : undefined
    if (tx === undefined || tx.extra?.role !== 'quorum') problems.push(`block ${k} belongs to no stored token`)
  }
  const txIds = [...new Set([...tokens.values()].map((t) => t.txId).filter((x): x is string => x !== undefined))]
  const txs = txIds.length > 0 ? await txCol.getMany(txIds) : []
  const txById = new Map(txIds.map((id, i) => [id, txs[i]]))
  const txTokens = new Map<string, Set<string>>()
  for (const [id, t] of txById) if (t !== undefined) txTokens.set(id, new Set(t.tokens))
  // consensus keeps in a token's txId the transfer that locked or pledged it, also once the lock is
  // released: the sender's own transfer record, or the vote of the quorum DID that holds it, explains it
  const unlisted = [...tokens.values()].filter((t) => t.txId !== undefined && txTokens.get(t.txId)?.has(t.tokenId) !== true)
  const outKeys = [...new Set(unlisted.map((t) => t.txId!))]
  const voteKeys = [...new Set(unlisted.map((t) => `${t.owner}/${t.txId!}`))]
  const outs = outKeys.length > 0 ? await store.collection(CONSENSUS_OUTGOING).getMany(outKeys) : []
  const votes = voteKeys.length > 0 ? await store.collection(CONSENSUS_VOTES).getMany(voteKeys) : []
  const consensusRefs = new Set([...outKeys.filter((_, i) => outs[i] !== undefined), ...voteKeys.filter((_, i) => votes[i] !== undefined)])

  const ownerEntries = new Set<string>()
  for await (const k of store.collection(Collections.ownerIndex).keys()) ownerEntries.add(k)

  const expected = new Map<string, BalanceRecord>()
  for (const t of tokens.values()) {
    const last = lastBlock.get(t.tokenId)
    if (last === undefined) problems.push(`token ${t.tokenId} has no chain`)
    else if ((last.blockId !== t.latestBlockId || last.number !== t.latestBlockNumber) &&
      // a token this node no longer holds may have later blocks here (its chain came again as the
      // parent chain of a part token received since): its own latest block must still be in the chain
      !(!HELD_STATUSES.has(t.status) && last.number > t.latestBlockNumber && blockIds.has(`${t.tokenId}\u0000${t.latestBlockId}`)) &&
      // a token Locked by a transfer whose decided block is stored while its delivery runs (the
      // sender writes the block first, the token's record once the receiver took it)
      !(t.status === TokenStatus.Locked && last.number === t.latestBlockNumber + 1 && last.txId !== undefined && last.txId === t.txId && blockIds.has(`${t.tokenId}\u0000${t.latestBlockId}`))) problems.push(`token ${t.tokenId} says latest block ${t.latestBlockId}, the chain ends at ${last.blockId}`)
    if (t.txId !== undefined && !consensusRefs.has(t.txId) && !consensusRefs.has(`${t.owner}/${t.txId}`)) {
      if (txById.get(t.txId) === undefined) problems.push(`token ${t.tokenId} names missing transaction ${t.txId}`)
      else if (txTokens.get(t.txId)?.has(t.tokenId) !== true) problems.push(`transaction ${t.txId} does not list token ${t.tokenId}`)
    }
    const ok = ownerKey(t.owner, familyOf(t.kind), t.status, t.tokenId)
    if (!ownerEntries.delete(ok)) problems.push(`owner index lacks ${ok}`)
    let b = expected.get(t.owner)
    if (b === undefined) { b = emptyBalance(t.owner); expected.set(t.owner, b) }
    const fam = familyOf(t.kind)
    const s = (b.sums[fam] ??= {}); s[t.status] = (s[t.status] ?? 0) + t.value
    const c = (b.counts[fam] ??= {}); c[t.status] = (c[t.status] ?? 0) + 1
  }
  for (const k of ownerEntries) problems.push(`owner index entry ${k} matches no token state`)
  const freeFts = new Set<string>()
  for await (const k of store.collection(Collections.freeFts).keys()) if (k !== FREE_FT_INDEX_VERSION_KEY) freeFts.add(k)
  for (const t of tokens.values()) {
    const k = freeFtKeyOf(t)
    if (k !== undefined && !freeFts.delete(k)) problems.push(`free-FT index lacks ${t.tokenId} of ${t.owner}`)
  }
  for (const k of freeFts) problems.push(`free-FT index entry ${k.replaceAll('\u0000', '/')} matches no Free FT`)

  const stored = new Map<string, BalanceRecord>()
  for await (const [k, v] of store.collection<BalanceRecord>(Collections.balances).entries()) stored.set(k, v)
  for (const did of new Set([...expected.keys(), ...stored.keys()])) {
    const want = expected.get(did) ?? emptyBalance(did)
    const have = stored.get(did) ?? emptyBalance(did)
    for (const part of ['sums', 'counts'] as const) {
      const fams = new Set([...Object.keys(want[part]), ...Object.keys(have[part])])
      for (const fam of fams) {
        const w = want[part][fam as 'rbt'] ?? {}
        const h = have[part][fam as 'rbt'] ?? {}
        for (const st of new Set([...Object.keys(w), ...Object.keys(h)])) {
          const wv = w[st as TokenStatus] ?? 0
          const hv = h[st as TokenStatus] ?? 0
          if (wv !== hv) problems.push(`balance of ${did} ${fam}/${st} ${part}: stored ${hv}, tokens say ${wv}`)
        }
      }
    }
  }
  let transactions = 0
  for await (const _k of txCol.keys()) transactions++
  return { tokens: tokens.size, blocks, transactions, problems }
}
