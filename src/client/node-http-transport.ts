import http from 'node:http'
import type { HttpRequest, HttpResponse, HttpTransport } from './transport.js'

/**
 * node:http transport: no extra module to load, so a one-shot CLI call starts fast
 * (undici and fetch cost 100-150 ms of start-up per process on Node 20).
 */
export function nodeHttpTransport (): HttpTransport {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 16 })
  return {
    request: async (req: HttpRequest) => await new Promise<HttpResponse>((resolve, reject) => {
      const headers: Record<string, string | number> = { accept: 'application/json', ...req.headers }
      if (req.body !== undefined) headers['content-length'] = Buffer.byteLength(req.body)
      const r = http.request(req.url, { method: req.method, headers, agent, timeout: req.timeoutMs }, (res) => {
        const chunks: Buffer[] = []
        res.on('data', (c: Buffer) => chunks.push(c))
        res.on('end', () => { resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }) })
        res.on('error', reject)
      })
      r.on('timeout', () => { r.destroy(Object.assign(new Error(`no answer within ${req.timeoutMs} ms`), { code: 'ETIMEDOUT' })) })
      r.on('error', reject)
      if (req.body !== undefined) r.write(req.body)
      r.end()
    }),
    close: async () => { agent.destroy() }
  }
}
