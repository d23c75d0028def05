/**
 * What the transfer protocol tells an observer (the node's metrics) as it works. Pure data: the
 * consensus domain knows nothing of how the events are counted or exported.
 */

/** The part this node played in a transaction. */
export type ConsensusRole = 'sender' | 'quorum' | 'receiver'

/**
 * How a transaction ended for one role:
 * - `committed`: final and stored (sender: delivered too; quorum: its vote committed; receiver: tokens taken);
 * - `delivery_pending`: sender only, decided but the receiver has not taken it yet (delivery is retried);
 * - `aborted`: undone before the decision (sender: tokens back to Free; quorum: the pledge released);
 * - `refused`: turned down before anything was held (bad input, a quorum voting no, a receiver refusing the block);
 * - `failed`: any other error (for example a sign round left to the periodic recovery).
 */
export type ConsensusOutcome = 'committed' | 'delivery_pending' | 'aborted' | 'refused' | 'failed'

export type ConsensusEvent =
  | { kind: 'transaction', role: ConsensusRole, outcome: ConsensusOutcome, ms: number }
  | { kind: 'round', round: 'prepare' | 'sign', ms: number }
  /** two spends of one state seen (double-spends.ts): by which role, from two blocks, two markers or two certificates */
  | { kind: 'double-spend', seenBy: 'receiver' | 'quorum' | 'sync' | 'markers' | 'sender', evidence: 'blocks' | 'markers' | 'certificates' }
  /** an arbiter proven to have granted one state twice is no longer trusted (certificate-evidence.ts) */
  | { kind: 'arbiter-distrusted' }

/** Called synchronously; it must not throw (a throwing observer is ignored). */
export type ConsensusObserver = (event: ConsensusEvent) => void

/** Calls an optional observer, never letting it disturb the protocol. */
export function notify (observer: ConsensusObserver | undefined, event: ConsensusEvent): void {
  if (observer === undefined) return
  try { observer(event) } catch { /* an observer never changes the outcome */ }
}
