/**
 * Bounded memos that drop the least recently used entry first (a read counts as a use): for caches
 * and memos that must not grow with the life of the process.
 */
export class Lru<V> {
  private readonly map = new Map<string, V>()

  constructor (readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`an LRU memo needs a positive size, not ${max}`)
  }

  get size (): number { return this.map.size }

  get (k: string): V | undefined {
    const v = this.map.get(k)
    // most recently used last: a Map keeps insertion order
    if (v !== undefined) { this.map.delete(k); this.map.set(k, v) }
    return v
  }

  set (k: string, v: V): void {
    this.map.delete(k)
    this.map.set(k, v)
    if (this.map.size > this.max) this.map.delete(this.map.keys().next().value!)
  }

  delete (k: string): void { this.map.delete(k) }

  clear (): void { this.map.clear() }
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
