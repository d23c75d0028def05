import { ApiError } from '../../src/client/api-error.js'
import type { Outcome } from './invariants.js'

/** An envelope as the client hands it back. */
export interface Answer { status: boolean, message: string, result?: unknown }

/** What one operation came to, as the soak counts it. */
export interface Settled { outcome: Outcome, detail?: string, code?: string, cut?: true }

/**
 * What an answer tells of a transfer: ok; pending (decided, finished in the background: delivery or
 * the sign round is retried, so it must end committed); unknown (a storage error naming the
 * transaction: the node could not record its decision, which may have landed, so either end is
 * right as long as both sides agree); failed (any other refusal: it must never commit).
 */
export function outcomeOf (done: { status: boolean, result?: unknown }): Outcome {
  if (done.status) return 'ok'
  const r = done.result as { code?: string, transactionID?: unknown } | null | undefined
  if (r?.code === 'DELIVERY_PENDING' || r?.code === 'SIGNING_PENDING') return 'pending'
  if ((r?.code === 'INSUFFICIENT_STORAGE' || r?.code === 'STORAGE_UNAVAILABLE') && typeof r.transactionID === 'string') return 'unknown'
  return 'failed'
}

/**
 * Settles an operation from its first answer and the call that completes it (the password step).
 * A call cut on the way (the node killed mid-request: HTTP status 0, no envelope) is not a refusal:
 * the node may have committed before it died, so the outcome stays unknown. Any other error of the
 * completing call is the node's answer and counts as it says.
 */
export async function settle (first: Answer, completeIt: (first: Answer) => Promise<Answer>): Promise<Settled> {
  let done: Answer
  try {
    done = first.status ? await completeIt(first) : first
  } catch (e) {
    if (e instanceof ApiError && e.httpStatus !== 0) done = { status: false, message: e.message, result: e.result ?? null }
    else return { outcome: 'unknown', detail: (e as Error).message, cut: true }
  }
  const code = (done.result as { code?: string } | null | undefined)?.code
  const outcome = outcomeOf(done)
  return done.status ? { outcome, code } : { outcome, code, detail: done.message }
}
