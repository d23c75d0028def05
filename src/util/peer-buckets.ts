/**
 * Token buckets by key (a peer id): each key may spend up to `burst` units at once and gets `perSecond`
 * back every second. At most `maxKeys` keys are tracked (the least recently used go first, starting
 * full again), so a flood of new keys costs a bounded map, not memory without end.
 */
export class PeerBuckets {
  private readonly buckets = new Map<string, { level: number, at: number }>()

  constructor (private readonly perSecond: number, private readonly burst: number, private readonly maxKeys = 4096, private readonly now: () => number = Date.now) {}

  /** Takes `units` from `key`'s bucket: true when there were enough (and they are taken), false otherwise (nothing taken). */
  take (key: string, units = 1): boolean {
    const t = this.now()
    const b = this.buckets.get(key) ?? { level: this.burst, at: t }
    this.buckets.delete(key)
    b.level = Math.min(this.burst, b.level + (t - b.at) / 1000 * this.perSecond)
    b.at = t
    const ok = b.level >= units
    if (ok) b.level -= units
    this.buckets.set(key, b)
    if (this.buckets.size > this.maxKeys) this.buckets.delete(this.buckets.keys().next().value!)
    return ok
  }
}
