import { existsSync } from 'node:fs'
import type { ExplorerStatus } from '../../api/contract/routes.js'
import type { ExplorerSource } from './explorer-source.js'
import type { LedgerChange } from '../../storage/token-ledger.js'
import { Collections, blockKey, type BlockRecord, type TokenRecord, type TransactionRecord } from '../../storage/token-records.js'
import type { Logger } from '../../util/logger.js'
import { DIALECT_NAMES, EXPLORER_SERVICE } from './db-types.js'
import { connectFailureMessage, dbErrorMessage, openConnection, type DbTarget } from './drivers.js'
import { currentTables } from './migrations/index.js'
import { quoteIdent } from './schema.js'
import { deleteWhereSql, migrate, rowValues, upsertSql, type SqlConn } from './sql.js'
import { assetRow, blockRow, didRow, nftStateRow, tokenRow, txRows, type DidInfo, type Row } from './rows.js'
import { nftChainItem } from '../nft/nft-chain.js'

export { kvExplorerSource, type ExplorerSource } from './explorer-source.js'

const CHUNK = 500

export interface ExplorerSyncOptions {
  source: ExplorerSource
  target: DbTarget
  log: Logger
  /** Test seam: how a connection is opened (default: the dialect's driver). */
  connect?: (t: DbTarget) => Promise<SqlConn>
  /** Test builds: while this file exists every database call fails, as if the server were down. */
  faultFile?: string
  backoff?: { initialMs: number, maxMs: number }
  /** How often DIDs (which change outside the token ledger) are compared; default 2 s. */
  pollMs?: number
}

type State = ExplorerStatus['state']

/**
 * Keeps a relational database in step with the node's token storage. On every (re)connection it
 * applies the schema migrations and reconciles the whole store (backfill); afterwards it follows
 * the token ledger's commits, re-reading each touched record from storage and upserting it. Every
 * write is an idempotent upsert keyed by the record's own id, so a restart, a replay or a retry
 * after a failure never duplicates a row. A failing database never reaches the node: the loop
 * retries with exponential backoff and keeps what it still has to write.
 */
export class ExplorerSync {
  private state: State = 'connecting'
  private conn?: SqlConn
  private running = false
  private loopDone?: Promise<void>
  private wake?: () => void
  private needFull = true
  private readonly dirty = { tokens: new Set<string>(), blocks: new Set<string>(), txs: new Set<string>() }
  private readonly syncedDids = new Set<string>()
  private lastError: string | null = null
  private lastSyncAt: number | null = null
  private lastFullSyncAt: number | null = null
  private retries = 0
  private nextRetryAt: number | null = null
  private rows: ExplorerStatus['rows'] = { dids: 0, tokens: 0, transactions: 0, blocks: 0, nfts: 0, fts: 0, contracts: 0 }
  private readonly tables = currentTables()

  constructor (private readonly opts: ExplorerSyncOptions) {}

  get target (): DbTarget { return this.opts.target }

  start (): void {
    if (this.running) return
    this.running = true
    this.loopDone = this.loop()
  }

  async stop (): Promise<void> {
    this.running = false
    this.wake?.()
    await this.loopDone
    await this.conn?.close().catch(() => {})
    this.conn = undefined
    this.state = 'stopped'
  }

  /** Records what a ledger commit touched; the loop writes it on its next pass. */
  noteChange (change: LedgerChange): void {
    for (const t of change.tokens ?? []) this.dirty.tokens.add(t.record.tokenId)
    for (const b of change.blocks ?? []) this.dirty.blocks.add(blockKey(b.record.tokenId, b.record.number))
    for (const t of change.transactions ?? []) this.dirty.txs.add(t.txId)
    this.wake?.()
  }

  private pending (): number { return this.dirty.tokens.size + this.dirty.blocks.size + this.dirty.txs.size }

  status (): ExplorerStatus {
    const t = this.opts.target
    return {
      configured: true,
      service: EXPLORER_SERVICE,
      db_type: DIALECT_NAMES[t.dialect],
      database: t.dialect === 'sqlite' ? t.name : `${t.address}:${t.port ?? ''}/${t.name}`,
      state: this.state === 'in_sync' && (this.pending() > 0 || this.needFull) ? 'syncing' : this.state,
      pending: this.pending(),
      last_error: this.lastError,
      last_sync_at: this.lastSyncAt,
      last_full_sync_at: this.lastFullSyncAt,
      retries: this.retries,
      next_retry_at: this.nextRetryAt,
      rows: { ...this.rows }
    }
  }

