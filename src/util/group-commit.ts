/**
 * Group commit: writes handed in while one is being made durable are joined into the next single
 * write, so many callers share one synced batch instead of queueing one fsync each. A caller's
 * promise settles once the batch that carries its writes is durable (or failed). The caller keeps
 * whatever ordering it needs (a lock per key held until its write settles): writes joined into one
 * batch are independent.
 */
export class GroupCommit<Op> {
  private queued: Array<{ ops: Op[], done: () => void, fail: (e: unknown) => void }> = []
  private flushing = false

  constructor (private readonly write: (ops: Op[]) => Promise<void>) {}

  async add (ops: Op[]): Promise<void> {
    if (ops.length === 0) return
    await new Promise<void>((resolve, reject) => {
      this.queued.push({ ops, done: resolve, fail: reject })
      if (!this.flushing) void this.flush()
    })
  }

  private async flush (): Promise<void> {
    this.flushing = true
    try {
      // let the writes of callers running in the same turn join the first batch
      await Promise.resolve()
      while (this.queued.length > 0) {
        const batch = this.queued
        this.queued = []
        try {
          await this.write(batch.flatMap((b) => b.ops))
          for (const b of batch) b.done()
        } catch (e) {
          for (const b of batch) b.fail(e)
        }
      }
    } finally {
      this.flushing = false
    }
  }
}
