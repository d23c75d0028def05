/**
 * Sends that failed, tried again later by whoever calls `due()` (a sweep). Bounded on every side: at
 * most `max` entries (the oldest dropped first), one send of an entry in flight at a time and at most
 * `inFlight` sends in all, at least `everyMs` between two sends of one entry, and an entry given up
 * `forMs` after its first failure. A send that resolves drops its entry, and so does one that
 * rejects with an error `retryable` says will not go away; another rejection keeps it. A send that
 * goes through starts the next one due, so once its peers answer again the queue drains at the rate
 * they answer, not one batch per `due()`. For messages that are safe to repeat and that something
 * else settles in the end when they never arrive.
 */
export interface RetryQueueOptions {
  /** least time between two sends of one entry */
  everyMs: number
  /** an entry is given up this long after it was first added */
  forMs: number
  /** entries kept at most; adding past it drops the oldest */
  max: number
  /** sends in flight at once, over all entries (default 16): a peer still cut off waits its timeout */
  inFlight?: number
  /** whether a send's rejection may go away (default: every rejection may) */
  retryable?: (err: unknown) => boolean
  now?: () => number
}

interface Entry<T> { item: T, first: number, next: number, sending: boolean }

export class RetryQueue<T> {
  private readonly entries = new Map<string, Entry<T>>()
  private readonly now: () => number
  private sending = 0

  constructor (private readonly send: (item: T) => Promise<unknown>, private readonly opts: RetryQueueOptions) {
    this.now = opts.now ?? Date.now
  }

  get size (): number { return this.entries.size }

  /** Keeps `item` under `key` to be sent again; a key already held keeps its first failure's time. */
  add (key: string, item: T): void {
    const now = this.now()
    const held = this.entries.get(key)
    if (held !== undefined) { held.item = item; return }
    while (this.entries.size >= this.opts.max) {
      const oldest = this.entries.keys().next()
      if (oldest.done === true) break
      this.entries.delete(oldest.value)
    }
    this.entries.set(key, { item, first: now, next: now + this.opts.everyMs, sending: false })
  }

  /** Starts the sends that are due (not awaited: a send to a peer that is gone waits its timeout). */
  due (): void {
    const now = this.now()
    const most = this.opts.inFlight ?? 16
    for (const [key, e] of this.entries) {
      if (now - e.first >= this.opts.forMs) { if (!e.sending) this.entries.delete(key); continue }
      if (e.sending || e.next > now) continue
      if (this.sending >= most) break
      e.sending = true
      this.sending++
      let sent: Promise<unknown>
      try { sent = this.send(e.item) } catch (err) { sent = Promise.reject(err) }
      sent.then(() => {
        this.sending--
        if (this.entries.get(key) === e) this.entries.delete(key)
        this.due()
      }, (err: unknown) => {
        this.sending--
        e.sending = false
        e.next = this.now() + this.opts.everyMs
        const dead = this.opts.retryable !== undefined && !this.opts.retryable(err)
        if ((dead || this.now() - e.first >= this.opts.forMs) && this.entries.get(key) === e) this.entries.delete(key)
      })
    }
  }
}
