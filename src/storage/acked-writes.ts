import type { BatchOp } from './kv-store.js'

export interface AckedValue { deleted: boolean, value?: unknown }

interface Entry extends AckedValue { seq: number }

/**
 * The latest acknowledged records, by collection and key, each with the value (or deletion) last
 * acknowledged for it: what a reopened store must hold. Bounded: past `limit` keys the oldest
 * acknowledged are forgotten (they were synced well before the tail of the log, where a failed
 * append tears it). Values are kept by reference, not copied. Recording is O(1) per record: the
 * order of acknowledgement is a queue of (key, sequence) beside the map, so forgetting the oldest
 * never walks the map from its start (V8 maps keep deleted slots until they are rebuilt).
 */
export class AckedWrites {
  private readonly map = new Map<string, Entry>()
  private queue: Array<[string, number]> = []
  private head = 0
  private seq = 0

  constructor (private readonly limit: number) {}

  record (ops: readonly BatchOp[]): void {
    if (this.limit <= 0) return
    for (const op of ops) {
      const k = `${op.collection}\u0000${op.key}`
      const seq = ++this.seq
      this.map.set(k, op.type === 'put' ? { deleted: false, value: op.value, seq } : { deleted: true, seq })
      this.queue.push([k, seq])
    }
    while (this.map.size > this.limit && this.head < this.queue.length) {
      const [k, seq] = this.queue[this.head++]!
      // only the key's latest acknowledgement removes it
      if (this.map.get(k)?.seq === seq) this.map.delete(k)
    }
    if (this.head > 1024 && this.head * 2 > this.queue.length) {
      this.queue = this.queue.slice(this.head)
      this.head = 0
    }
    // Writes of keys already held leave their earlier entries in the queue; while the map stays
    // within its limit nothing above removes them, so a node that writes the same records again and
    // again (a balance, a transfer's record at every step) grew the queue by an entry per write for
    // good. Past twice the limit the entries no longer latest are dropped (at least half of them:
    // constant time per record over time), so the queue is bounded by the limit, not the history.
    if (this.queue.length - this.head > 2 * this.limit + 1024) {
      this.queue = this.queue.slice(this.head).filter(([k, seq]) => this.map.get(k)?.seq === seq)
      this.head = 0
    }
  }

  /** Entries in the acknowledgement queue (the latest of each key, and earlier ones not dropped yet). */
  get queued (): number { return this.queue.length - this.head }

  /** [collection, key, last acknowledged] in acknowledgement order. */
  entries (): Array<[string, string, AckedValue]> {
    return [...this.map].sort(([, a], [, b]) => a.seq - b.seq).map(([k, v]) => {
      const i = k.indexOf('\u0000')
      return [k.slice(0, i), k.slice(i + 1), v.deleted ? { deleted: true } : { deleted: false, value: v.value }]
    })
  }

  get size (): number { return this.map.size }

  clear (): void {
    this.map.clear()
    this.queue = []
    this.head = 0
  }
}
