/**
 * HTTP/1.1 framing for the reference's `/x/<peer>RubixCore/1.0` streams, where one request and
 * its response cross one stream as raw bytes:
 *   - `writeRequest` lays a request out as Go's net/http client does (request line, Host,
 *     User-Agent, Connection: close, Content-Length, the other headers sorted by name, then the
 *     Accept-Encoding: gzip its transport adds);
 *   - `ResponseParser` takes the response's bytes as they come and says when the whole response
 *     is in: a Content-Length body, a chunked body (Go's server chunks any body it did not know the
 *     length of), or a body that ends with the stream; a gzip body is unpacked as Go's transport
 *     does when it asked for gzip itself.
 */
import { gunzipSync } from 'node:zlib'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'

export interface HttpRequest {
  method: string
  /** path and query, e.g. `/api/ping?did=…` */
  path: string
  /** the Host header (Go writes the URL's host: `localhost:<port>` behind a Kubo forward) */
  host: string
  headers?: Record<string, string>
  body?: Uint8Array | string
}

export interface HttpResponse {
  status: number
  reason: string
  /** header names in lower case; repeated headers joined with ', ' */
  headers: Record<string, string>
  body: Buffer
}

/** A response larger than this is refused (the reference's peer calls answer a few MB at most). */
export const MAX_RESPONSE_BYTES = 64 * 1024 * 1024
const MAX_HEAD_BYTES = 64 * 1024

const GO_USER_AGENT = 'Go-http-client/1.1'
const WRITTEN_APART = new Set(['host', 'user-agent', 'content-length', 'transfer-encoding', 'connection', 'accept-encoding', 'trailer'])

/** Go's canonical header key: `content-type` → `Content-Type`. */
export function canonicalHeaderKey (k: string): string {
  return k.toLowerCase().replace(/(^|-)([a-z])/g, (_m, sep: string, c: string) => sep + c.toUpperCase())
}

const METHODS_WITH_BODY = new Set(['POST', 'PUT', 'PATCH'])

