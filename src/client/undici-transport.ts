import { Pool } from 'undici'
import type { HttpRequest, HttpResponse, HttpTransport } from './transport.js'

export interface UndiciTransportOptions {
  /**
   * Connect to this unix socket instead of the origin's host and port (the origin still names the
   * Host header), e.g. a bridge to a node in another network namespace.
   */
  socketPath?: string
}

type UndiciBody = Parameters<Pool['request']>[0]['body']

/**
 * A streamed body handed to undici as the iterable it is: undici writes a chunk and waits for the
 * socket to drain before it asks for the next (StreamBody); its types do not list iterables,
 * which it takes.
 */
const iterableBody = (chunks: AsyncIterable<Uint8Array>): UndiciBody => chunks as unknown as UndiciBody

/** undici Pool transport for long-lived callers (benchmarks, tests, other services). */
export function undiciTransport (origin: string, connections = 32, opts: UndiciTransportOptions = {}): HttpTransport {
  const pool = new Pool(origin, { connections, pipelining: 1, ...(opts.socketPath !== undefined ? { socketPath: opts.socketPath } : {}) })
  return {
    // undici writes a streamed body's chunk and waits for drain before it asks for the next
    sendsChunksInTurn: true,
    request: async (req: HttpRequest): Promise<HttpResponse> => {
      const u = new URL(req.url)
      const res = await pool.request({
        method: req.method as 'GET',
        path: u.pathname + u.search,
        body: req.body === undefined || typeof req.body === 'string' || req.body instanceof Uint8Array ? req.body : iterableBody(req.body.chunks()),
        headers: { accept: 'application/json', ...req.headers, ...(req.body !== undefined && typeof req.body === 'object' && !(req.body instanceof Uint8Array) ? { 'content-length': String(req.body.length) } : {}) },
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs
      })
      return { status: res.statusCode, text: await res.body.text() }
    },
    close: async () => { await pool.close() }
  }
}
