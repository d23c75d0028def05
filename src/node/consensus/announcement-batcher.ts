/**
 * Gathers announcements and hands them to `publish` in batches: a batch goes out once its items
 * weigh `maxWeight` together, and no later than `delayMs` after its first item arrived. One gossip
 * message reaches every node of the network through several hops, so each message saved is a
 * round of sends, decryptions and handler runs on every node.
 */
export interface BatcherOptions<T> {
  publish: (items: T[]) => Promise<void>
  /** Longest wait before a batch goes out. */
  delayMs: number
  /** A batch goes out once its items weigh this much together (an item heavier alone goes alone). */
  maxWeight: number
  weight: (item: T) => number
  onError?: (e: unknown) => void
}

export class Batcher<T> {
  private pending: T[] = []
  private pendingWeight = 0
  private timer: ReturnType<typeof setTimeout> | undefined

  constructor (private readonly opts: BatcherOptions<T>) {}

  add (items: readonly T[]): void {
    for (const it of items) {
      const w = Math.max(1, this.opts.weight(it))
      if (this.pending.length > 0 && this.pendingWeight + w > this.opts.maxWeight) this.sendPending()
      this.pending.push(it)
      this.pendingWeight += w
      if (this.pendingWeight >= this.opts.maxWeight) this.sendPending()
    }
    if (this.pending.length > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => { this.timer = undefined; this.flush() }, this.opts.delayMs)
      this.timer.unref?.()
    }
  }

  /** Sends what is waiting now (also on shutdown). */
  flush (): void {
    if (this.timer !== undefined) { clearTimeout(this.timer); this.timer = undefined }
    if (this.pending.length > 0) this.sendPending()
  }

  private sendPending (): void {
    const items = this.pending
    this.pending = []
    this.pendingWeight = 0
    this.opts.publish(items).catch((e) => { this.opts.onError?.(e) })
  }
}

export interface AnnouncementBatcherOptions {
  publish: (ids: string[]) => Promise<void>
  /** Longest wait before a batch goes out. Default 2000 ms. */
  delayMs?: number
  /** Most ids in one message. Default 500. */
  maxIds?: number
  onError?: (e: unknown) => void
}

/**
 * The ids of tokens created on this node (mints, splits, a quorum's pledge parts): at most
 * `maxIds` per message, sent within `delayMs`. A quorum splitting pledge parts creates tokens every
 * few transfers; one message per split cost every node a gossip round each time.
 */
export class AnnouncementBatcher extends Batcher<string> {
  constructor (opts: AnnouncementBatcherOptions) {
    super({ publish: opts.publish, delayMs: opts.delayMs ?? 2000, maxWeight: opts.maxIds ?? 500, weight: () => 1, ...(opts.onError !== undefined ? { onError: opts.onError } : {}) })
  }
}

/** What a committed transfer announces: the states it spent and the tokens it moved. */
export interface TransferAnnouncement { spent: string[], tokens: string[] }

/**
 * Committed transfers' announcements, merged: one message `{txid: '', spent, tokens}` carries the
 * spent states and tokens of every transfer committed here within `delayMs` (receivers act on each
 * listed state and token alike, whichever transfer it came from).
 */
export function transferAnnouncementBatcher (opts: {
  publish: (merged: TransferAnnouncement) => Promise<void>
  delayMs?: number
  maxIds?: number
  onError?: (e: unknown) => void
}): Batcher<TransferAnnouncement> {
  return new Batcher<TransferAnnouncement>({
    publish: async (items) => { await opts.publish({ spent: items.flatMap((i) => i.spent), tokens: [...new Set(items.flatMap((i) => i.tokens))] }) },
    delayMs: opts.delayMs ?? 500,
    maxWeight: opts.maxIds ?? 1000,
    weight: (i) => i.spent.length + i.tokens.length,
    ...(opts.onError !== undefined ? { onError: opts.onError } : {})
  })
}
