import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { fail, type Envelope } from '../contract/envelope.js'

/** The one place where errors become HTTP status codes and envelopes. */
const statusByCode: Record<ErrorCode, number> = {
  INVALID_INPUT: 400,
  INVALID_DID: 400,
  INVALID_PEER_ID: 400,
  INVALID_MULTIADDR: 400,
  NOT_FOUND: 404,
  ROUTE_NOT_FOUND: 404,
  METHOD_NOT_ALLOWED: 405,
  PAYLOAD_TOO_LARGE: 413,
  WRONG_PASSWORD: 401,
  UNAUTHORIZED: 401,
  UNSUPPORTED_MEDIA_TYPE: 415,
  FORBIDDEN: 403,
  CONFLICT: 409,
  INSUFFICIENT_BALANCE: 422,
  EXPIRED: 410,
  TOO_MANY_REQUESTS: 429,
  PEER_UNREACHABLE: 502,
  TIMEOUT: 504,
  PROTOCOL: 502,
  VERIFICATION_FAILED: 422,
  CHAIN_INVALID: 422,
  CONSENSUS_FAILED: 409,
  // another transaction holds a state the transfer spends
  STATE_CLAIMED: 409,
  // too few arbiters reachable: retry later
  CLAIM_UNREACHABLE: 503,
  // the receiver's node (a peer) did not take the decided transfer yet
  DELIVERY_PENDING: 502,
  // agreed, not yet signed by 5: retried until it commits
  SIGNING_PENDING: 502,
  NOT_RUNNING: 503,
  CONFIG: 500,
  STORAGE: 500,
  // writes refused after a storage fault until the store is back (the node retries by itself)
  INSUFFICIENT_STORAGE: 507,
  STORAGE_UNAVAILABLE: 503,
  INTERNAL: 500
}

export function httpStatusOf (code: ErrorCode): number {
  return statusByCode[code] ?? 500
}

export function toHttpError (err: unknown): { status: number, envelope: Envelope<unknown> } {
  if (err instanceof RbtError) {
    // an error naming its transaction (a pending delivery or sign round, a storage error whose
    // transfer may still complete) hands it on, so the caller can follow it; so does a claim refused
    const extra = err.code === ErrorCode.STATE_CLAIMED || typeof (err.details as { transactionID?: unknown } | undefined)?.transactionID === 'string'
      ? err.details as Record<string, unknown> ?? {}
      : {}
    return { status: httpStatusOf(err.code), envelope: fail(err.message, { code: err.code, ...extra }) }
  }
  return { status: 500, envelope: fail(`Internal error: ${errorMessage(err)}`, { code: ErrorCode.INTERNAL }) }
}