  private async loop (): Promise<void> {
    const initial = this.opts.backoff?.initialMs ?? 500
    const max = this.opts.backoff?.maxMs ?? 30_000
    let delay = initial
    while (this.running) {
      try {
        if (this.conn === undefined) {
          this.state = 'connecting'
          this.conn = this.guarded(await this.connect())
          const applied = await migrate(this.conn)
          if (applied.length > 0) this.opts.log.info(`explorer: applied schema migrations ${applied.join(', ')}`)
          this.needFull = true
        }
        if (this.needFull) {
          this.state = 'backfilling'
          await this.fullPass(this.conn)
          this.needFull = false
          this.lastFullSyncAt = Date.now()
        } else {
          this.state = 'syncing'
          await this.incrementalPass(this.conn)
        }
        await this.countRows(this.conn)
        this.lastSyncAt = Date.now()
        if (this.retries > 0) this.opts.log.info(`explorer: database reachable again after ${this.retries} failed attempt(s); caught up`)
        this.lastError = null
        this.retries = 0
        this.nextRetryAt = null
        delay = initial
        this.state = 'in_sync'
        if (this.pending() === 0) await this.idle(this.opts.pollMs ?? 2000)
      } catch (e) {
        if (!this.running) break
        this.lastError = dbErrorMessage(e)
        this.retries++
        this.state = 'retrying'
        this.nextRetryAt = Date.now() + delay
        if (this.retries === 1 || this.retries % 10 === 0) this.opts.log.warn(`explorer: database write failed (${this.lastError}); retrying in ${delay} ms`)
        const c = this.conn
        this.conn = undefined
        await c?.close().catch(() => {})
        await this.idle(delay, true)
        delay = Math.min(delay * 2, max)
      }
    }
  }

  /**
   * Opens the connection. For a database server, a failure is reported by its class only (see
   * `connectFailureMessage`): the status must not serve as a port scanner of the configured host.
   */
  private async connect (): Promise<SqlConn> {
    const t = this.opts.target
    try {
      return await (this.opts.connect ?? openConnection)(t)
    } catch (e) {
      if (t.dialect === 'sqlite') throw e
      throw new Error(connectFailureMessage(e))
    }
  }

  /** Waits `ms`, or less when new work arrives (unless `full`) or the service stops. */
  private async idle (ms: number, full = false): Promise<void> {
    await new Promise<void>((resolve) => {
      const timer = setTimeout(done, ms)
      function done (): void { clearTimeout(timer); resolve() }
      this.wake = full ? () => { if (!this.running) done() } : done
    })
    this.wake = undefined
  }

  /** Wraps a connection so the test fault file makes every call fail. */
  private guarded (conn: SqlConn): SqlConn {
    const file = this.opts.faultFile
    if (file === undefined) return conn
    const check = (): void => { if (existsSync(file)) throw new Error('database unavailable (test fault hook)') }
    const wrap = (c: SqlConn): SqlConn => ({
      dialect: c.dialect,
      exec: async (sql, p) => { check(); await c.exec(sql, p) },
      query: async (sql, p) => { check(); return await c.query(sql, p) },
      transaction: async (fn) => { check(); return await c.transaction(async (tx) => await fn(wrap(tx))) },
      close: async () => { await c.close() }
    })
    return wrap(conn)
  }

  private async fullPass (conn: SqlConn): Promise<void> {
    this.syncedDids.clear()
    await this.syncDids(conn)
    const src = this.opts.source
    await this.inChunks(src.tokens(), async (list) => { await conn.transaction(async (tx) => { await this.writeTokens(tx, list) }) })
    await this.inChunks(src.transactions(), async (list) => { await conn.transaction(async (tx) => { await this.writeTxs(tx, list) }) })
    await this.inChunks(src.blocks(), async (list) => { await conn.transaction(async (tx) => { await this.writeBlocks(tx, list) }) })
    await this.setState(conn, 'last_full_sync_at', String(Date.now()))
  }

  private async incrementalPass (conn: SqlConn): Promise<void> {
    await this.syncDids(conn)
    if (this.pending() === 0) return
    const take = (s: Set<string>): string[] => { const out = [...s]; s.clear(); return out }
    const tokens = take(this.dirty.tokens)
    const txs = take(this.dirty.txs)
    const blocks = take(this.dirty.blocks)
    try {
      const src = this.opts.source
      const collect = async <T>(it: AsyncIterable<T>): Promise<T[]> => { const out: T[] = []; for await (const v of it) out.push(v); return out }
      const [tr, xr, br] = await Promise.all([collect(src.tokens(tokens)), collect(src.transactions(txs)), collect(src.blocks(blocks))])
      // one database transaction per pass: a commit's token, transaction and block rows land together
      await conn.transaction(async (tx) => {
        await this.writeTokens(tx, tr)
        await this.writeTxs(tx, xr)
        await this.writeBlocks(tx, br)
      })
    } catch (e) {
      for (const k of tokens) this.dirty.tokens.add(k)
      for (const k of txs) this.dirty.txs.add(k)
      for (const k of blocks) this.dirty.blocks.add(k)
      throw e
    }
  }

