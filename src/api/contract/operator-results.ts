/** Result payloads of the operator routes (types only: the client imports them). See docs/api.md, "Operator features". */

/** One Locked token the release looked at. */
export interface LockedTokenItem {
  token: string
  did: string
  /** RBT */
  value: number
  /** the transaction that locked it (null when the token names none) */
  transaction_id: string | null
  /** this node's sender record of that transaction: PREPARING, SIGNING, COMMITTING, COMMITTED, ABORTED, or UNKNOWN (none) */
  record_state: string
  reason: string
}

/** POST /svc/v1/tokens/release_locked */
export interface ReleaseLockedResult {
  released: LockedTokenItem[]
  kept: LockedTokenItem[]
}
