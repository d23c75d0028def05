/**
 * Collects the ids of tokens created on this node and hands them to `publish` in batches: at most
 * `maxIds` per message, and no later than `delayMs` after the first id of a batch arrived. A quorum
 * splitting pledge parts creates tokens every few transfers; one message per split cost every node
 * of the network a gossip round each time.
 */
export interface AnnouncementBatcherOptions {
  publish: (ids: string[]) => Promise<void>
  /** Longest wait before a batch goes out. Default 2000 ms. */
  delayMs?: number
  /** Most ids in one message. Default 500. */
  maxIds?: number
  onError?: (e: unknown) => void
}

export class AnnouncementBatcher {
  private pending: string[] = []
  private timer: ReturnType<typeof setTimeout> | undefined
  private readonly delayMs: number
  private readonly maxIds: number

  constructor (private readonly opts: AnnouncementBatcherOptions) {
    this.delayMs = opts.delayMs ?? 2000
    this.maxIds = opts.maxIds ?? 500
  }

  add (ids: readonly string[]): void {
    if (ids.length === 0) return
    this.pending.push(...ids)
    while (this.pending.length >= this.maxIds) this.send(this.pending.splice(0, this.maxIds))
    if (this.pending.length > 0 && this.timer === undefined) {
      this.timer = setTimeout(() => { this.timer = undefined; this.flush() }, this.delayMs)
      this.timer.unref?.()
    }
  }

  /** Sends what is waiting now (also on shutdown). */
  flush (): void {
    if (this.timer !== undefined) { clearTimeout(this.timer); this.timer = undefined }
    if (this.pending.length > 0) this.send(this.pending.splice(0, this.pending.length))
  }

  private send (ids: string[]): void {
    this.opts.publish(ids).catch((e) => { this.opts.onError?.(e) })
  }
}