  private async inChunks<T> (it: AsyncIterable<T>, fn: (list: T[]) => Promise<void>): Promise<void> {
    let buf: T[] = []
    for await (const v of it) {
      buf.push(v)
      if (buf.length >= CHUNK) { await fn(buf); buf = [] }
    }
    if (buf.length > 0) await fn(buf)
  }

  private async upsert (conn: SqlConn, table: string, row: Row): Promise<void> {
    const t = this.tables.get(table)!
    await conn.exec(upsertSql(conn.dialect, t), rowValues(t, row))
  }

  private async syncDids (conn: SqlConn): Promise<void> {
    const fresh = (await this.opts.source.dids()).filter((d) => !this.syncedDids.has(d.did))
    if (fresh.length === 0) return
    await conn.transaction(async (tx) => { for (const d of fresh) await this.upsert(tx, 'explorer_dids', didRow(d)) })
    for (const d of fresh) this.syncedDids.add(d.did)
  }

  private async writeTokens (tx: SqlConn, list: TokenRecord[]): Promise<void> {
    const creators = await this.nftCreators(list)
    for (const t of list) {
      await this.upsert(tx, 'explorer_tokens', tokenRow(t))
      const a = assetRow(t, creators.get(t.tokenId))
      if (a !== undefined) await this.upsert(tx, a.table, a.row)
    }
  }

  /** An NFT's creator is the owner of its genesis (deploy) block; before the deploy, the DID holding it. */
  private async nftCreators (list: TokenRecord[]): Promise<Map<string, string>> {
    const nfts = list.filter((t) => t.kind === 'nft')
    const out = new Map<string, string>()
    for await (const b of this.opts.source.blocks(nfts.map((t) => blockKey(t.tokenId, 0)))) out.set(b.tokenId, b.owner)
    for (const t of nfts) if (!out.has(t.tokenId) && t.latestBlockId === '') out.set(t.tokenId, t.owner)
    return out
  }

  private async writeTxs (tx: SqlConn, list: TransactionRecord[]): Promise<void> {
    for (const t of list) {
      const r = txRows(t)
      await this.upsert(tx, 'explorer_transactions', r.tx)
      // link rows are replaced as a whole: the record is the truth
      await tx.exec(deleteWhereSql(tx.dialect, 'explorer_tx_tokens', 'tx_id'), [t.txId])
      await tx.exec(deleteWhereSql(tx.dialect, 'explorer_tx_quorums', 'tx_id'), [t.txId])
      for (const row of r.tokens) await this.upsert(tx, 'explorer_tx_tokens', row)
      for (const row of r.quorums) await this.upsert(tx, 'explorer_tx_quorums', row)
    }
  }

  private async writeBlocks (tx: SqlConn, list: BlockRecord[]): Promise<void> {
    for (const b of list) await this.upsert(tx, 'explorer_blocks', blockRow(b))
    await this.writeNftStates(tx, list)
  }

  /** Blocks of NFTs are also NFT states: decoded through the same view as the NFT chain API. */
  private async writeNftStates (tx: SqlConn, list: BlockRecord[]): Promise<void> {
    const ids = [...new Set(list.map((b) => b.tokenId))]
    const nfts = new Set<string>()
    for await (const t of this.opts.source.tokens(ids)) if (t.kind === 'nft') nfts.add(t.tokenId)
    const blocks = list.filter((b) => nfts.has(b.tokenId))
    const bodies = await this.opts.source.blockBodies(blocks.map((b) => b.bodyKey))
    for (const [i, b] of blocks.entries()) {
      const env = bodies[i]
      let row: Row
      try {
        if (env === undefined) throw new Error(`block body ${b.bodyKey} is missing`)
        row = nftStateRow(b.tokenId, b.number, nftChainItem(b.tokenId, env))
      } catch (e) {
        // a block the node cannot read is left out of the states; it must not stall the export
        this.opts.log.warn(`explorer: NFT ${b.tokenId} block ${b.number} left out of explorer_nft_states: ${(e as Error).message}`)
        continue
      }
      await this.upsert(tx, 'explorer_nft_states', row)
    }
  }

  private async setState (conn: SqlConn, name: string, value: string): Promise<void> {
    await this.upsert(conn, 'explorer_sync_state', { name, value, updated_at: Date.now() })
  }

  private async countRows (conn: SqlConn): Promise<void> {
    const d = conn.dialect
    const n = async (table: string): Promise<number> => Number((await conn.query<{ n: number | string }>(`SELECT COUNT(*) AS ${quoteIdent(d, 'n')} FROM ${quoteIdent(d, table)}`))[0]?.n ?? 0)
    this.rows = {
      dids: await n('explorer_dids'),
      tokens: await n('explorer_tokens'),
      transactions: await n('explorer_transactions'),
      blocks: await n('explorer_blocks'),
      nfts: await n('explorer_nfts'),
      fts: await n('explorer_fts'),
      contracts: await n('explorer_contracts')
    }
  }
}
