import { createRequire } from 'node:module'
import type { HttpRequest, HttpResponse, HttpTransport } from './transport.js'

// required, not imported: on Node 24 an ES import of node:http makes its ES module face, which reads
// every export, and the getters of WebSocket, EventSource and the like load Node's copy of undici
// (10-15 ms of every CLI call)
const http = createRequire(import.meta.url)('node:http') as typeof import('node:http')

/**
 * node:http transport: no extra module to load, so a one-shot CLI call starts fast
 * (undici and fetch cost 100-150 ms of start-up per process on Node 20).
 */
export function nodeHttpTransport (): HttpTransport {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  return {
    // a streamed body's chunk is written before the next is asked for, and drain is awaited (below)
    sendsChunksInTurn: true,
    request: async (req: HttpRequest) => await new Promise<HttpResponse>((resolve, reject) => {
      const headers: Record<string, string | number> = { accept: 'application/json', ...req.headers }
      const body = req.body
      if (body !== undefined) headers['content-length'] = typeof body === 'string' || body instanceof Uint8Array ? Buffer.byteLength(body) : body.length
      const r = http.request(req.url, { method: req.method, headers, agent, timeout: req.timeoutMs }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }) })
        res.on('error', reject)
      })
      r.on('timeout', () => { r.destroy(Object.assign(new Error(`no answer within ${req.timeoutMs} ms`), { code: 'ETIMEDOUT' })) })
      r.on('error', reject)
      if (body === undefined || typeof body === 'string' || body instanceof Uint8Array) {
        if (body !== undefined) r.write(body)
        r.end()
        return
      }
      // a streamed body: one chunk at a time, waiting for the socket to drain
      void (async () => {
        for await (const chunk of body.chunks()) {
          if (!r.write(chunk)) {
            await new Promise<void>((resolve, reject) => {
              const drained = (): void => { r.off('error', failed); resolve() }
              const failed = (e: Error): void => { r.off('drain', drained); reject(e) }
              r.once('drain', drained)
              r.once('error', failed)
            })
          }
        }
        r.end()
      })().catch((e) => { r.destroy(e as Error) })
    }),
    close: async () => { agent.destroy() }
  }
}
