/**
 * Where a transfer ended, as a program sees it. `committed`: the receiver holds the tokens.
 * `delivery_pending`: the quorums decided it but the receiver has not taken it yet (the node
 * retries; the id names it in the transaction list). `signing_pending`: the quorums agreed and the
 * sign round is retried; it ends committed.
 */
export type TransferState = 'committed' | 'delivery_pending' | 'signing_pending'

export interface TransferResult {
  state: TransferState
  /** the transaction id (set in every state) */
  transactionId: string
  message: string
}

/** Error codes of a decided transfer that is not yet committed everywhere. */
export const DELIVERY_PENDING = 'DELIVERY_PENDING'
export const SIGNING_PENDING = 'SIGNING_PENDING'

export interface TransferInput {
  /** sending DID, hosted on the node the client talks to */
  from: string
  /** receiving DID */
  to: string
  /** RBT, up to 3 decimals */
  amount: number | string
  memo?: string
}
