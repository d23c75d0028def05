/**
 * Bounded memos that drop the least recently used entry first (a read counts as a use): for caches
 * and memos that must not grow with the life of the process. Backed by lru-cache (see
 * docs/decisions/0018-lru-cache.md): a Map trimmed from its oldest key scans the holes earlier
 * deletions left at its front, so at 100,000 entries each insert that evicted cost about 75 µs.
 */
import { LRUCache } from 'lru-cache'

/**
 * A memo whose entries differ much in size (texts used as keys, say) is bounded by its bytes as
 * well as by their number: `maxBytes` of what `sizeOf` counts for each entry (an entry larger
 * than that is not kept).
 */
export interface LruBytes<V> { maxBytes: number, sizeOf: (value: V, key: string) => number }

export class Lru<V extends {}> {
  private readonly cache: LRUCache<string, V>

  constructor (readonly max: number, bytes?: LruBytes<V>) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`an LRU memo needs a positive size, not ${max}`)
    if (bytes !== undefined && (!Number.isSafeInteger(bytes.maxBytes) || bytes.maxBytes < 1)) throw new RangeError(`an LRU memo needs a positive byte size, not ${bytes.maxBytes}`)
    this.cache = new LRUCache<string, V>(bytes === undefined
      ? { max }
      : { max, maxSize: bytes.maxBytes, maxEntrySize: bytes.maxBytes, sizeCalculation: (v, k) => Math.max(1, bytes.sizeOf(v, k)) })
  }

  get size (): number { return this.cache.size }

  /** What `sizeOf` counts for the entries held (0 for a memo bounded by number only). */
  get bytes (): number { return this.cache.calculatedSize ?? 0 }

  get (k: string): V | undefined { return this.cache.get(k) }

  set (k: string, v: V): void { this.cache.set(k, v) }

  delete (k: string): void { this.cache.delete(k) }

  clear (): void { this.cache.clear() }

  /** The entries held, most recently used first (not counted as uses). */
  entries (): IterableIterator<[string, V]> { return this.cache.entries() }
}

/** A set of keys on an `Lru` (`has` counts as a use): the envelopes whose signatures a node verified, say. */
export class BoundedSet {
  private readonly lru: Lru<true>

  constructor (max: number) { this.lru = new Lru(max) }

  get max (): number { return this.lru.max }
  get size (): number { return this.lru.size }
  has (key: string): boolean { return this.lru.get(key) === true }
  add (key: string): this { this.lru.set(key, true); return this }
  delete (key: string): void { this.lru.delete(key) }
  clear (): void { this.lru.clear() }
}
