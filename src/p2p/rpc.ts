/**
 * Request/response over libp2p streams: one stream per request, length-prefixed JSON frames,
 * a request id in every frame, a deadline on every read and write, typed error frames, and a
 * paged mode with credit-based flow control for responses of any size. docs/protocol.md
 * ("Wire framing") is the normative description; keep the two in step.
 *
 * The method set is the caller's: declare a type map and hand in an exhaustive handler table.
 *
 *   interface NodeMethods {
 *     'did.resolve': { request: { did: string }, response: { peerId: string } }
 *     'chain.sync': { request: { token: string }, page: { blocks: Uint8Array[] } }
 *   }
 *   const rpc = createRpc<NodeMethods>({ host, handlers: { 'did.resolve': ..., 'chain.sync': ... } })
 */
import { randomUUID } from 'node:crypto'
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils'
import type { Connection, Stream } from '@libp2p/interface'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { silentLogger, type Logger } from '../util/logger.js'
import type { Startable, StartableStatus } from '../util/startable.js'
import { BINARY_FRAME_MARK, decodeFrame, encodeBinary, encodeJson, joinBinary, type BinaryFrame } from './codec.js'
import { deadline, onAbort, raceAbort, type Deadline } from './deadline.js'
import { p2pError } from './errors.js'
import { joinPieces } from '../util/pieces.js'
import type { P2pHost } from './host.js'
import { DEFAULT_METHOD_VERSION, rpcProtocolId } from './protocol-id.js'

// ---------------------------------------------------------------------------------------------
// Method typing

/** A method answering with one response frame. */
export interface UnarySpec<Req = unknown, Res = unknown> { request: Req, response: Res }
/** A method answering with a sequence of pages over the same stream. */
export interface PagedSpec<Req = unknown, Page = unknown> { request: Req, page: Page }
export type MethodSpec = UnarySpec | PagedSpec
/** Constraint for method maps; works with interfaces (which have no index signature). */
export type MethodMapOf<T> = { [K in keyof T]: MethodSpec }

export type UnaryMethods<T> = { [K in keyof T]: T[K] extends { page: unknown } ? never : K }[keyof T] & string
export type PagedMethods<T> = { [K in keyof T]: T[K] extends { page: unknown } ? K : never }[keyof T] & string
export type RequestOf<S> = S extends { request: infer R } ? R : never
export type ResponseOf<S> = S extends { response: infer R } ? R : never
export type PageOf<S> = S extends { page: infer P } ? P : never

export interface RpcContext {
  /** Remote peer id. */
  readonly peerId: string
  readonly method: string
  /** Caller-chosen id; the same id on a retried request lets a handler recognise the retry. */
  readonly requestId: string
  /** Aborted when the caller goes away, the handler deadline passes, or the rpc layer stops. */
  readonly signal: AbortSignal
}

export type RpcHandler<S> = S extends { page: infer P }
  ? (request: RequestOf<S>, ctx: RpcContext) => AsyncIterable<P> | Promise<AsyncIterable<P>>
  : (request: RequestOf<S>, ctx: RpcContext) => ResponseOf<S> | Promise<ResponseOf<S>>

/** Exhaustive handler table: a missing method is a compile error. */
export type RpcHandlers<T> = { [K in keyof T & string]: RpcHandler<T[K]> }

/** Methods every node serves. */
export interface BuiltinMethods {
  'rbt.ping': UnarySpec<Record<string, never>, { message: string }>
}
export const PING_MESSAGE = 'Ping Received'

export interface CallOptions {
  /** Deadline for opening the stream, writing the request and reading the (first) answer. */
  timeoutMs?: number
  /** Deadline for each following page of a paged answer. */
  pageTimeoutMs?: number
  signal?: AbortSignal
  /** Reuse the id of an earlier attempt when retrying, so idempotent handlers can deduplicate. */
  requestId?: string
  /**
   * A paged call's pages of 64 KiB or more that arrive in pieces are joined into the buffer this
   * gives for their length (a pool's, handed back once the page is done with) instead of a new one.
   */
  pageInto?: (bytes: number) => Uint8Array
}

export interface RpcClient<T> {
  call: <M extends UnaryMethods<T>>(peerId: string, method: M, request: RequestOf<T[M]>, opts?: CallOptions) => Promise<ResponseOf<T[M]>>
  /** Pages arrive in order; breaking out of the loop cancels the transfer. Errors name the peer. */
  callPaged: <M extends PagedMethods<T>>(peerId: string, method: M, request: RequestOf<T[M]>, opts?: CallOptions) => AsyncIterable<PageOf<T[M]>>
}

export interface Rpc<T> extends RpcClient<T>, Startable {
  readonly status: StartableStatus
  readonly methods: ReadonlyArray<keyof T & string>
  protocolId: (method: keyof T & string) => string
}

export interface RpcLimits {
  /** Default per-call deadline (ms). Default 10 000. */
  timeoutMs?: number
  /** Default deadline per page after the first (ms). Default: timeoutMs. */
  pageTimeoutMs?: number
  /** Server: deadline to receive the request frame. Default 10 000. */
  requestReadTimeoutMs?: number
  /** Server: deadline for a handler to answer (or to produce each page). Default 60 000. */
  handlerTimeoutMs?: number
  /** Server: deadline for each frame write, for waiting on page credit, and for close. Default 10 000. */
  writeTimeoutMs?: number
  /** Largest frame body in bytes, both directions. Default 1 MiB. */
  maxFrameBytes?: number
  /** Pages the caller lets the server send ahead of consumption. Default 4. */
  pageWindow?: number
  /** Concurrent streams per connection and method. Default 256 each. */
  maxInboundStreams?: number
  maxOutboundStreams?: number
}

