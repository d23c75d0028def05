import type { Envelope } from '../api/contract/envelope.js'
import { buildPath, paths, type RouteId } from '../api/contract/paths.js'
import type { BodyOf, QueryOf, ResultOf } from '../api/contract/routes.js'
import { ApiError } from './api-error.js'
import { nodeHttpTransport } from './node-http-transport.js'
import type { HttpTransport, StreamBody } from './transport.js'
import { open, stat } from 'node:fs/promises'
import { pendingChallenge, type SignatureHandlers } from './two-step.js'
import { DELIVERY_PENDING, SIGNING_PENDING, type TransferInput, type TransferResult } from './transfer-state.js'

export interface CallInput<R extends RouteId> {
  body?: BodyOf<R>
  query?: QueryOf<R>
  params?: Record<string, string>
  timeoutMs?: number
  /** multipart/form-data upload instead of a JSON body (routes marked multipart). */
  form?: FormInput
}

export interface FormInput {
  fields?: Record<string, string>
  /** Files by form field name: the bytes, or a file read as it is sent (`path`, never held whole) */
  files?: Record<string, { filename: string, data: Uint8Array } | { filename: string, path: string }>
}

/** A multipart/form-data body, built by hand (no FormData: keeps CLI start-up free of undici). */
export function encodeMultipart (form: FormInput): { body: Uint8Array, contentType: string } {
  const { parts, contentType } = multipartParts(form)
  if (parts.some((p) => 'path' in p)) throw new Error('a form with files read from disk is encoded with encodeMultipartStream')
  return { body: new Uint8Array(Buffer.concat(parts as Buffer[])), contentType }
}

function multipartParts (form: FormInput): { parts: Array<Buffer | { path: string }>, contentType: string } {
  const boundary = '----rbtnode' + Math.random().toString(16).slice(2) + Date.now().toString(16)
  const parts: Array<Buffer | { path: string }> = []
  const esc = (s: string): string => s.replace(/["\r\n]/g, '_')
  for (const [name, value] of Object.entries(form.fields ?? {})) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${esc(name)}"\r\n\r\n`), Buffer.from(value, 'utf8'), Buffer.from('\r\n'))
  }
  for (const [name, f] of Object.entries(form.files ?? {})) {
    parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${esc(name)}"; filename="${esc(f.filename)}"\r\nContent-Type: application/octet-stream\r\n\r\n`),
      'path' in f ? { path: f.path } : Buffer.from(f.data.buffer, f.data.byteOffset, f.data.byteLength), Buffer.from('\r\n'))
  }
  parts.push(Buffer.from(`--${boundary}--\r\n`))
  return { parts, contentType: `multipart/form-data; boundary=${boundary}` }
}

/** Buffers a file is read into in turn, for a transport that sends chunks in turn (HttpTransport.sendsChunksInTurn). */
const READ_BUFFERS = 3
const READ_BYTES = 1 << 20

/**
 * A multipart body whose files named by path are read as it is sent, 1 MiB at a time: with
 * `reuse` (a transport that sends chunks in turn) into a few buffers used in turn (a fresh buffer
 * per read made the sending process collect garbage for a fifth of its time), else each read
 * into a buffer of its own.
 */
export async function encodeMultipartStream (form: FormInput, opts: { reuse?: boolean } = {}): Promise<{ body: StreamBody, contentType: string }> {
  const { parts, contentType } = multipartParts(form)
  const sizes = await Promise.all(parts.map(async (p) => 'path' in p ? (await stat(p.path)).size : p.length))
  const chunks = async function * (): AsyncGenerator<Uint8Array> {
    const ring: Buffer[] = []
    let turn = 0
    for (const [i, p] of parts.entries()) {
      if (!('path' in p)) { yield p; continue }
      const fh = await open(p.path, 'r')
      try {
        let left = sizes[i]
        while (left > 0) {
          const buf = opts.reuse === true ? (ring[turn++ % READ_BUFFERS] ??= Buffer.allocUnsafeSlow(Math.min(READ_BYTES, left))) : Buffer.allocUnsafe(Math.min(READ_BYTES, left))
          const { bytesRead } = await fh.read(buf, 0, Math.min(buf.length, left), null)
          if (bytesRead === 0) throw new Error(`${p.path} became shorter while it was sent`)
          left -= bytesRead
          yield buf.subarray(0, bytesRead)
        }
      } finally {
        await fh.close()
      }
    }
  }
  return { body: { length: sizes.reduce((a, b) => a + b, 0), chunks }, contentType }
}

export interface ClientOptions {
  /** the node's API, e.g. http://127.0.0.1:20000 */
  baseUrl: string
  /** how bytes move (default: node:http with keep-alive; undiciTransport for many parallel calls) */
  transport?: HttpTransport
  timeoutMs?: number
  /** the API token of a node started with -apiAuth, sent as a bearer token */
  token?: string
}

/**
 * Typed client of the node's HTTP API over the shared route table. The one place where an HTTP
 * failure becomes an ApiError.
 */
export class RbtClient {
  readonly baseUrl: string
  private readonly transport: HttpTransport
  private readonly timeoutMs: number
  private readonly auth: Record<string, string>

  constructor (opts: ClientOptions) {
    this.baseUrl = opts.baseUrl.replace(/\/$/, '')
    this.transport = opts.transport ?? nodeHttpTransport()
    this.timeoutMs = opts.timeoutMs ?? 10 * 60_000
    this.auth = opts.token !== undefined && opts.token !== '' ? { authorization: `Bearer ${opts.token}` } : {}
  }

