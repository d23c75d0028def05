/**
 * Deadlines for stream operations. A Deadline is an AbortSignal that fires after `ms` (or when an
 * optional parent signal fires) plus a way to tell which of the two happened, and a clear() that
 * releases the timer as soon as the guarded operation is over.
 */
export interface Deadline {
  readonly signal: AbortSignal
  readonly ms: number
  /** True when the timer (not the parent signal) aborted the signal. */
  timedOut: () => boolean
  clear: () => void
}

export class DeadlineExceeded extends Error {
  constructor (readonly ms: number) {
    super(`deadline of ${ms} ms exceeded`)
    this.name = 'DeadlineExceeded'
  }
}

export function deadline (ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController()
  let expired = false
  const onParentAbort = (): void => { controller.abort(parent?.reason) }
  const timer = setTimeout(() => {
    expired = true
    controller.abort(new DeadlineExceeded(ms))
  }, ms)
  timer.unref?.()
  if (parent !== undefined) {
    if (parent.aborted) onParentAbort()
    else parent.addEventListener('abort', onParentAbort, { once: true })
  }
  return {
    signal: controller.signal,
    ms,
    timedOut: () => expired,
    clear: () => {
      clearTimeout(timer)
      parent?.removeEventListener('abort', onParentAbort)
    }
  }
}

/** Run `fn` under a fresh deadline and always release the timer afterwards. */
export async function withDeadline<T> (ms: number, parent: AbortSignal | undefined, fn: (d: Deadline) => Promise<T>): Promise<T> {
  const d = deadline(ms, parent)
  try {
    return await fn(d)
  } finally {
    d.clear()
  }
}

/** Resolve/reject with `p`, or reject with the signal's reason when it aborts first. */
export async function raceAbort<T> (p: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) throw signal.reason
  return await new Promise<T>((resolve, reject) => {
    const onAbort = (): void => { reject(signal.reason) }
    signal.addEventListener('abort', onAbort, { once: true })
    p.then(
      v => { signal.removeEventListener('abort', onAbort); resolve(v) },
      e => { signal.removeEventListener('abort', onAbort); reject(e) }
    )
  })
}
