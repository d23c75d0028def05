import type { BatchOp } from './kv-store.js'

export interface AckedValue { deleted: boolean, value?: unknown }

/**
 * The latest acknowledged records, by collection and key, each with the value (or deletion) last
 * acknowledged for it: what a reopened store must hold. Bounded: past `limit` keys the oldest
 * acknowledged are forgotten (they were synced well before the tail of the log, where a failed
 * append tears it). Values are kept by reference, not copied.
 */
export class AckedWrites {
  private readonly map = new Map<string, AckedValue>()

  constructor (private readonly limit: number) {}

  record (ops: readonly BatchOp[]): void {
    if (this.limit <= 0) return
    for (const op of ops) {
      const k = `${op.collection}\u0000${op.key}`
      // re-inserted so the map's order stays the order of the last acknowledgement
      this.map.delete(k)
      this.map.set(k, op.type === 'put' ? { deleted: false, value: op.value } : { deleted: true })
    }
    if (this.map.size > this.limit) {
      let excess = this.map.size - this.limit
      for (const k of this.map.keys()) {
        if (excess-- <= 0) break
        this.map.delete(k)
      }
    }
  }

  /** [collection, key, last acknowledged] in acknowledgement order. */
  entries (): Array<[string, string, AckedValue]> {
    return [...this.map].map(([k, v]) => {
      const i = k.indexOf('\u0000')
      return [k.slice(0, i), k.slice(i + 1), v]
    })
  }

  get size (): number { return this.map.size }

  clear (): void { this.map.clear() }
}