  /** The raw envelope (status may be false); throws only when no envelope came back. */
  async envelope<R extends RouteId>(id: R, input: CallInput<R> = {}): Promise<Envelope<ResultOf<R>> & { httpStatus: number }> {
    const def = paths[id]
    let url = this.baseUrl + buildPath(def.path, input.params)
    if (input.query !== undefined) {
      const qs = new URLSearchParams()
      for (const [k, v] of Object.entries(input.query as Record<string, unknown>)) {
        if (v !== undefined && v !== null) qs.set(k, String(v))
      }
      const s = qs.toString()
      if (s !== '') url += '?' + s
    }
    let body: string | Uint8Array | StreamBody | undefined
    let contentType: string | undefined
    if (input.form !== undefined) {
      const mp = Object.values(input.form.files ?? {}).some((f) => 'path' in f) ? await encodeMultipartStream(input.form, { reuse: this.transport.sendsChunksInTurn === true }) : encodeMultipart(input.form)
      body = mp.body
      contentType = mp.contentType
    } else if (def.method === 'POST') {
      body = JSON.stringify(input.body ?? {})
      contentType = 'application/json'
    }
    let res
    try {
      res = await this.transport.request({
        method: def.method,
        url,
        body,
        headers: { ...this.auth, ...(contentType !== undefined ? { 'content-type': contentType } : {}) },
        timeoutMs: input.timeoutMs ?? this.timeoutMs
      })
    } catch (e) {
      const code = (e as { code?: string }).code
      const msg = code === 'ECONNREFUSED'
        ? `cannot reach the node at ${this.baseUrl} (connection refused): is \`rbtnode run\` running on that address and port?`
        : `request to ${this.baseUrl} failed: ${(e as Error).message}`
      throw new ApiError(msg, 0, code ?? 'UNREACHABLE')
    }
    let env: Envelope<ResultOf<R>>
    try {
      env = JSON.parse(res.text)
    } catch {
      throw new ApiError(`the node answered HTTP ${res.status} without a JSON envelope`, res.status, 'PROTOCOL')
    }
    if (typeof env !== 'object' || env === null || typeof env.status !== 'boolean') {
      throw new ApiError(`the node answered HTTP ${res.status} without an envelope`, res.status, 'PROTOCOL')
    }
    return { ...env, httpStatus: res.status }
  }

  /** The envelope of a successful call; throws ApiError when status is false. */
  async call<R extends RouteId>(id: R, input: CallInput<R> = {}): Promise<Envelope<ResultOf<R>>> {
    const { httpStatus, ...env } = await this.envelope(id, input)
    if (!env.status) {
      const r = env.result as { code?: string } | null
      throw new ApiError(env.message, httpStatus, r?.code, env.result)
    }
    return env
  }

  /**
   * A two-step operation as one call: sends `id` and answers the node's challenges with
   * `handlers` until the final envelope. Throws ApiError when the node refuses (status false),
   * and when a challenge comes that the handlers cannot answer (code SIGNATURE_NEEDED).
   */
  async signed<R extends RouteId>(id: R, input: CallInput<R>, handlers: SignatureHandlers): Promise<Envelope<unknown>> {
    return await this.completeSigned(await this.call(id, input), handlers)
  }

  /** Drives the two-step flow from its first envelope (see signed). */
  async completeSigned (first: Envelope<unknown>, handlers: SignatureHandlers): Promise<Envelope<unknown>> {
    let env = first
    let attempt = 1
    let password: string | undefined
    for (let round = 0; round < 32; round++) {
      const ch = pendingChallenge(env)
      if (ch === undefined) return env
      let body: { id: string, password?: string, signature?: string }
      if (ch.hash !== null) {
        if (handlers.sign === undefined) throw new ApiError(`the DID's key is held outside the node: sign the hash ${ch.hash} (base64) and POST {id: "${ch.id}", signature} to /svc/v1/signature`, 200, 'SIGNATURE_NEEDED', ch)
        body = { id: ch.id, signature: await handlers.sign({ ...ch, hash: ch.hash }) }
      } else {
        if (handlers.password === undefined) throw new ApiError('the node asks for the private key password: pass a password handler', 200, 'SIGNATURE_NEEDED', ch)
        password ??= await handlers.password(ch, attempt)
        body = { id: ch.id, password }
      }
      try {
        env = await this.call('signatureComplete', { body: body as never })
      } catch (e) {
        if (!(e instanceof ApiError) || e.code !== 'WRONG_PASSWORD' || attempt > (handlers.passwordRetries ?? 0)) throw e
        attempt++
        password = undefined
      }
    }
    throw new ApiError('too many signature rounds', 0, 'PROTOCOL')
  }

  /**
   * Transfers RBT and waits for the outcome. A transfer the quorums decided whose delivery (or sign
   * round) is still being retried is not an error: its state says so, with its id. Any other
   * refusal throws ApiError.
   */
  async transfer (t: TransferInput, handlers: SignatureHandlers): Promise<TransferResult> {
    try {
      const env = await this.signed('txInitiate', { body: { initiator: t.from, owner: t.to, tokens: { rbt: t.amount }, memo: t.memo ?? '' } as never }, handlers)
      const txid = (env.result as { transactionID?: string } | null)?.transactionID ?? ''
      return { state: 'committed', transactionId: txid, message: env.message }
    } catch (e) {
      const txid = (e as ApiError).result as { transactionID?: unknown } | null | undefined
      if (e instanceof ApiError && (e.code === DELIVERY_PENDING || e.code === SIGNING_PENDING) && typeof txid?.transactionID === 'string') {
        return { state: e.code === DELIVERY_PENDING ? 'delivery_pending' : 'signing_pending', transactionId: txid.transactionID, message: e.message }
      }
      throw e
    }
  }

  async close (): Promise<void> {
    await this.transport.close?.()
  }
}
