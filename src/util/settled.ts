/**
 * Starts waiting on `p` at once and gives a function that resolves to its value or throws its
 * error. A promise awaited only later (work run beside other work) otherwise counts as an
 * unhandled rejection if it fails first, which ends the process.
 */
export function settled<T> (p: Promise<T>): () => Promise<T> {
  const out = p.then((value) => ({ ok: true as const, value }), (error: unknown) => ({ ok: false as const, error }))
  return async () => {
    const r = await out
    if (r.ok) return r.value
    throw r.error
  }
}