export interface RpcOptions<T> extends RpcLimits {
  host: P2pHost
  handlers: RpcHandlers<T>
  /** Protocol version per method, default 1.0.0. */
  versions?: Partial<Record<keyof T & string, string>>
  logger?: Logger
  /** Told of every request served and every unary call made (the node's metrics); must not throw. */
  observe?: RpcObserver
}

/** One request as an observer sees it: `outcome` is `ok` or the error code in lower case (`timeout`, `peer_unreachable`, …). */
export interface RpcObservation { side: 'server' | 'client', method: string, outcome: string, ms: number }
export type RpcObserver = (o: RpcObservation) => void

const outcomeOf = (e: unknown): string => e === undefined ? 'ok' : (e instanceof RbtError ? e.code : ErrorCode.INTERNAL).toLowerCase()

// ---------------------------------------------------------------------------------------------
// Frames

export const WIRE_VERSION = 1
/** Request id used in an error frame when the request itself could not be read. */
const UNKNOWN_ID = '-'

/** `bin: 1`: the caller reads binary frames (docs/protocol.md, "Binary frames"); older servers ignore it. */
interface ReqFrame { t: 'req', v: number, id: string, body: unknown, credit?: number, m?: string, n?: number, bin?: number }
interface ResFrame { t: 'res', ok: true, id: string, body: unknown, n?: number }
interface ErrFrame { t: 'err', ok: false, id: string, code: string, message: string, n?: number }
interface PageFrame { t: 'page', id: string, seq: number, body: unknown }
interface EndFrame { t: 'end', id: string, pages: number }
interface CreditFrame { t: 'credit', id: string, n: number }
/** Channel only: the caller gave up on request `n`; the server aborts its handler. */
interface CancelFrame { t: 'cancel', id: string, n: number }
type Frame = ReqFrame | ResFrame | ErrFrame | PageFrame | EndFrame | CreditFrame | CancelFrame

/** Method name of the per-peer channel carrying small unary calls (see docs/protocol.md). */
export const CHANNEL_METHOD = 'rbt.channel'
/** Requests up to this size travel over the channel; larger ones get a stream of their own. */
const CHANNEL_MAX_REQUEST = 256 * 1024
/** Calls a peer may have running at once on one channel. */
const CHANNEL_MAX_INFLIGHT = 256
/** How long a peer that does not serve the channel is called with one stream per request. */
const NO_CHANNEL_RETRY_MS = 10 * 60_000

interface Channel {
  readonly peer: string
  readonly stream: Stream
  readonly pending: Map<number, { resolve: (f: Frame) => void, reject: (e: unknown) => void }>
  next: number
  closed: boolean
  /** Writes one encoded frame; frames go out whole and in call order. */
  send: (bytes: Uint8Array, signal?: AbortSignal) => Promise<void>
}

function protocolError (message: string, peer: string): RbtError {
  return new RbtError(ErrorCode.PROTOCOL, message, { details: { peer } })
}

function isCount (v: unknown): v is number {
  return typeof v === 'number' && Number.isSafeInteger(v) && v >= 0
}

function parseFrame (bytes: Uint8Array, peer: string): Frame {
  const f = decodeFrame(bytes) as Record<string, unknown>
  if (f === null || typeof f !== 'object' || Array.isArray(f)) throw protocolError(`frame from ${peer} is not an object`, peer)
  if (typeof f.id !== 'string' || f.id === '' || f.id.length > 128) throw protocolError(`frame from ${peer} has no valid request id`, peer)
  switch (f.t) {
    case 'req':
      if (f.v !== WIRE_VERSION) throw protocolError(`peer ${peer} speaks wire version ${String(f.v)}, we speak ${WIRE_VERSION}`, peer)
      if (f.credit !== undefined && !(isCount(f.credit) && f.credit > 0)) throw protocolError(`bad credit in request from ${peer}`, peer)
      return f as unknown as ReqFrame
    case 'res': return f as unknown as ResFrame
    case 'err':
      if (typeof f.code !== 'string' || typeof f.message !== 'string') throw protocolError(`malformed error frame from ${peer}`, peer)
      return f as unknown as ErrFrame
    case 'page':
      if (!isCount(f.seq)) throw protocolError(`page frame from ${peer} lacks a sequence number`, peer)
      return f as unknown as PageFrame
    case 'end':
      if (!isCount(f.pages)) throw protocolError(`end frame from ${peer} lacks a page count`, peer)
      return f as unknown as EndFrame
    case 'credit':
      if (!(isCount(f.n) && f.n > 0)) throw protocolError(`bad credit frame from ${peer}`, peer)
      return f as unknown as CreditFrame
    case 'cancel':
      if (!isCount(f.n)) throw protocolError(`bad cancel frame from ${peer}`, peer)
      return f as unknown as CancelFrame
    default:
      throw protocolError(`unknown frame type ${JSON.stringify(f.t)} from ${peer}`, peer)
  }
}

function remoteError (f: ErrFrame, peer: string, method: string): RbtError {
  const known = Object.prototype.hasOwnProperty.call(ErrorCode, f.code)
  const code = known ? f.code as ErrorCode : ErrorCode.INTERNAL
  return new RbtError(code, f.message, { details: { peer, method, remote: true, ...(known ? {} : { remoteCode: f.code }) } })
}

