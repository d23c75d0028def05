/**
 * Bounded memos that drop the least recently used entry first (a read counts as a use): for caches
 * and memos that must not grow with the life of the process. Backed by lru-cache (see
 * docs/decisions/0018-lru-cache.md): a Map trimmed from its oldest key scans the holes earlier
 * deletions left at its front, so at 100,000 entries each insert that evicted cost about 75 µs.
 */
import { LRUCache } from 'lru-cache'

export class Lru<V extends {}> {
  private readonly cache: LRUCache<string, V>

  constructor (readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`an LRU memo needs a positive size, not ${max}`)
    this.cache = new LRUCache<string, V>({ max })
  }

  get size (): number { return this.cache.size }

  get (k: string): V | undefined { return this.cache.get(k) }

  set (k: string, v: V): void { this.cache.set(k, v) }

  delete (k: string): void { this.cache.delete(k) }

  clear (): void { this.cache.clear() }
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
