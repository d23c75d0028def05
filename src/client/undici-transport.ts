import { Pool } from 'undici'
import type { HttpRequest, HttpResponse, HttpTransport } from './transport.js'

/** undici Pool transport for long-lived callers (benchmarks, tests, other services). */
export function undiciTransport (origin: string, connections = 32): HttpTransport {
  const pool = new Pool(origin, { connections, pipelining: 1 })
  return {
    request: async (req: HttpRequest): Promise<HttpResponse> => {
      const u = new URL(req.url)
      const res = await pool.request({
        method: req.method as 'GET',
        path: u.pathname + u.search,
        body: req.body,
        headers: { accept: 'application/json', ...req.headers },
        headersTimeout: req.timeoutMs,
        bodyTimeout: req.timeoutMs
      })
      return { status: res.statusCode, text: await res.body.text() }
    },
    close: async () => { await pool.close() }
  }
}
