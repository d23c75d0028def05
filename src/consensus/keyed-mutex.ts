/** Serialises async work per key (a DID, a token): one runs at a time, others queue in order. */
export class KeyedMutex {
  private readonly tails = new Map<string, Promise<unknown>>()

  async run<T> (key: string, fn: () => Promise<T>): Promise<T> {
    const prev = this.tails.get(key) ?? Promise.resolve()
    const next = prev.then(fn, fn)
    const tail = next.catch(() => {})
    this.tails.set(key, tail)
    try {
      return await next
    } finally {
      if (this.tails.get(key) === tail) this.tails.delete(key)
    }
  }

  /** Whether work for `key` runs or waits now. */
  held (key: string): boolean { return this.tails.has(key) }

  /** Runs with several keys held, taken in sorted order so two callers cannot deadlock. */
  async runAll<T> (keys: readonly string[], fn: () => Promise<T>): Promise<T> {
    const sorted = [...new Set(keys)].sort()
    const step = async (i: number): Promise<T> => i >= sorted.length ? await fn() : await this.run(sorted[i], async () => await step(i + 1))
    return await step(0)
  }
}
