/**
 * The package's client entry (`import { RbtClient } from 'rbtnode/client'`): the typed client over
 * the shared route table, its errors, the two-step handlers and transfer states, and the transports.
 */
export { RbtClient, type CallInput, type ClientOptions, type FormInput } from './rbt-client.js'
export { ApiError } from './api-error.js'
export { pendingChallenge, type SignatureChallenge, type SignatureHandlers } from './two-step.js'
export { DELIVERY_PENDING, SIGNING_PENDING, type TransferInput, type TransferResult, type TransferState } from './transfer-state.js'
export { nodeHttpTransport } from './node-http-transport.js'
export { undiciTransport, type UndiciTransportOptions } from './undici-transport.js'
export type { HttpRequest, HttpResponse, HttpTransport } from './transport.js'
export type { Envelope, PendingSignature } from '../api/contract/envelope.js'
export { paths, type RouteId } from '../api/contract/paths.js'
export type { BodyOf, QueryOf, ResultOf } from '../api/contract/routes.js'