/** The unsigned LEB128 varint of `n` (a frame's length prefix). */
export function varint (n: number): Uint8Array {
  const out: number[] = []
  do {
    let b = n % 128
    n = Math.floor(n / 128)
    if (n > 0) b |= 0x80
    out.push(b)
  } while (n > 0)
  return Uint8Array.from(out)
}

/**
 * Writes a binary frame to `stream` as its length prefix and its pieces, one send each (a single
 * writer per stream keeps them together), and waits for the stream to drain when it asks to.
 */
async function sendPieces (stream: Stream, f: BinaryFrame, signal: AbortSignal): Promise<void> {
  let more = stream.send(varint(f.byteLength))
  for (const p of f.parts) more = stream.send(p) && more
  if (!more) await stream.onDrain({ signal })
}

function isAsyncIterable (v: unknown): v is AsyncIterable<unknown> {
  return v !== null && typeof v === 'object' && typeof (v as Record<symbol, unknown>)[Symbol.asyncIterator] === 'function'
}

// ---------------------------------------------------------------------------------------------

export function createRpc<T extends MethodMapOf<T>> (opts: RpcOptions<T>): Rpc<T & BuiltinMethods> {
  return new RpcNode<T & BuiltinMethods>(opts as unknown as RpcOptions<T & BuiltinMethods>)
}

type AnyHandler = (request: unknown, ctx: RpcContext) => unknown

class RpcNode<T> implements Rpc<T> {
  private _status: StartableStatus = 'stopped'
  private readonly host: P2pHost
  private readonly log: Logger
  private readonly handlers = new Map<string, AnyHandler>()
  private readonly protocols = new Map<string, string>()
  private readonly active = new Set<Stream>()
  private readonly serverAborts = new Set<AbortController>()
  /** Outbound channels by peer id (a promise while the stream opens). */
  private readonly channels = new Map<string, Promise<Channel>>()
  /** Peers that do not serve the channel, until when. */
  private readonly noChannel = new Map<string, number>()
  private readonly channelProtocol = rpcProtocolId(CHANNEL_METHOD)
  /**
   * Peers that sent us a binary frame, so read them: our requests to them go binary too (an older
   * node never sends one, so it never gets one). Bounded; forgetting a peer only costs base64.
   */
  private readonly binaryPeers = new Set<string>()
  private readonly timeoutMs: number
  private readonly pageTimeoutMs: number
  private readonly requestReadTimeoutMs: number
  private readonly handlerTimeoutMs: number
  private readonly writeTimeoutMs: number
  private readonly maxFrameBytes: number
  private readonly pageWindow: number
  private readonly maxInboundStreams: number
  private readonly maxOutboundStreams: number
  private readonly observer?: RpcObserver

  constructor (opts: RpcOptions<T>) {
    this.host = opts.host
    this.observer = opts.observe
    this.log = (opts.logger ?? silentLogger).child('rpc')
    this.timeoutMs = opts.timeoutMs ?? 10_000
    this.pageTimeoutMs = opts.pageTimeoutMs ?? this.timeoutMs
    this.requestReadTimeoutMs = opts.requestReadTimeoutMs ?? 10_000
    this.handlerTimeoutMs = opts.handlerTimeoutMs ?? 60_000
    this.writeTimeoutMs = opts.writeTimeoutMs ?? 10_000
    this.maxFrameBytes = opts.maxFrameBytes ?? 1024 * 1024
    this.pageWindow = Math.max(1, opts.pageWindow ?? 4)
    this.maxInboundStreams = opts.maxInboundStreams ?? 256
    this.maxOutboundStreams = opts.maxOutboundStreams ?? 256

    const builtins: Record<string, AnyHandler> = { 'rbt.ping': () => ({ message: PING_MESSAGE }) }
    const table: Record<string, unknown> = { ...builtins, ...(opts.handlers as Record<string, unknown>) }
    const versions = (opts.versions ?? {}) as Record<string, string | undefined>
    for (const [method, handler] of Object.entries(table)) {
      if (typeof handler !== 'function') throw new RbtError(ErrorCode.INVALID_INPUT, `rpc handler for ${method} is not a function`)
      this.protocols.set(method, rpcProtocolId(method, versions[method] ?? DEFAULT_METHOD_VERSION))
      this.handlers.set(method, handler as AnyHandler)
    }
  }

  get status (): StartableStatus { return this._status }
  get methods (): ReadonlyArray<keyof T & string> { return [...this.handlers.keys()] as Array<keyof T & string> }

  protocolId (method: keyof T & string): string {
    const p = this.protocols.get(method)
    if (p === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `unknown rpc method ${method}`)
    return p
  }

  async start (): Promise<void> {
    if (this._status !== 'stopped') throw new RbtError(ErrorCode.CONFLICT, `rpc is ${this._status}`)
    this._status = 'starting'
    const registered: string[] = []
    try {
      for (const [method, protocol] of this.protocols) {
        await this.host.handleProtocol(protocol, (stream, connection) => { void this.serve(method, stream, connection) }, {
          maxInboundStreams: this.maxInboundStreams,
          maxOutboundStreams: this.maxOutboundStreams
        })
        registered.push(protocol)
      }
      await this.host.handleProtocol(this.channelProtocol, (stream, connection) => { void this.serveChannel(stream, connection) }, {
        maxInboundStreams: 8,
        maxOutboundStreams: 8
      })
      registered.push(this.channelProtocol)
    } catch (e) {
      for (const p of registered) await this.host.unhandleProtocol(p).catch(() => {})
      this._status = 'stopped'
      throw e
    }
    this._status = 'started'
  }

