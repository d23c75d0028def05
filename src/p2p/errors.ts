/**
 * Turning libp2p failures into RbtError. Every error names the peer and the operation so that an
 * operator reading one log line knows who did not answer and to what.
 */
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { DeadlineExceeded, type Deadline } from './deadline.js'

const PROTOCOL_ERRORS = new Set([
  'UnsupportedProtocolError', 'InvalidMessageLengthError', 'InvalidDataLengthError',
  'InvalidDataLengthLengthError', 'StreamBufferError', 'ProtocolError', 'InvalidMessageError'
])

export interface FailureContext {
  /** Peer id string, or a multiaddr when no peer id is known yet. */
  peer: string
  /** What was being done, e.g. "rpc did.resolve" or "ping". */
  op: string
  deadline?: Deadline
}

export function p2pError (e: unknown, ctx: FailureContext): RbtError {
  if (e instanceof RbtError) return e
  const d = ctx.deadline
  if (d?.timedOut() === true) {
    return new RbtError(ErrorCode.TIMEOUT, `${ctx.op}: peer ${ctx.peer} did not answer within ${d.ms} ms`, { cause: e, details: { peer: ctx.peer } })
  }
  if (d?.signal.aborted === true) {
    const reason: unknown = d.signal.reason
    if (reason instanceof RbtError) return reason
    if (reason instanceof DeadlineExceeded) {
      // an enclosing deadline expired
      return new RbtError(ErrorCode.TIMEOUT, `${ctx.op}: peer ${ctx.peer} did not answer within ${reason.ms} ms`, { cause: e, details: { peer: ctx.peer } })
    }
    return new RbtError(ErrorCode.TIMEOUT, `${ctx.op}: request to peer ${ctx.peer} was cancelled`, { cause: e, details: { peer: ctx.peer } })
  }
  const name = e instanceof Error ? e.name : ''
  if (name === 'UnsupportedProtocolError') {
    return new RbtError(ErrorCode.PROTOCOL, `${ctx.op}: peer ${ctx.peer} does not support this protocol`, { cause: e, details: { peer: ctx.peer } })
  }
  if (PROTOCOL_ERRORS.has(name)) {
    return new RbtError(ErrorCode.PROTOCOL, `${ctx.op}: bad data from peer ${ctx.peer}: ${errorMessage(e)}`, { cause: e, details: { peer: ctx.peer } })
  }
  if (name === 'NoValidAddressesError') {
    return new RbtError(ErrorCode.PEER_UNREACHABLE, `${ctx.op}: no known address for peer ${ctx.peer}`, { cause: e, details: { peer: ctx.peer } })
  }
  return new RbtError(ErrorCode.PEER_UNREACHABLE, `${ctx.op}: peer ${ctx.peer} unreachable: ${errorMessage(e)}`, { cause: e, details: { peer: ctx.peer } })
}
