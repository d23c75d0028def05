import { ClassicLevel } from 'classic-level'
import { ErrorCode, RbtError } from '../util/errors.js'
import { rangeOf, type BatchOp, type Collection, type KvStore, type RangeOptions } from './kv-store.js'

// eslint-disable-next-line @typescript-eslint/no-explicit-any
type Sub = any

/**
 * KvStore on classic-level (LevelDB). Collections are sublevels of one database, so a batch over
 * several collections is one LevelDB write batch: atomic, and durable with `sync`.
 * See docs/decisions/0001-storage-engine.md.
 */
export class LevelStore implements KvStore {
  private readonly db: ClassicLevel<string, unknown>
  private readonly subs = new Map<string, Sub>()

  constructor (readonly location: string) {
    this.db = new ClassicLevel<string, unknown>(location, { keyEncoding: 'utf8', valueEncoding: 'json' })
  }

  async open (): Promise<void> {
    try {
      await this.db.open()
    } catch (e) {
      const cause = (e as { cause?: { message?: string } }).cause?.message ?? ''
      const locked = /lock/i.test(cause)
      throw new RbtError(ErrorCode.STORAGE, locked
        ? `the database at ${this.location} is in use by another process (is another node running on this data dir?)`
        : `cannot open the database at ${this.location}: ${cause || (e as Error).message}`, { cause: e })
    }
  }

  async close (): Promise<void> {
    if (this.db.status === 'open' || this.db.status === 'opening') await this.db.close()
  }

  private sub (name: string): Sub {
    let s = this.subs.get(name)
    if (s === undefined) {
      if (!/^[a-z][a-z0-9-]*$/.test(name)) throw new Error(`bad collection name ${name}`)
      s = this.db.sublevel<string, unknown>(name, { keyEncoding: 'utf8', valueEncoding: 'json' })
      this.subs.set(name, s)
    }
    return s
  }

  collection<V = unknown> (name: string): Collection<V> {
    const s = this.sub(name)
    return {
      name,
      // Reads are synchronous once the sublevel is open: LevelDB answers from its memtable and
      // caches in microseconds, while an asynchronous get costs a thread-pool round trip (about
      // 20 times the CPU). A node reads several records per message it handles.
      get: async (key) => (s.status === 'open' ? s.getSync(key) : await s.get(key)) as V | undefined,
      getMany: async (keys) => (s.status === 'open' ? keys.map((k) => s.getSync(k)) : await s.getMany(keys)) as Array<V | undefined>,
      put: async (key, value) => { await s.put(key, value) },
      del: async (key) => { await s.del(key) },
      entries: (opts?: RangeOptions) => s.iterator(rangeOf(opts)) as unknown as AsyncIterable<[string, V]>,
      keys: (opts?: RangeOptions) => s.keys(rangeOf(opts)) as unknown as AsyncIterable<string>,
      count: async (opts?: RangeOptions) => {
        let n = 0
        for await (const _k of s.keys(rangeOf(opts))) n++
        return n
      }
    }
  }

  async batch (ops: BatchOp[], opts: { sync?: boolean } = {}): Promise<void> {
    if (ops.length === 0) return
    const mapped = ops.map((op) => op.type === 'put'
      ? { type: 'put' as const, sublevel: this.sub(op.collection), key: op.key, value: op.value }
      : { type: 'del' as const, sublevel: this.sub(op.collection), key: op.key })
    await this.db.batch(mapped as never, { sync: opts.sync ?? true })
  }
}
