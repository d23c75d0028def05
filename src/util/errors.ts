/**
 * Typed errors. Every failure the node reports carries a code; the HTTP layer maps codes to
 * status codes in one place (api/server/errors.ts) and the client maps envelopes back to ApiError.
 */
export const ErrorCode = {
  INVALID_INPUT: 'INVALID_INPUT',
  INVALID_DID: 'INVALID_DID',
  INVALID_PEER_ID: 'INVALID_PEER_ID',
  INVALID_MULTIADDR: 'INVALID_MULTIADDR',
  NOT_FOUND: 'NOT_FOUND',
  ROUTE_NOT_FOUND: 'ROUTE_NOT_FOUND',
  METHOD_NOT_ALLOWED: 'METHOD_NOT_ALLOWED',
  PAYLOAD_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  WRONG_PASSWORD: 'WRONG_PASSWORD',
  /** the API needs its bearer token (run -apiAuth) */
  UNAUTHORIZED: 'UNAUTHORIZED',
  /** a body of a content type the route does not read */
  UNSUPPORTED_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FORBIDDEN: 'FORBIDDEN',
  CONFLICT: 'CONFLICT',
  INSUFFICIENT_BALANCE: 'INSUFFICIENT_BALANCE',
  EXPIRED: 'EXPIRED',
  /** a limit on waiting work or on password attempts was reached: try again later */
  TOO_MANY_REQUESTS: 'TOO_MANY_REQUESTS',
  PEER_UNREACHABLE: 'PEER_UNREACHABLE',
  TIMEOUT: 'TIMEOUT',
  PROTOCOL: 'PROTOCOL',
  VERIFICATION_FAILED: 'VERIFICATION_FAILED',
  CHAIN_INVALID: 'CHAIN_INVALID',
  CONSENSUS_FAILED: 'CONSENSUS_FAILED',
  /** a state the transfer spends is claimed by another transaction (a racing spend of the same tokens): it was refused before any signature; retry once the other has ended */
  STATE_CLAIMED: 'STATE_CLAIMED',
  /** too few of a state's arbiters could be reached to claim it (a partition, many nodes down): refused rather than risk a double spend; retry later */
  CLAIM_UNREACHABLE: 'CLAIM_UNREACHABLE',
  /** the quorums signed (the tokens are the receiver's), the transfer is not finished yet (delivery, or this node's record of it): retried in the background */
  DELIVERY_PENDING: 'DELIVERY_PENDING',
  /** the quorums agreed but fewer than 5 could sign yet: not aborted, the sign round is retried until it completes */
  SIGNING_PENDING: 'SIGNING_PENDING',
  NOT_RUNNING: 'NOT_RUNNING',
  CONFIG: 'CONFIG',
  STORAGE: 'STORAGE',
  /** the disk holding the node's data is full: no writes are taken until space is freed (reads are served) */
  INSUFFICIENT_STORAGE: 'INSUFFICIENT_STORAGE',
  /** the store failed a write (I/O error): no writes are taken until it has been reopened and checked (reads are served) */
  STORAGE_UNAVAILABLE: 'STORAGE_UNAVAILABLE',
  INTERNAL: 'INTERNAL'
} as const
export type ErrorCode = typeof ErrorCode[keyof typeof ErrorCode]

export class RbtError extends Error {
  readonly code: ErrorCode
  readonly details?: unknown
  constructor (code: ErrorCode, message: string, options?: { cause?: unknown, details?: unknown }) {
    super(message, options?.cause !== undefined ? { cause: options.cause } : undefined)
    this.name = 'RbtError'
    this.code = code
    this.details = options?.details
  }
}

/**
 * A transfer decided but not yet finished: the receiver's node has not taken the tokens yet, or
 * (`failure` given) finishing it on this node failed, a full disk say. Both are retried in the
 * background; the answer names the transaction to follow.
 */
export function deliveryPending (txid: string, failure?: string): RbtError {
  return new RbtError(ErrorCode.DELIVERY_PENDING, failure === undefined
    ? `Transaction ${txid}: the quorums signed and the tokens now belong to the receiver, but the receiver's node has not taken them yet; delivery is retried in the background (GET /svc/v1/tx/${txid} shows its state)`
    : `Transaction ${txid}: the quorums signed and the tokens now belong to the receiver, but finishing the transfer on this node failed (${failure}); it is retried in the background (GET /svc/v1/tx/${txid} shows its state)`,
  { details: { transactionID: txid } })
}

/**
 * A transfer the quorums agreed on whose block fewer than 5 of them could sign yet: its tokens stay
 * Locked and recovery retries the sign round until it completes. Not a refusal: the answer names
 * the transaction, which ends committed.
 */
export function signingPending (txid: string, message: string): RbtError {
  return new RbtError(ErrorCode.SIGNING_PENDING, `Transaction ${txid}: ${message}`, { details: { transactionID: txid } })
}

/**
 * A storage error while a transfer records its decision to ask for signatures. The failed write may
 * still have landed: the node aborts the transfer once it can write again, but a node stopped
 * before then finds the record when it starts and completes the transfer. So the answer is not a
 * refusal: it keeps the storage error's code and names the transaction to follow.
 */
export function undecidedWrite (txid: string, cause: RbtError): RbtError {
  return new RbtError(cause.code, `Transaction ${txid}: ${cause.message}. The node could not record its decision to ask for signatures, and that write may still have landed: the transfer is aborted once the node can write again, or completed if the node stops before then (GET /svc/v1/tx/${txid} shows its state)`,
    { details: { transactionID: txid }, cause })
}

export const invalidInput = (message: string, details?: unknown): RbtError => new RbtError(ErrorCode.INVALID_INPUT, message, { details })
export const notFound = (message: string): RbtError => new RbtError(ErrorCode.NOT_FOUND, message)

export function isRbtError (e: unknown, code?: ErrorCode): e is RbtError {
  return e instanceof RbtError && (code === undefined || e.code === code)
}

/** A readable message for any thrown value, never including a stack. */
export function errorMessage (e: unknown): string {
  if (e instanceof Error) return e.message
  return String(e)
}