  async stop (): Promise<void> {
    if (this._status !== 'started') return
    this._status = 'stopping'
    for (const protocol of [...this.protocols.values(), this.channelProtocol]) await this.host.unhandleProtocol(protocol).catch(() => {})
    const stopped = new RbtError(ErrorCode.NOT_RUNNING, 'rpc layer stopped')
    for (const ch of this.channels.values()) ch.then((c) => { this.closeChannel(c, stopped) }, () => {})
    this.channels.clear()
    for (const ac of this.serverAborts) ac.abort(stopped)
    for (const s of this.active) s.abort(stopped)
    this.serverAborts.clear()
    this.active.clear()
    this._status = 'stopped'
  }

  private lp (stream: Stream): LengthPrefixedStream<Stream> {
    return lpStream(stream, { maxDataLength: this.maxFrameBytes, maxBufferSize: this.maxFrameBytes * (this.pageWindow + 2) + 64 })
  }

  private observe (side: RpcObservation['side'], method: string, started: number, outcome: string): void {
    if (this.observer === undefined) return
    try { this.observer({ side, method, outcome, ms: Date.now() - started }) } catch { /* never disturbs a call */ }
  }

  // ------------------------------------------------------------------------------- server side

  private async serve (method: string, stream: Stream, connection: Connection): Promise<void> {
    const peer = connection.remotePeer.toString()
    const op = `rpc ${method} from`
    const lp = this.lp(stream)
    const ac = new AbortController()
    const onClose = (): void => { ac.abort(new RbtError(ErrorCode.PEER_UNREACHABLE, `stream from ${peer} closed`)) }
    stream.addEventListener('close', onClose)
    this.serverAborts.add(ac)
    this.active.add(stream)
    let id = UNKNOWN_ID
    let iterator: AsyncIterator<unknown> | undefined
    const started = Date.now()
    try {
      const req = await this.readFrame(lp, this.requestReadTimeoutMs, ac.signal, peer, op).catch(e => {
        const cause = (e as { cause?: unknown }).cause
        if (cause instanceof Error && cause.name === 'InvalidDataLengthError') {
          throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `${method} request is over the ${this.maxFrameBytes}-byte frame limit of peer ${this.host.peerId}`)
        }
        throw e
      })
      if (req.t !== 'req') throw protocolError(`expected a request frame from ${peer}, got ${req.t}`, peer)
      id = req.id
      const handler = this.handlers.get(method) as AnyHandler
      const ctx: RpcContext = { peerId: peer, method, requestId: id, signal: ac.signal }
      const result = await this.underDeadline(Promise.resolve().then(() => handler(req.body, ctx)), ac, method)
      const binary = req.bin === 1 ? stream : undefined
      if (!isAsyncIterable(result)) {
        await this.writeFrame(lp, { t: 'res', ok: true, id, body: result }, ac.signal, method, binary)
      } else {
        if (req.credit === undefined) throw protocolError(`${method} answers in pages; call it with callPaged`, peer)
        iterator = result[Symbol.asyncIterator]()
        let credit = req.credit
        let seq = 0
        for (;;) {
          while (credit <= 0) {
            const f = await this.readFrame(lp, this.writeTimeoutMs, ac.signal, peer, op)
            if (f.t !== 'credit' || f.id !== id) throw protocolError(`expected a credit frame for ${id} from ${peer}`, peer)
            credit += f.n
          }
          const next = await this.underDeadline(iterator.next(), ac, method)
          if (next.done === true) break
          await this.writeFrame(lp, { t: 'page', id, seq, body: next.value }, ac.signal, method, binary)
          seq++
          credit--
        }
        iterator = undefined
        await this.writeFrame(lp, { t: 'end', id, pages: seq }, ac.signal, method)
      }
      await this.closeStream(stream)
      this.observe('server', method, started, 'ok')
    } catch (e) {
      this.observe('server', method, started, outcomeOf(e))
      if (iterator?.return !== undefined) {
        iterator.return().catch(() => {}) // do not await: a generator stuck in next() would never settle
      }
      await this.answerError(lp, stream, id, method, peer, e, ac.signal)
    } finally {
      stream.removeEventListener('close', onClose)
      this.serverAborts.delete(ac)
      this.active.delete(stream)
    }
  }

  /** Run handler work under the handler deadline; on expiry the handler's signal is aborted too. */
  private async underDeadline<R> (work: Promise<R>, ac: AbortController, method: string): Promise<R> {
    const d = deadline(this.handlerTimeoutMs, ac.signal)
    try {
      return await raceAbort(work, d.signal)
    } catch (e) {
      if (d.timedOut()) {
        const err = new RbtError(ErrorCode.TIMEOUT, `${method} handler did not finish within ${this.handlerTimeoutMs} ms`)
        ac.abort(err)
        throw err
      }
      throw e
    } finally {
      d.clear()
    }
  }

  private async answerError (lp: LengthPrefixedStream<Stream>, stream: Stream, id: string, method: string, peer: string, e: unknown, signal: AbortSignal): Promise<void> {
    if (signal.aborted || stream.status !== 'open' || stream.writeStatus !== 'writable') {
      // the caller is gone (or we are stopping): nobody to answer
      if (stream.status === 'open') stream.abort(e instanceof Error ? e : new Error(String(e)))
      return
    }
    let code: string = ErrorCode.INTERNAL
    let message = `internal error while handling ${method}`
    if (e instanceof RbtError) {
      code = e.code
      message = e.message
    } else {
      this.log.warn(`${method} from ${peer} failed: ${errorMessage(e)}`)
    }
    try {
      await this.writeFrame(lp, { t: 'err', ok: false, id, code, message }, signal, method)
      await this.closeStream(stream)
    } catch {
      stream.abort(e instanceof Error ? e : new Error(String(e)))
    }
  }

  private async closeStream (stream: Stream): Promise<void> {
    const d = deadline(this.writeTimeoutMs)
    try {
      await stream.close({ signal: d.signal })
    } catch (e) {
      stream.abort(e instanceof Error ? e : new Error(String(e)))
    } finally {
      d.clear()
    }
  }

  /**
   * Writes one frame under the write deadline: JSON, or binary when `binary` (the stream under
   * `lp`) is given, its byte strings handed to the stream as they are, without a copy.
   */
  private async writeFrame (lp: LengthPrefixedStream<Stream>, frame: Frame, parent: AbortSignal, method: string, binary?: Stream): Promise<void> {
    const bin = binary !== undefined && (frame.t === 'res' || frame.t === 'page') ? encodeBinary(frame) : undefined
    const bytes = bin === undefined ? encodeJson(frame) : bin
    if (bytes.byteLength > this.maxFrameBytes) {
      const what = frame.t === 'page' ? `page ${frame.seq} of ${method}` : `${method} ${frame.t === 'res' ? 'response' : 'frame'}`
      throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `${what} is ${bytes.byteLength} bytes, over the ${this.maxFrameBytes}-byte frame limit${frame.t === 'res' ? ' (answer in pages instead)' : ''}`)
    }
    const d = deadline(this.writeTimeoutMs, parent)
    try {
      if (bin === undefined) await lp.write(bytes as Uint8Array, { signal: d.signal })
      else if (bin.parts.length === 1) await lp.write(bin.parts[0], { signal: d.signal })
      else await sendPieces(binary!, bin, d.signal)
    } finally {
      d.clear()
    }
  }

  private async readFrame (lp: LengthPrefixedStream<Stream>, ms: number, parent: AbortSignal | undefined, peer: string, op: string, into?: (bytes: number) => Uint8Array): Promise<Frame> {
    const d = deadline(ms, parent)
    try {
      const list = await lp.read({ signal: d.signal })
      const buf = into !== undefined && list.byteLength >= PAGE_INTO_MIN_BYTES && inPieces(list) ? joinPieces(list, into(list.byteLength)) : list.subarray()
      this.noteFrame(buf, peer)
      return parseFrame(buf, peer)
    } catch (e) {
      throw p2pError(e, { peer, op, deadline: d })
    } finally {
      d.clear()
    }
  }

  // ------------------------------------------------------------------------------- client side

  private assertCallable (method: string): string {
    if (this._status !== 'started') throw new RbtError(ErrorCode.NOT_RUNNING, `rpc is ${this._status}`)
    const protocol = this.protocols.get(method)
    if (protocol === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `unknown rpc method ${method}`)
    return protocol
  }

  /** Remembers a peer that sends binary frames (see binaryPeers). */
  private noteFrame (buf: Uint8Array, peer: string): void {
    if (buf[0] !== BINARY_FRAME_MARK || this.binaryPeers.has(peer)) return
    if (this.binaryPeers.size >= 4096) this.binaryPeers.clear()
    this.binaryPeers.add(peer)
  }

  /** A request frame: binary to a peer known to read binary frames, JSON to any other. */
  private requestBytes (frame: ReqFrame, peer: string): Uint8Array {
    return this.binaryPeers.has(peer) ? joinBinary(encodeBinary(frame)) : encodeJson(frame)
  }

  private encodeRequest (frame: ReqFrame, method: string, peer: string): Uint8Array {
    const bytes = this.requestBytes(frame, peer)
    if (bytes.byteLength > this.maxFrameBytes) {
      throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `${method} request is ${bytes.byteLength} bytes, over the ${this.maxFrameBytes}-byte frame limit`)
    }
    return bytes
  }

  /** Open a stream and send the request, all under deadline `d`. */
  private async open (peerId: string, method: string, protocol: string, payload: Uint8Array, d: Deadline): Promise<{ stream: Stream, lp: LengthPrefixedStream<Stream> }> {
    let stream: Stream | undefined
    try {
      stream = await this.host.openStream(peerId, protocol, { signal: d.signal })
      this.active.add(stream)
      const lp = this.lp(stream)
      await lp.write(payload, { signal: d.signal })
      return { stream, lp }
    } catch (e) {
      if (stream !== undefined) {
        this.active.delete(stream)
        stream.abort(e instanceof Error ? e : new Error(String(e)))
      }
      throw p2pError(e, { peer: peerId, op: `rpc ${method}`, deadline: d })
    }
  }

  async call<M extends UnaryMethods<T>> (peerId: string, method: M, request: RequestOf<T[M]>, opts: CallOptions = {}): Promise<ResponseOf<T[M]>> {
    const protocol = this.assertCallable(method)
    const id = opts.requestId ?? randomUUID()
    const d = deadline(opts.timeoutMs ?? this.timeoutMs, opts.signal)
    const started = Date.now()
    try {
      let frame: Frame
      try {
        frame = await this.callOnChannel(peerId, method, id, request, d) ?? await this.callOnStream(peerId, method, protocol, id, request, d)
      } finally {
        d.clear()
      }
      if (frame.t === 'res') {
        this.observe('client', method, started, 'ok')
        return frame.body as ResponseOf<T[M]>
      }
      if (frame.t === 'err') throw remoteError(frame, peerId, method)
      if (frame.t === 'page') throw protocolError(`${method} answered in pages; use callPaged`, peerId)
      throw protocolError(`unexpected ${frame.t} frame from ${peerId} for ${method}`, peerId)
    } catch (e) {
      this.observe('client', method, started, outcomeOf(e))
      throw e
    }
  }

  /** One request on a stream of its own (large requests, peers without the channel). */
  private async callOnStream (peerId: string, method: string, protocol: string, id: string, request: unknown, d: Deadline): Promise<Frame> {
    const payload = this.encodeRequest({ t: 'req', v: WIRE_VERSION, id, body: request, bin: 1 }, method, peerId)
    const { stream, lp } = await this.open(peerId, method, protocol, payload, d)
    try {
      const frame = await this.readFrame(lp, d.ms, d.signal, peerId, `rpc ${method}`)
      if (frame.id !== id && !(frame.t === 'err' && frame.id === UNKNOWN_ID)) throw protocolError(`peer ${peerId} answered ${method} request ${id} with id ${frame.id}`, peerId)
      // Our write side is done; closing lets both ends release the stream (stream limits).
      stream.close({ signal: d.signal }).catch(err => { stream.abort(err instanceof Error ? err : new Error(String(err))) })
      return frame
    } catch (e) {
      stream.abort(e instanceof Error ? e : new Error(String(e)))
      throw e
    } finally {
      this.active.delete(stream)
    }
  }

  // ------------------------------------------------------------------------------- channel

  /**
   * A small unary call over the caller's long-lived channel to the peer: two frames instead of a
   * stream of its own (open, protocol negotiation, request, answer, two closes). Answers
   * undefined when the call must take a stream instead (large request, peer without channel).
   */
  private async callOnChannel (peerId: string, method: string, id: string, request: unknown, d: Deadline): Promise<Frame | undefined> {
    const until = this.noChannel.get(peerId)
    if (until !== undefined) {
      if (until > Date.now()) return undefined
      this.noChannel.delete(peerId)
    }
    const op = `rpc ${method}`
    for (let attempt = 0; ; attempt++) {
      const ch = await this.channel(peerId, d)
      if (ch === undefined) return undefined
      const n = ch.next++
      const bytes = this.requestBytes({ t: 'req', v: WIRE_VERSION, id, m: method, n, body: request, bin: 1 }, peerId)
      if (bytes.byteLength > CHANNEL_MAX_REQUEST) return undefined
      const answer = new Promise<Frame>((resolve, reject) => { ch.pending.set(n, { resolve, reject }) })
      answer.catch(() => {})
      let sent = false
      try {
        await ch.send(bytes, d.signal)
        sent = true
        const frame = await raceAbort(answer, d.signal)
        if (frame.id !== id) throw protocolError(`peer ${peerId} answered ${method} request ${id} with id ${frame.id}`, peerId)
        return frame
      } catch (e) {
        // a channel that broke before the request went out (the peer restarted, say) is
        // replaced once; after that the request may have been served, so the error stands
        if (!sent && !d.signal.aborted && attempt === 0) continue
        if (d.signal.aborted && sent && !ch.closed) ch.send(encodeJson({ t: 'cancel', id, n })).catch(() => {})
        throw p2pError(e, { peer: peerId, op, deadline: d })
      } finally {
        ch.pending.delete(n)
      }
    }
  }

  private async channel (peerId: string, d: Deadline): Promise<Channel | undefined> {
    let p = this.channels.get(peerId)
    if (p === undefined) {
      p = this.openChannel(peerId, d)
      this.channels.set(peerId, p)
      p.catch(() => { if (this.channels.get(peerId) === p) this.channels.delete(peerId) })
    }
    try {
      return await raceAbort(p, d.signal)
    } catch (e) {
      const err = p2pError(e, { peer: peerId, op: 'rpc channel', deadline: d })
      if (err.code === ErrorCode.PROTOCOL) {
        this.noChannel.set(peerId, Date.now() + NO_CHANNEL_RETRY_MS)
        return undefined
      }
      throw err
    }
  }

  private async openChannel (peerId: string, d: Deadline): Promise<Channel> {
    // the channel outlives this call: only its opening is bounded by the call's deadline
    const stream = await this.host.openStream(peerId, this.channelProtocol, { signal: d.signal })
    this.active.add(stream)
    const lp = this.lp(stream)
    const write = this.serialWriter(lp)
    const ch: Channel = {
      peer: peerId,
      stream,
      pending: new Map(),
      next: 1,
      closed: false,
      send: async (bytes, signal) => {
        if (ch.closed) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `channel to ${peerId} is closed`)
        try {
          await write(bytes, signal)
        } catch (e) {
          // a write that failed on its own (not because this caller gave up) breaks the channel
          if (!(signal?.aborted ?? false) || (e instanceof RbtError && e.code === ErrorCode.TIMEOUT)) this.closeChannel(ch, e)
          throw e
        }
      }
    }
    void (async () => {
      try {
        for (;;) {
          const buf = (await lp.read()).subarray()
          this.noteFrame(buf, peerId)
          const f = parseFrame(buf, peerId)
          if (f.t !== 'res' && f.t !== 'err') throw protocolError(`unexpected ${f.t} frame on the channel from ${peerId}`, peerId)
          if (f.n !== undefined) ch.pending.get(f.n)?.resolve(f)
        }
      } catch (e) {
        this.closeChannel(ch, e)
      }
    })()
    return ch
  }

  /**
   * Frames written to one stream one after the other (never interleaved), each under the write
   * deadline; a write whose own deadline passed fails with TIMEOUT.
   */
  private serialWriter (lp: LengthPrefixedStream<Stream>): (bytes: Uint8Array, signal?: AbortSignal) => Promise<void> {
    let writing: Promise<void> = Promise.resolve()
    return async (bytes, signal) => {
      const w = writing.then(async () => {
        const wd = deadline(this.writeTimeoutMs, signal)
        try {
          await lp.write(bytes, { signal: wd.signal })
        } catch (e) {
          if (wd.timedOut()) throw new RbtError(ErrorCode.TIMEOUT, `frame write did not finish within ${this.writeTimeoutMs} ms`, { cause: e })
          throw e
        } finally {
          wd.clear()
        }
      })
      writing = w.catch(() => {})
      await w
    }
  }

  private closeChannel (ch: Channel, cause: unknown): void {
    if (ch.closed) return
    ch.closed = true
    const peer = ch.peer
    const cur = this.channels.get(peer)
    if (cur !== undefined) cur.then((c) => { if (c === ch) this.channels.delete(peer) }, () => {})
    this.active.delete(ch.stream)
    const err = cause instanceof RbtError ? cause : new RbtError(ErrorCode.PEER_UNREACHABLE, `channel to ${peer} closed: ${errorMessage(cause)}`, { details: { peer } })
    for (const p of ch.pending.values()) p.reject(err)
    ch.pending.clear()
    if (ch.stream.status === 'open') ch.stream.abort(err)
  }

  /** Server side of a channel: requests are served concurrently, answers written as they finish. */
  private async serveChannel (stream: Stream, connection: Connection): Promise<void> {
    const peer = connection.remotePeer.toString()
    const lp = this.lp(stream)
    const channelAbort = new AbortController()
    const inflight = new Map<number, AbortController>()
    const cancelled = new Set<number>()
    this.active.add(stream)
    this.serverAborts.add(channelAbort)
    const write = this.serialWriter(lp)
    const answer = (frame: Frame | Uint8Array): void => {
      if (channelAbort.signal.aborted) return
      write(frame instanceof Uint8Array ? frame : encodeJson(frame), channelAbort.signal).catch((e: unknown) => {
        channelAbort.abort(e)
        if (stream.status === 'open') stream.abort(e instanceof Error ? e : new Error(String(e)))
      })
    }
    try {
      for (;;) {
        const buf = (await raceAbort(lp.read(), channelAbort.signal)).subarray()
        this.noteFrame(buf, peer)
        const f = parseFrame(buf, peer)
        if (f.t === 'cancel') {
          const ac = inflight.get(f.n)
          if (ac !== undefined) { cancelled.add(f.n); ac.abort(new RbtError(ErrorCode.TIMEOUT, `caller ${peer} gave up`)) }
          continue
        }
        if (f.t !== 'req' || f.n === undefined || typeof f.m !== 'string') throw protocolError(`expected a channel request from ${peer}, got ${f.t}`, peer)
        const n = f.n
        const method = f.m
        const handler = this.handlers.get(method)
        if (handler === undefined || method === CHANNEL_METHOD) {
          answer({ t: 'err', ok: false, id: f.id, n, code: ErrorCode.PROTOCOL, message: `rpc ${method}: peer ${this.host.peerId} does not serve this method` })
          continue
        }
        if (inflight.size >= CHANNEL_MAX_INFLIGHT) {
          answer({ t: 'err', ok: false, id: f.id, n, code: ErrorCode.PROTOCOL, message: `peer ${this.host.peerId} has ${CHANNEL_MAX_INFLIGHT} requests of ${peer} running; retry later` })
          continue
        }
        const ac = new AbortController()
        // shared: one listener on the channel's signal for all of its requests in flight
        const unlink = onAbort(channelAbort.signal, () => { ac.abort(channelAbort.signal.reason) })
        inflight.set(n, ac)
        void this.runChannelRequest(handler, f, method, peer, ac).then((frame) => {
          if (frame !== undefined && !cancelled.has(n)) answer(frame)
        }).finally(() => {
          inflight.delete(n)
          cancelled.delete(n)
          unlink()
        })
      }
    } catch (e) {
      if (!channelAbort.signal.aborted) channelAbort.abort(e)
    } finally {
      for (const ac of inflight.values()) ac.abort(channelAbort.signal.reason)
      this.serverAborts.delete(channelAbort)
      this.active.delete(stream)
      if (stream.status === 'open') stream.abort(new Error('channel closed'))
    }
  }

  private async runChannelRequest (handler: AnyHandler, req: ReqFrame, method: string, peer: string, ac: AbortController): Promise<Frame | Uint8Array | undefined> {
    const id = req.id
    const n = req.n
    const ctx: RpcContext = { peerId: peer, method, requestId: id, signal: ac.signal }
    const started = Date.now()
    try {
      const result = await this.underDeadline(Promise.resolve().then(() => handler(req.body, ctx)), ac, method)
      if (isAsyncIterable(result)) {
        const it = result[Symbol.asyncIterator]()
        it.return?.().catch(() => {})
        throw protocolError(`${method} answers in pages; call it with callPaged`, peer)
      }
      const frame: ResFrame = { t: 'res', ok: true, id, n, body: result }
      const bytes = req.bin === 1 ? joinBinary(encodeBinary(frame)) : encodeJson(frame)
      if (bytes.byteLength > this.maxFrameBytes) {
        throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `${method} response is ${bytes.byteLength} bytes, over the ${this.maxFrameBytes}-byte frame limit (answer in pages instead)`)
      }
      this.observe('server', method, started, 'ok')
      return bytes
    } catch (e) {
      const cancelled = ac.signal.aborted && !(e instanceof RbtError && e.code === ErrorCode.TIMEOUT)
      this.observe('server', method, started, cancelled ? 'cancelled' : outcomeOf(e))
      if (cancelled) return undefined
      if (e instanceof RbtError) return { t: 'err', ok: false, id, n, code: e.code, message: e.message }
      this.log.warn(`${method} from ${peer} failed: ${errorMessage(e)}`)
      return { t: 'err', ok: false, id, n, code: ErrorCode.INTERNAL, message: `internal error while handling ${method}` }
    }
  }

  callPaged<M extends PagedMethods<T>> (peerId: string, method: M, request: RequestOf<T[M]>, opts: CallOptions = {}): AsyncIterable<PageOf<T[M]>> {
    return this.pages(peerId, method, request, opts) as AsyncIterable<PageOf<T[M]>>
  }

  private async * pages (peerId: string, method: string, request: unknown, opts: CallOptions): AsyncGenerator<unknown, void, undefined> {
    const protocol = this.assertCallable(method)
    const id = opts.requestId ?? randomUUID()
    const window = this.pageWindow
    const payload = this.encodeRequest({ t: 'req', v: WIRE_VERSION, id, body: request, credit: window, bin: 1 }, method, peerId)
    const first = deadline(opts.timeoutMs ?? this.timeoutMs, opts.signal)
    let opened: { stream: Stream, lp: LengthPrefixedStream<Stream> }
    try {
      opened = await this.open(peerId, method, protocol, payload, first)
    } catch (e) {
      first.clear()
      throw e
    }
    const { stream, lp } = opened
    let finished = false
    let expected = 0
    let outstanding = window
    const op = `rpc ${method}`
    try {
      for (;;) {
        let frame: Frame
        if (expected === 0) {
          try {
            frame = await this.readFrame(lp, first.ms, first.signal, peerId, op, opts.pageInto)
          } finally {
            first.clear()
          }
        } else {
          frame = await this.readFrame(lp, opts.pageTimeoutMs ?? this.pageTimeoutMs, opts.signal, peerId, `${op} page ${expected}`, opts.pageInto)
        }
        if (frame.id !== id && !(frame.t === 'err' && frame.id === UNKNOWN_ID)) {
          throw protocolError(`peer ${peerId} answered ${method} request ${id} with id ${frame.id}`, peerId)
        }
        if (frame.t === 'page') {
          if (frame.seq !== expected) throw protocolError(`${method}: page ${frame.seq} from ${peerId} arrived when ${expected} was due`, peerId)
          expected++
          outstanding--
          yield frame.body
          if (outstanding <= window / 2) {
            const grant = window - outstanding
            await this.writeClientFrame(lp, { t: 'credit', id, n: grant }, opts.signal, peerId, op)
            outstanding += grant
          }
        } else if (frame.t === 'end') {
          if (frame.pages !== expected) throw protocolError(`${method}: ${peerId} reported ${frame.pages} pages but sent ${expected}`, peerId)
          finished = true
          await this.closeStream(stream)
          return
        } else if (frame.t === 'err') {
          finished = true
          await this.closeStream(stream)
          throw remoteError(frame, peerId, method)
        } else if (frame.t === 'res') {
          throw protocolError(`${method} from ${peerId} answered with a single response; use call`, peerId)
        } else {
          throw protocolError(`unexpected ${frame.t} frame from ${peerId} for ${method}`, peerId)
        }
      }
    } finally {
      first.clear()
      this.active.delete(stream)
      if (!finished && stream.status === 'open') stream.abort(new Error('caller stopped reading pages'))
    }
  }

  private async writeClientFrame (lp: LengthPrefixedStream<Stream>, frame: Frame, parent: AbortSignal | undefined, peer: string, op: string): Promise<void> {
    const d = deadline(this.writeTimeoutMs, parent)
    try {
      await lp.write(encodeJson(frame), { signal: d.signal })
    } catch (e) {
      throw p2pError(e, { peer, op, deadline: d })
    } finally {
      d.clear()
    }
  }
}

/** Frames below this are joined as before even when the caller gives buffers (end and error frames, small pages). */
const PAGE_INTO_MIN_BYTES = 64 * 1024

/** Whether `list` holds more than one piece (a single one is taken as it is, no copy). */
function inPieces (list: Awaited<ReturnType<LengthPrefixedStream<Stream>['read']>>): boolean {
  let n = 0
  for (const _ of list) if (++n > 1) return true
  return false
}
