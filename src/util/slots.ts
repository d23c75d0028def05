/**
 * At most `size` holders at once: `take` resolves when a slot is free (waiters served in order),
 * `give` frees one. For work shared by several loops that must not all run at once, such as a
 * fetch's requests over all its peers.
 */
export class Slots {
  private used = 0
  private readonly waiting: Array<() => void> = []

  constructor (readonly size: number) {
    if (!Number.isSafeInteger(size) || size < 1) throw new RangeError(`slots must be a positive integer, got ${size}`)
  }

  /** Slots held now. */
  get held (): number { return this.used }

  async take (): Promise<void> {
    if (this.used < this.size) { this.used++; return }
    // the slot is handed over by `give` (the count stays as it is)
    await new Promise<void>((resolve) => { this.waiting.push(resolve) })
  }

  give (): void {
    const next = this.waiting.shift()
    if (next !== undefined) next()
    else if (this.used > 0) this.used--
  }
}
