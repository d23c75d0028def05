/**
 * The reference's node-to-node calls: raw `/x/<target peer id>RubixCore/1.0` streams carrying one
 * HTTP/1.1 request and its response, which Kubo's `p2p listen` / `p2p forward` map to local TCP
 * ports (the name is the target's own peer id followed by `RubixCore`).
 *
 * Kubo pipes a stream and its TCP connection both ways and closes both as soon as either
 * direction ends, so:
 *   - the dialer (`xHttpRequest`) writes its request and keeps its side open until the whole
 *     response is in (a half-close would make Kubo drop the listener's connection before it
 *     answers); anything but 200 is a failure, and every call has a deadline (Go's client has none);
 *   - the handler (`handleXStreams`) gives each stream to an HTTP server as a connection (the
 *     node's own app, through `server.emit('connection')`), or pipes it to a local TCP port as
 *     `p2p listen` does; the response is written whole before the stream closes.
 */
import { Duplex } from 'node:stream'
import { createServer, type RequestListener, type Server } from 'node:http'
import { connect } from 'node:net'
import type { Connection, Stream } from '@libp2p/interface'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { silentLogger, type Logger } from '../../util/logger.js'
import { deadline, raceAbort } from '../deadline.js'
import { p2pError } from '../errors.js'
import { ResponseParser, writeRequest, type HttpRequest, type HttpResponse } from './http1.js'

export const RUBIX_CORE_APP = 'RubixCore'

/** `/x/<peerId>RubixCore/1.0`: the protocol a node listens on, named after itself. */
export function rubixCoreProtocol (peerId: string): string {
  return `/x/${peerId}${RUBIX_CORE_APP}/1.0`
}

/** What the /x/ streams need of the host (P2pHost has it). */
export interface XStreamHost {
  readonly peerId: string
  handleProtocol: (protocol: string, handler: (stream: Stream, connection: Connection) => void | Promise<void>, opts?: { maxInboundStreams?: number, maxOutboundStreams?: number }) => Promise<void>
  unhandleProtocol: (protocol: string) => Promise<void>
  openStream: (peerId: string, protocol: string, opts: { signal: AbortSignal }) => Promise<Stream>
}

/** Default deadline of one call: the reference's listener gives a request 10 minutes. */
export const DEFAULT_X_TIMEOUT_MS = 600_000

export interface XRequestOptions {
  timeoutMs?: number
  signal?: AbortSignal
  /** responses past this many bytes fail (default MAX_RESPONSE_BYTES) */
  maxBytes?: number
}

/** Sends `bytes` on a stream, waiting for the send buffer to drain when it is full. */
async function sendAll (stream: Stream, bytes: Uint8Array, signal: AbortSignal): Promise<void> {
  const SLICE = 64 * 1024
  for (let off = 0; off < bytes.length; off += SLICE) {
    if (!stream.send(bytes.subarray(off, Math.min(off + SLICE, bytes.length)))) await stream.onDrain({ signal })
  }
}

/**
 * One HTTP/1.1 request to `peerId`'s RubixCore listener on a new stream, and its whole response.
 * A status other than 200 is a PROTOCOL error carrying the status and body in its details.
 */
export async function xHttpRequest (host: XStreamHost, peerId: string, req: HttpRequest, opts: XRequestOptions = {}): Promise<HttpResponse> {
  const timeoutMs = opts.timeoutMs ?? DEFAULT_X_TIMEOUT_MS
  const d = deadline(timeoutMs, opts.signal)
  const op = `${req.method} ${req.path.split('?')[0]} over ${RUBIX_CORE_APP}`
  let stream: Stream | undefined
  let res: HttpResponse
  try {
    stream = await host.openStream(peerId, rubixCoreProtocol(peerId), { signal: d.signal })
    const s = stream
    const parser = new ResponseParser(opts.maxBytes)
    // listening before the request goes out: an answer that comes early (a refusal before the
    // whole body is read) must not be missed
    const whole = new Promise<void>((resolve, reject) => {
      const feed = (fn: () => void): void => {
        try { fn() } catch (e) { reject(e); return }
        if (parser.done) resolve()
      }
      s.addEventListener('message', (e) => { feed(() => { parser.push(e.data.subarray()) }) })
      s.addEventListener('remoteCloseWrite', () => { feed(() => { parser.end() }) })
      s.addEventListener('close', (e) => {
        if (e.error !== undefined) reject(e.error)
        else feed(() => { parser.end() })
      })
    })
    whole.catch(() => {})
    // a peer that answered whole before reading all of the request may close its side: that is fine
    await sendAll(s, writeRequest(req), d.signal).catch((e: unknown) => { if (!parser.done) throw e })
    await raceAbort(whole, d.signal)
    res = parser.response
  } catch (e) {
    if (stream !== undefined && stream.status === 'open') stream.abort(e instanceof Error ? e : new Error(String(e)))
    throw p2pError(e, { peer: peerId, op, deadline: d })
  } finally {
    d.clear()
  }
  // the whole response is in: now the stream may close
  if (stream.status === 'open') stream.close().catch(() => { stream?.abort(new Error('close failed')) })
  if (res.status !== 200) {
    throw new RbtError(ErrorCode.PROTOCOL, `${op}: peer ${peerId} answered ${res.status} ${res.reason}`.trim(), {
      details: { peer: peerId, status: res.status, body: res.body.subarray(0, 4096).toString('utf8') }
    })
  }
  return res
}

