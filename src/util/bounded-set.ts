/**
 * A set of strings that keeps at most `max` entries, dropping the least recently used first (a hit
 * in `has` counts as a use). Memos that must not grow with the life of the process use it: the
 * envelopes whose signatures a node verified, say.
 */
export class BoundedSet {
  private readonly set = new Set<string>()

  constructor (readonly max: number) {
    if (!Number.isSafeInteger(max) || max < 1) throw new RangeError(`BoundedSet needs a positive size, not ${max}`)
  }

  get size (): number { return this.set.size }

  has (key: string): boolean {
    if (!this.set.has(key)) return false
    // most recently used last: Set keeps insertion order
    this.set.delete(key)
    this.set.add(key)
    return true
  }

  add (key: string): this {
    if (this.set.has(key)) this.set.delete(key)
    else if (this.set.size >= this.max) {
      const oldest = this.set.values().next()
      if (oldest.done !== true) this.set.delete(oldest.value)
    }
    this.set.add(key)
    return this
  }

  clear (): void { this.set.clear() }
}