/** The request's bytes as Go's net/http client writes them (one request, `Connection: close`). */
export function writeRequest (r: HttpRequest): Buffer {
  if (!/^[A-Z]+$/.test(r.method)) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid HTTP method ${JSON.stringify(r.method)}`)
  if (!r.path.startsWith('/') || /[\s]/.test(r.path)) throw new RbtError(ErrorCode.INVALID_INPUT, `invalid request path ${JSON.stringify(r.path)}`)
  const body = r.body === undefined ? undefined : typeof r.body === 'string' ? Buffer.from(r.body, 'utf8') : Buffer.from(r.body.buffer, r.body.byteOffset, r.body.byteLength)
  const given = new Map<string, string>()
  for (const [k, v] of Object.entries(r.headers ?? {})) {
    if (/[\r\n]/.test(k) || /[\r\n]/.test(v)) throw new RbtError(ErrorCode.INVALID_INPUT, 'a header holds a line break')
    given.set(k.toLowerCase(), v)
  }
  const lines = [`${r.method} ${r.path} HTTP/1.1`, `Host: ${r.host}`, `User-Agent: ${given.get('user-agent') ?? GO_USER_AGENT}`, 'Connection: close']
  if (body !== undefined && (body.length > 0 || METHODS_WITH_BODY.has(r.method))) lines.push(`Content-Length: ${body.length}`)
  else if (body === undefined && METHODS_WITH_BODY.has(r.method)) lines.push('Content-Length: 0')
  const rest = [...given.entries()].filter(([k]) => !WRITTEN_APART.has(k)).map(([k, v]) => [canonicalHeaderKey(k), v] as const)
  rest.sort((a, b) => a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0)
  for (const [k, v] of rest) lines.push(`${k}: ${v}`)
  lines.push(`Accept-Encoding: ${given.get('accept-encoding') ?? 'gzip'}`)
  const head = Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1')
  return body === undefined || body.length === 0 ? head : Buffer.concat([head, body])
}

const protocolError = (what: string): RbtError => new RbtError(ErrorCode.PROTOCOL, `malformed HTTP response: ${what}`)

type Phase = 'head' | 'body-length' | 'chunk-size' | 'chunk-data' | 'chunk-crlf' | 'trailer' | 'body-eof' | 'done'

/**
 * Feeds on the bytes of one response (`push`, then `end` when the stream ends) and gives the
 * response once whole. A response cut short (the stream ended before its declared length or
 * its last chunk) is a PROTOCOL error, never a short body.
 */
export class ResponseParser {
  private buf: Buffer = Buffer.alloc(0)
  private phase: Phase = 'head'
  private status = 0
  private reason = ''
  private headers: Record<string, string> = {}
  private readonly body: Buffer[] = []
  private bodyBytes = 0
  private remaining = 0
  private result?: HttpResponse

  constructor (private readonly maxBytes = MAX_RESPONSE_BYTES) {}

  get done (): boolean { return this.phase === 'done' }

  /** The response, once `done`. */
  get response (): HttpResponse {
    if (this.result === undefined) throw new Error('the response is not complete')
    return this.result
  }

  push (chunk: Uint8Array): void {
    if (this.phase === 'done') return // bytes after the response: Go's server sends none with Connection: close
    this.buf = this.buf.length === 0 ? Buffer.from(chunk.buffer, chunk.byteOffset, chunk.byteLength) : Buffer.concat([this.buf, chunk])
    this.run()
  }

  /** The stream ended: completes a body that runs to the end, and fails any other unfinished response. */
  end (): void {
    if (this.phase === 'done') return
    if (this.phase === 'body-eof') { this.finish(); return }
    if (this.phase === 'head') throw protocolError(this.buf.length === 0 ? 'the stream ended before any response' : 'the stream ended inside the header')
    throw protocolError(`the stream ended inside the body (${this.bodyBytes} bytes in)`)
  }

  private take (n: number): Buffer {
    const out = this.buf.subarray(0, n)
    this.buf = this.buf.subarray(n)
    return out
  }

  private addBody (b: Buffer): void {
    this.bodyBytes += b.length
    if (this.bodyBytes > this.maxBytes) throw protocolError(`the body is larger than ${this.maxBytes} bytes`)
    if (b.length > 0) this.body.push(Buffer.from(b)) // copied: `buf` is reused
  }

  private line (): string | undefined {
    const i = this.buf.indexOf('\r\n')
    if (i < 0) {
      if (this.buf.length > MAX_HEAD_BYTES) throw protocolError('a header line is too long')
      return undefined
    }
    const l = this.take(i + 2).subarray(0, i).toString('latin1')
    return l
  }

  private run (): void {
    for (;;) {
      switch (this.phase) {
        case 'head': {
          const end = this.buf.indexOf('\r\n\r\n')
          if (end < 0) {
            if (this.buf.length > MAX_HEAD_BYTES) throw protocolError('the header is too long')
            return
          }
          this.parseHead(this.take(end + 4).subarray(0, end).toString('latin1'))
          break
        }
        case 'body-length': {
          const n = Math.min(this.remaining, this.buf.length)
          this.addBody(this.take(n))
          this.remaining -= n
          if (this.remaining > 0) return
          this.finish()
          return
        }
        case 'chunk-size': {
          const l = this.line()
          if (l === undefined) return
          const m = /^([0-9a-fA-F]+)[ \t]*(;.*)?$/.exec(l)
          if (m === null) throw protocolError(`bad chunk size line ${JSON.stringify(l.slice(0, 40))}`)
          const size = parseInt(m[1], 16)
          if (!Number.isSafeInteger(size)) throw protocolError('a chunk size is too large')
          this.remaining = size
          this.phase = size === 0 ? 'trailer' : 'chunk-data'
          break
        }
        case 'chunk-data': {
          const n = Math.min(this.remaining, this.buf.length)
          this.addBody(this.take(n))
          this.remaining -= n
          if (this.remaining > 0) return
          this.phase = 'chunk-crlf'
          break
        }
        case 'chunk-crlf': {
          if (this.buf.length < 2) return
          if (this.take(2).toString('latin1') !== '\r\n') throw protocolError('a chunk is not followed by CRLF')
          this.phase = 'chunk-size'
          break
        }
        case 'trailer': {
          const l = this.line()
          if (l === undefined) return
          if (l === '') { this.finish(); return }
          break // trailer fields are read and dropped
        }
        case 'body-eof': {
          this.addBody(this.take(this.buf.length))
          return
        }
        case 'done':
          return
      }
    }
  }

  private parseHead (head: string): void {
    const lines = head.split('\r\n')
    const m = /^HTTP\/1\.([01]) (\d{3})(?: (.*))?$/.exec(lines[0])
    if (m === null) throw protocolError(`bad status line ${JSON.stringify(lines[0].slice(0, 60))}`)
    const status = Number(m[2])
    const headers: Record<string, string> = {}
    for (const l of lines.slice(1)) {
      const i = l.indexOf(':')
      if (i <= 0) throw protocolError(`bad header line ${JSON.stringify(l.slice(0, 60))}`)
      const k = l.slice(0, i).trim().toLowerCase()
      const v = l.slice(i + 1).trim()
      headers[k] = headers[k] === undefined ? v : `${headers[k]}, ${v}`
    }
    if (status >= 100 && status < 200) return // an interim answer (100 Continue): the real one follows
    this.status = status
    this.reason = m[3] ?? ''
    this.headers = headers
    const te = headers['transfer-encoding']?.toLowerCase()
    const cl = headers['content-length']
    if (status === 204 || status === 304) {
      this.finish()
    } else if (te !== undefined && te !== 'identity') {
      if (!te.split(',').map((s) => s.trim()).includes('chunked')) throw protocolError(`transfer encoding ${te}`)
      this.phase = 'chunk-size'
    } else if (cl !== undefined) {
      if (!/^\d+$/.test(cl) || cl.includes(',')) throw protocolError(`Content-Length ${JSON.stringify(cl)}`)
      this.remaining = Number(cl)
      if (this.remaining > this.maxBytes) throw protocolError(`the body is larger than ${this.maxBytes} bytes`)
      if (this.remaining === 0) this.finish()
      else this.phase = 'body-length'
    } else {
      this.phase = 'body-eof'
    }
  }

  private finish (): void {
    this.phase = 'done'
    let body = Buffer.concat(this.body)
    if (this.headers['content-encoding']?.toLowerCase() === 'gzip') {
      try {
        body = gunzipSync(body, { maxOutputLength: this.maxBytes })
      } catch (e) {
        throw protocolError(`a gzip body does not unpack: ${errorMessage(e)}`)
      }
      delete this.headers['content-encoding']
      delete this.headers['content-length']
    }
    this.result = { status: this.status, reason: this.reason, headers: this.headers, body }
  }
}