/** A libp2p stream as a Node socket-like Duplex (what an HTTP server or a pipe expects). */
export function streamDuplex (stream: Stream): Duplex {
  const d = new Duplex({
    allowHalfOpen: true,
    read () { stream.resume() },
    write (chunk: Buffer, _enc, cb) {
      try {
        if (stream.send(chunk)) cb()
        else stream.onDrain().then(() => { cb() }, cb)
      } catch (e) { cb(e as Error) }
    },
    final (cb) { stream.close().then(() => { cb() }, cb) },
    destroy (err, cb) {
      if (err !== null) { if (stream.status === 'open') stream.abort(err) } else if (stream.status === 'open') stream.close().catch(() => {})
      cb(err)
    }
  })
  stream.addEventListener('message', (e) => {
    const b = e.data instanceof Uint8Array ? e.data : e.data.subarray()
    if (!d.push(b)) stream.pause()
  })
  stream.addEventListener('remoteCloseWrite', () => { d.push(null) })
  stream.addEventListener('close', (e) => {
    d.push(null)
    if (e.error !== undefined) d.destroy(e.error)
  })
  // what node:http asks of a socket
  Object.assign(d, {
    setTimeout: () => d, setNoDelay: () => d, setKeepAlive: () => d, ref: () => d, unref: () => d,
    remoteAddress: '127.0.0.1', remotePort: 0, localAddress: '127.0.0.1', localPort: 0, encrypted: false
  })
  return d
}

/** An HTTP server that takes /x/ streams as connections (it never listens on a port itself). */
export function createXHttpServer (listener: RequestListener): Server {
  const server = createServer(listener)
  // a caller that closes its side after the request still gets the whole answer
  ;(server as Server & { httpAllowHalfOpen: boolean }).httpAllowHalfOpen = true
  return server
}

export type XTarget = { server: Server } | { host: string, port: number }

export interface XHandlerOptions {
  logger?: Logger
  maxInboundStreams?: number
}

/**
 * Serves `/x/<own peer id>RubixCore/1.0`: each stream becomes a connection of `target.server`,
 * or is piped to `target.host:target.port` as Kubo's `p2p listen` does. Returns the removal.
 */
export async function handleXStreams (host: XStreamHost, target: XTarget, opts: XHandlerOptions = {}): Promise<() => Promise<void>> {
  const log = opts.logger ?? silentLogger
  const protocol = rubixCoreProtocol(host.peerId)
  await host.handleProtocol(protocol, (stream) => {
    if ('server' in target) {
      target.server.emit('connection', streamDuplex(stream))
      return
    }
    const sock = connect({ host: target.host, port: target.port })
    const dup = streamDuplex(stream)
    // as Kubo does: when either direction ends, both close
    let closed = false
    const closeBoth = (err?: Error): void => {
      if (closed) return
      closed = true
      if (err !== undefined) { sock.destroy(); dup.destroy(err); return }
      sock.end()
      dup.end()
    }
    sock.on('error', (e) => { log.debug(`${protocol} target ${target.host}:${target.port}: ${errorMessage(e)}`); closeBoth(e) })
    dup.on('error', (e) => { closeBoth(e) })
    sock.on('end', () => { closeBoth() })
    dup.on('end', () => { closeBoth() })
    sock.pipe(dup, { end: false })
    dup.pipe(sock, { end: false })
  }, { maxInboundStreams: opts.maxInboundStreams ?? 256, maxOutboundStreams: 256 })
  return async () => { await host.unhandleProtocol(protocol) }
}
