/** Polls `check` until it returns a truthy value or the deadline passes (no fixed sleeps). */
export async function waitUntil<T> (check: () => Promise<T | undefined | false | null> | T | undefined | false | null, opts: { timeoutMs?: number, intervalMs?: number, what?: string } = {}): Promise<T> {
  const deadline = Date.now() + (opts.timeoutMs ?? 15_000)
  let lastErr: unknown
  for (;;) {
    try {
      const v = await check()
      if (v !== undefined && v !== false && v !== null) return v
    } catch (e) {
      lastErr = e
    }
    if (Date.now() > deadline) {
      throw new Error(`timed out waiting for ${opts.what ?? 'condition'}${lastErr !== undefined ? ': ' + String((lastErr as Error).message ?? lastErr) : ''}`)
    }
    await new Promise((resolve) => setTimeout(resolve, opts.intervalMs ?? 50))
  }
}
