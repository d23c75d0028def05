import { ClassicLevel } from 'classic-level'
import { existsSync, readdirSync } from 'node:fs'
import { open as openFile, unlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { rangeOf, type BatchOp, type Collection, type KvStore, type RangeOptions } from './kv-store.js'
import { AckedWrites } from './acked-writes.js'
import { levelDbLossNotes } from './leveldb-log.js'
import { damagedStoreAdvice } from './store-repair-advice.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Sub = any

/** What the store reports about a storage fault and its way back (the node logs these). */
export type StoreEvent =
  | { kind: 'fault', code: ErrorCode, detail: string }
  | { kind: 'probe-failed', attempt: number, detail: string }
  | { kind: 'reopened', checked: number, rewritten: number }
  | { kind: 'reopen-failed', detail: string }
  /** LevelDB dropped damaged parts of its log while opening: records acknowledged once may be gone */
  | { kind: 'recovered-with-loss', notes: string[] }

export interface LevelStoreOptions {
  onEvent?: (e: StoreEvent) => void
  /** Backoff of the write probe after a fault: first and longest wait, ms. */
  probeMinMs?: number
  probeMaxMs?: number
  /** Bytes the probe writes (and removes) to tell whether writes can succeed again. */
  probeBytes?: number
  /** How many of the latest acknowledged records are kept to be checked after a reopen. */
  ackedKeys?: number
}

/** A value already encoded as its JSON text (see `batch`). */
const RAW_TEXT = { valueEncoding: 'utf8' } as const

const NOT_STORAGE_FAULTS = new Set(['LEVEL_DATABASE_NOT_OPEN', 'LEVEL_ENCODING_NOT_SUPPORTED', 'LEVEL_INVALID_KEY',
  'LEVEL_INVALID_VALUE', 'LEVEL_ENCODE_ERROR', 'LEVEL_DECODE_ERROR', 'LEVEL_NOT_SUPPORTED'])

/** Whether a failed write came from the storage underneath (disk full, I/O error, damage), not from its input. */
function isStorageFault (e: unknown): boolean {
  const code = (e as { code?: unknown }).code
  if (code === 'LEVEL_IO_ERROR' || code === 'LEVEL_CORRUPTION') return true
  if (typeof code === 'string' && NOT_STORAGE_FAULTS.has(code)) return false
  return /IO error|Corruption|No space left|ENOSPC|EIO|EROFS|EDQUOT/i.test(errorMessage(e))
}

const isDiskFull = (e: unknown): boolean => /No space left|ENOSPC|EDQUOT|quota/i.test(errorMessage(e)) ||
  (e as { code?: unknown }).code === 'ENOSPC'

/** The refusal every write gets while the store is faulted: typed, and naming no file path. */
function faultError (code: ErrorCode, cause?: unknown): RbtError {
  return new RbtError(code, code === ErrorCode.INSUFFICIENT_STORAGE
    ? 'the disk holding the node\'s data is full: the node takes no writes until space is freed (reads are still served); it resumes by itself once a write can succeed again'
    : 'the node\'s storage failed a write: the node takes no writes until its store has been reopened and checked (reads are still served); it retries by itself',
  cause !== undefined ? { cause } : undefined)
}

/**
 * KvStore on classic-level (LevelDB). Collections are sublevels of one database, so a batch over
 * several collections is one LevelDB write batch: atomic, and durable with `sync`.
 * See docs/decisions/0001-storage-engine.md.
 *
 * A failed write poisons the store for writes: LevelDB's log writer keeps appending after a failed
 * append, and a later record written after the torn one is dropped when the log is replayed, so a
 * write acknowledged after the failure would be lost at the next start. From the first failed
 * write the store refuses every write (INSUFFICIENT_STORAGE when the disk is full, else
 * STORAGE_UNAVAILABLE) while reads go on; a probe with backoff writes a file next to the database
 * until that succeeds, then the database is closed and reopened (the log is replayed into a table)
 * and the latest acknowledged records are checked against it: any that did not come back are
 * written again before writes are taken. See docs/decisions/0011-storage-faults.md.
 */
export class LevelStore implements KvStore {
  private readonly db: ClassicLevel<string, unknown>
  private readonly subs = new Map<string, Sub>()
  private readonly acked: AckedWrites
  private fault: RbtError | undefined
  private recovering: Promise<void> | undefined
  private probeTimer: NodeJS.Timeout | undefined
  private closed = true

  constructor (readonly location: string, private readonly opts: LevelStoreOptions = {}) {
    this.db = new ClassicLevel<string, unknown>(location, { keyEncoding: 'utf8', valueEncoding: 'json' })
    this.acked = new AckedWrites(opts.ackedKeys ?? 4096)
  }

  async open (): Promise<void> {
    // LevelDB would take a database without CURRENT for a new one and delete its files
    if (!existsSync(join(this.location, 'CURRENT')) && existsSync(this.location) &&
      readdirSync(this.location).some((n) => /^MANIFEST-|\.(ldb|sst|log)$/.test(n))) {
      throw new RbtError(ErrorCode.STORAGE, `the database at ${this.location} is damaged (its CURRENT file is missing). ${damagedStoreAdvice(this.location)}`, { details: { storage: 'damaged' } })
    }
    try {
      await this.db.open()
      await Promise.all([...this.subs.values()].map(async (sub) => { await sub.open() }))
      this.closed = false
    } catch (e) {
      throw openError(this.location, e)
    }
    const dropped = levelDbLossNotes(this.location)
    if (dropped.length > 0) this.opts.onEvent?.({ kind: 'recovered-with-loss', notes: dropped })
    // closed and opened again by hand after a fault: the same check as the reopen of the probe
    if (this.fault !== undefined) await this.checkAcked()
  }

  async close (): Promise<void> {
    this.closed = true
    if (this.probeTimer !== undefined) { clearTimeout(this.probeTimer); this.probeTimer = undefined }
    if (this.recovering !== undefined) await this.recovering.catch(() => {})
    if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close()
  }

  /** The refusal writes get now, or undefined when the store takes writes. */
  get writeFault (): RbtError | undefined { return this.fault }

  private sub (name: string): Sub {
    let s = this.subs.get(name)
    if (s === undefined) {
      if (!/^[a-z][a-z0-9-]*$/.test(name)) throw new Error(`bad collection name ${name}`)
      s = this.db.sublevel<string, unknown>(name, { keyEncoding: 'utf8', valueEncoding: 'json' })
      this.subs.set(name, s)
    }
    return s
  }

  /** Reads wait out a reopen in progress instead of failing on the closed database. */
  private async readable (): Promise<void> {
    if (this.recovering !== undefined && this.db.status !== 'open') await this.recovering.catch(() => {})
    // a reopen that failed leaves the database closed until the next attempt
    if (this.fault !== undefined && this.db.status !== 'open') {
      throw new RbtError(ErrorCode.STORAGE_UNAVAILABLE, 'the node\'s store is being reopened after a storage error: try again shortly')
    }
  }

  collection<V = unknown> (name: string): Collection<V> {
    const s = this.sub(name)
    const self = this
    return {
      name,
      // Reads are synchronous once the sublevel is open: LevelDB answers from its memtable and
      // caches in microseconds, while an asynchronous get costs a thread-pool round trip (about
      // 20 times the CPU). A node reads several records per message it handles.
      get: async (key) => {
        if (s.status === 'open') return s.getSync(key) as V | undefined
        await this.readable()
        return await s.get(key) as V | undefined
      },
      getMany: async (keys) => {
        if (s.status === 'open') return keys.map((k) => s.getSync(k)) as Array<V | undefined>
        await this.readable()
        return await s.getMany(keys) as Array<V | undefined>
      },
      put: async (key, value) => { await this.write([{ type: 'put', collection: name, key, value }], async () => { await s.put(key, value) }) },
      del: async (key) => { await this.write([{ type: 'del', collection: name, key }], async () => { await s.del(key) }) },
      entries: (opts?: RangeOptions) => (async function * () {
        await self.readable()
        yield * inChunks(s.iterator(rangeOf(opts)) as unknown as ChunkedIterator<[string, V]>)
      })(),
      keys: (opts?: RangeOptions) => (async function * () {
        await self.readable()
        yield * inChunks(s.keys(rangeOf(opts)) as unknown as ChunkedIterator<string>)
      })(),
      count: async (opts?: RangeOptions) => {
        await this.readable()
        let n = 0
        for await (const _k of inChunks(s.keys(rangeOf(opts)) as unknown as ChunkedIterator<string>)) n++
        return n
      }
    }
  }

  async batch (ops: BatchOp[], opts: { sync?: boolean } = {}): Promise<void> {
    if (ops.length === 0) return
    await this.write(ops, async () => {
      // The same keys and bytes a sublevel's JSON put writes (its prefix, then the key; the JSON
      // text), built here and added to a chained batch one by one: the array form copies and
      // encodes every operation through the sublevel's layers first, which cost half again as
      // much CPU on the commits of a transfer of many tokens (about 1,500 operations).
      const b = this.db.batch()
      let bytes = 0
      try {
        for (const op of ops) {
          const key = (this.sub(op.collection).prefix as string) + op.key
          if (op.type === 'put') {
            const text = JSON.stringify(op.value)
            b.put(key, text, RAW_TEXT)
            bytes += key.length + text.length
          } else {
            b.del(key)
            bytes += key.length
          }
        }
      } catch (e) {
        await b.close()
        throw e
      }
      await b.write({ sync: opts.sync ?? true })
      this.batchBytes += bytes
    })
  }

  /**
   * Characters of keys and JSON values handed to LevelDB by `batch` since the store was made (the
   * bytes of its log, for the ASCII text records are; LevelDB writes them again when it compacts).
   */
  get writtenBytes (): number { return this.batchBytes }
  private batchBytes = 0

  /** Every write goes through here: refused while faulted, remembered once acknowledged. */
  private async write (ops: BatchOp[], apply: () => Promise<void>): Promise<void> {
    if (this.fault !== undefined) throw this.fault
    try {
      await apply()
    } catch (e) {
      if (!isStorageFault(e)) throw e
      // a write that raced the first fault reports the same refusal
      if (this.fault !== undefined) throw this.fault
      this.fault = faultError(isDiskFull(e) ? ErrorCode.INSUFFICIENT_STORAGE : ErrorCode.STORAGE_UNAVAILABLE, e)
      this.opts.onEvent?.({ kind: 'fault', code: this.fault.code, detail: errorMessage(e) })
      this.scheduleProbe(1)
      throw this.fault
    }
    this.acked.record(ops)
  }

  private scheduleProbe (attempt: number): void {
    if (this.closed || this.probeTimer !== undefined) return
    const min = this.opts.probeMinMs ?? 250
    const max = this.opts.probeMaxMs ?? 10_000
    const wait = Math.min(max, min * 2 ** Math.min(attempt - 1, 16))
    this.probeTimer = setTimeout(() => {
      this.probeTimer = undefined
      this.recovering = this.recover(attempt).finally(() => { this.recovering = undefined })
    }, wait)
    this.probeTimer.unref()
  }

  /** Probes, then reopens and checks; on any failure schedules the next attempt. */
  private async recover (attempt: number): Promise<void> {
    if (this.closed) return
    try {
      await this.probe()
    } catch (e) {
      if (isDiskFull(e) && this.fault?.code !== ErrorCode.INSUFFICIENT_STORAGE) this.fault = faultError(ErrorCode.INSUFFICIENT_STORAGE, e)
      this.opts.onEvent?.({ kind: 'probe-failed', attempt, detail: errorMessage(e) })
      this.scheduleProbe(attempt + 1)
      return
    }
    try {
      await this.reopenAndCheck()
    } catch (e) {
      this.opts.onEvent?.({ kind: 'reopen-failed', detail: errorMessage(e) })
      this.scheduleProbe(attempt + 1)
    }
  }

  /** Writes, syncs and removes a file next to the database: throws while the disk refuses writes. */
  private async probe (): Promise<void> {
    const path = join(dirname(this.location), '.write-probe')
    const fh = await openFile(path, 'w')
    try {
      const chunk = Buffer.alloc(1 << 16, 0x5a)
      const total = this.opts.probeBytes ?? 4 << 20
      for (let done = 0; done < total; done += chunk.length) await fh.write(chunk)
      await fh.sync()
    } finally {
      await fh.close().catch(() => {})
      await unlink(path).catch(() => {})
    }
  }

  private async reopenAndCheck (): Promise<void> {
    if (this.db.status === 'open') await this.db.close()
    if (this.closed) return
    await this.db.open()
    // sublevels stay closed when their database closes: each is opened again
    await Promise.all([...this.subs.values()].map(async (sub) => { await sub.open() }))
    if (this.closed) return
    await this.checkAcked()
  }

  /** After a reopen: the latest acknowledged records must all be there; writes again any that are not, then takes writes. */
  private async checkAcked (): Promise<void> {
    const expected = this.acked.entries()
    const missing: BatchOp[] = []
    for (const [collection, key, want] of expected) {
      const have = this.sub(collection).getSync(key)
      if (want.deleted ? have !== undefined : JSON.stringify(have) !== JSON.stringify(want.value)) {
        missing.push(want.deleted ? { type: 'del', collection, key } : { type: 'put', collection, key, value: want.value })
      }
    }
    if (missing.length > 0) {
      const mapped = missing.map((op) => op.type === 'put'
        ? { type: 'put' as const, sublevel: this.sub(op.collection), key: op.key, value: op.value }
        : { type: 'del' as const, sublevel: this.sub(op.collection), key: op.key })
      await this.db.batch(mapped as never, { sync: true })
    }
    this.acked.clear()
    this.fault = undefined
    this.opts.onEvent?.({ kind: 'reopened', checked: expected.length, rewritten: missing.length })
  }
}

/** The error of a database that does not open: in use, damaged (with the way back), or else. */
export function openError (location: string, e: unknown): RbtError {
  const cause = (e as { cause?: { message?: string } }).cause?.message ?? ''
  const text = cause !== '' ? cause : errorMessage(e)
  // details.storage tells a start that fails on it whether starting again can help (src/cli/start-failure.ts)
  if (/lock/i.test(text)) return new RbtError(ErrorCode.STORAGE, `the database at ${location} is in use by another process (is another node running on this data dir?)`, { cause: e, details: { storage: 'locked' } })
  if (/corrupt|no meta-|missing files|MANIFEST|CURRENT/i.test(text)) {
    return new RbtError(ErrorCode.STORAGE, `the database at ${location} is damaged (${text}). ${damagedStoreAdvice(location)}`, { cause: e, details: { storage: 'damaged' } })
  }
  return new RbtError(ErrorCode.STORAGE, `cannot open the database at ${location}: ${text}`, { cause: e, details: { storage: 'io' } })
}

interface ChunkedIterator<T> { nextv: (size: number) => Promise<T[]>, close: () => Promise<void> }

/**
 * The entries of a LevelDB iterator, read a chunk at a time. Iterating it entry by entry costs a
 * thread-pool round trip for the first entry and another for the rest, plus a promise per entry;
 * most scans here (a token's chain, a DID's tokens, an index range) have a few to a few dozen
 * entries and now take one round trip (about 30% less CPU per scan, decisions/0015). A consumer
 * that stops early closes the iterator, as before.
 */
async function * inChunks<T> (it: ChunkedIterator<T>): AsyncGenerator<T> {
  try {
    for (let size = 100; ; size = 1000) {
      const chunk = await it.nextv(size)
      if (chunk.length === 0) return
      yield * chunk
    }
  } finally {
    await it.close()
  }
}
