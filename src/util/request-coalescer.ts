/**
 * Requests to the same destination made in the same turn of the event loop, sent as one.
 *
 * Callers ask for one item at a time (`request(dest, item)`); the items asked of one destination
 * before the loop's next check phase go out together in `send(dest, items)`, whose answers (one
 * per item, in order) settle each caller's promise. A batch of one item goes to `sendOne` instead,
 * so a lone request costs what it did before batching. Several walks of a network started
 * together ask the same peers: this turns their requests into one per peer and round.
 */
export interface CoalescerOptions<I, O> {
  /** answers `items` (at least two) from `dest`, one answer per item in the same order */
  send: (dest: string, items: I[]) => Promise<O[]>
  /** answers a single item (also used for every item when `send` is refused: see `fallback`) */
  sendOne: (dest: string, item: I) => Promise<O>
  /** Most items in one batch; more go out in further batches. Default 64. */
  maxBatch?: number
  /**
   * Whether a failed batch means the destination cannot take batches (an older peer): its items,
   * and its requests for `fallbackMs`, then go one by one. Other failures fail the batch's callers.
   */
  fallback?: (e: unknown) => boolean
  /** How long a destination that refused a batch is sent single requests. Default 10 minutes. */
  fallbackMs?: number
  now?: () => number
}

interface Waiting<I, O> { item: I, resolve: (o: O) => void, reject: (e: unknown) => void }

export class RequestCoalescer<I, O> {
  private readonly pending = new Map<string, Array<Waiting<I, O>>>()
  private readonly singlesUntil = new Map<string, number>()
  private scheduled = false

  constructor (private readonly opts: CoalescerOptions<I, O>) {}

  /** The answer to `item` from `dest`, sent with whatever else is asked of `dest` in this turn. */
  async request (dest: string, item: I): Promise<O> {
    const until = this.singlesUntil.get(dest)
    if (until !== undefined) {
      if (until > this.now()) return await this.opts.sendOne(dest, item)
      this.singlesUntil.delete(dest)
    }
    return await new Promise<O>((resolve, reject) => {
      let q = this.pending.get(dest)
      if (q === undefined) { q = []; this.pending.set(dest, q) }
      q.push({ item, resolve, reject })
      if (!this.scheduled) {
        this.scheduled = true
        setImmediate(() => { this.flush() })
      }
    })
  }

  private now (): number { return this.opts.now?.() ?? Date.now() }

  private flush (): void {
    this.scheduled = false
    const all = [...this.pending]
    this.pending.clear()
    const max = Math.max(1, this.opts.maxBatch ?? 64)
    for (const [dest, q] of all) {
      for (let i = 0; i < q.length; i += max) void this.dispatch(dest, q.slice(i, i + max))
    }
  }

  private async dispatch (dest: string, batch: Array<Waiting<I, O>>): Promise<void> {
    if (batch.length === 1) { await this.one(dest, batch[0]!); return }
    let answers: O[]
    try {
      answers = await this.opts.send(dest, batch.map((w) => w.item))
      if (!Array.isArray(answers) || answers.length !== batch.length) throw new Error(`a batch of ${batch.length} got ${Array.isArray(answers) ? answers.length : 'no'} answers`)
    } catch (e) {
      if (this.opts.fallback?.(e) === true) {
        this.singlesUntil.set(dest, this.now() + (this.opts.fallbackMs ?? 600_000))
        await Promise.all(batch.map(async (w) => { await this.one(dest, w) }))
        return
      }
      for (const w of batch) w.reject(e)
      return
    }
    batch.forEach((w, i) => { w.resolve(answers[i]!) })
  }

  private async one (dest: string, w: Waiting<I, O>): Promise<void> {
    try {
      w.resolve(await this.opts.sendOne(dest, w.item))
    } catch (e) {
      w.reject(e)
    }
  }
}
