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

/**
 * Deadlines and races hang on signals that outlive them: a caller's signal handed to every call it
 * makes, the rpc layer's signal of a channel serving many requests at once. One listener each
 * would put as many listeners on such a signal as there are calls in flight (Node warns past 10,
 * MaxListenersExceededWarning). Instead a signal gets one listener, shared by every callback
 * registered on it and removed with the last of them.
 */
interface AbortFanout { readonly callbacks: Set<() => void>, readonly listener: () => void }
const fanouts = new WeakMap<AbortSignal, AbortFanout>()

/**
 * Call `fn` once when `signal` aborts (at once when it already has). The function returned
 * unregisters `fn`; call it when the guarded operation settles.
 */
export function onAbort (signal: AbortSignal, fn: () => void): () => void {
  if (signal.aborted) {
    fn()
    return () => {}
  }
  let fanout = fanouts.get(signal)
  if (fanout === undefined) {
    const callbacks = new Set<() => void>()
    const listener = (): void => {
      fanouts.delete(signal)
      for (const cb of callbacks) {
        try {
          cb()
        } catch (e) {
          // as an event listener's exception would: reported, and the other callbacks still run
          queueMicrotask(() => { throw e })
        }
      }
      callbacks.clear()
    }
    fanout = { callbacks, listener }
    fanouts.set(signal, fanout)
    signal.addEventListener('abort', listener, { once: true })
  }
  const f = fanout
  const cb = (): void => { fn() } // a registration of its own, even when `fn` is registered twice
  f.callbacks.add(cb)
  return () => {
    // also while the abort is being dispatched: a callback unregistered by then is not called
    if (!f.callbacks.delete(cb) || f.callbacks.size > 0 || fanouts.get(signal) !== f) return
    fanouts.delete(signal)
    signal.removeEventListener('abort', f.listener)
  }
}

export function deadline (ms: number, parent?: AbortSignal): Deadline {
  const controller = new AbortController()
  let expired = false
  const timer = setTimeout(() => {
    expired = true
    controller.abort(new DeadlineExceeded(ms))
  }, ms)
  timer.unref?.()
  const unlink = parent === undefined ? undefined : onAbort(parent, () => { controller.abort(parent.reason) })
  return {
    signal: controller.signal,
    ms,
    timedOut: () => expired,
    clear: () => {
      clearTimeout(timer)
      unlink?.()
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
  if (signal.aborted) {
    // nobody awaits the work any more: its later failure must not become an unhandled rejection
    // (which ends the process)
    p.catch(() => {})
    throw signal.reason
  }
  return await new Promise<T>((resolve, reject) => {
    const unlink = onAbort(signal, () => { reject(signal.reason) })
    p.then(
      v => { unlink(); resolve(v) },
      e => { unlink(); reject(e) }
    )
  })
}
