/**
 * The release-2.6 listener (its own port, 1898 in the reference). One route per entry of the
 * legacy26 contract; bodies are validated before the handler runs; every error becomes the 2.6
 * envelope in one place (`toLegacyError`), with the same status codes as the main API.
 */
import { Hono, type Context } from 'hono'
import type { z } from 'zod'
import { legacy26Routes, type Legacy26Api, type Legacy26Envelope, type Legacy26Reply, type Legacy26RouteId } from '../../contract/legacy26.js'
import { ErrorCode, RbtError } from '../../../util/errors.js'
import { silentLogger, type Logger } from '../../../util/logger.js'
import { toHttpError } from '../errors.js'
import { apiGuard, checkContentType, readLimitedText, type GuardOptions } from '../guard.js'

export interface Legacy26AppOptions {
  logger?: Logger
  /** largest JSON body, read while streaming (default 1 MiB, like the main API) */
  maxJsonBytes?: number
  /** the same host, origin and token rules as the main API */
  guard?: GuardOptions
}

export function legacyEnvelope<T> (ok: boolean, message: string, data: T | null = null): Legacy26Envelope<T> {
  return { data, message, status: ok ? 'true' : 'false' }
}

/**
 * The one place errors become 2.6 envelopes. A failed transaction also carries the reference's
 * `data.response` with status "Failed", so 2.6 clients find the reason where they look for it.
 */
export function toLegacyError (err: unknown, route?: Legacy26RouteId): { status: number, envelope: Legacy26Envelope } {
  const { status, envelope } = toHttpError(err)
  const code = (envelope.result as { code?: string } | null)?.code ?? ErrorCode.INTERNAL
  const data = route === 'initiateTransaction' ? { response: { status: 'Failed', message: envelope.message }, code } : { code }
  return { status, envelope: legacyEnvelope(false, envelope.message, data) }
}

function zodMessage (err: z.ZodError, raw: unknown): string {
  const issue = err.issues[0]
  if (issue === undefined) return 'Invalid input'
  const path = issue.path.length > 0 ? issue.path.join('.') : 'body'
  let at: unknown = raw
  for (const k of issue.path) at = at !== null && typeof at === 'object' ? (at as Record<PropertyKey, unknown>)[k] : undefined
  if (issue.path.length > 0 && at === undefined) return `Invalid input: ${path} is required`
  return `Invalid input: ${path}: ${issue.message}`
}

async function readBody (c: Context, maxBytes: number): Promise<unknown> {
  const text = await readLimitedText(c, maxBytes)
  if (text.trim() === '') return {}
  checkContentType(c)
  try {
    return JSON.parse(text)
  } catch {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: request body is not valid JSON')
  }
}

const reply = (r: Legacy26Reply): Legacy26Envelope => legacyEnvelope(r.ok, r.message, r.data)

export function createLegacy26App (api: Legacy26Api, opts: Legacy26AppOptions = {}): Hono {
  const app = new Hono()
  const log = opts.logger ?? silentLogger
  const maxJson = opts.maxJsonBytes ?? 1024 * 1024
  app.use('*', apiGuard(opts.guard))
  const handlers: { [R in Legacy26RouteId]: (body: z.output<(typeof legacy26Routes)[R]['body']>) => Promise<Legacy26Reply> } = {
    generateEcDSAKeys: async (b) => await api.generateKeys('transaction', b),
    generateQuorumKeys: async (b) => await api.generateKeys('quorum', b),
    startQuorumService: async (b) => await api.startQuorumService(b),
    initiateTransaction: async (b) => await api.initiateTransaction(b),
    unpledgeToken: async (b) => await api.unpledgeToken(b),
    verifyPoW: async (b) => await api.verifyPoW(b)
  }
  for (const id of Object.keys(legacy26Routes) as Legacy26RouteId[]) {
    const def = legacy26Routes[id]
    app.post(def.path, async (c) => {
      const raw = await readBody(c, maxJson)
      const parsed = def.body.safeParse(raw)
      if (!parsed.success) throw new RbtError(ErrorCode.INVALID_INPUT, zodMessage(parsed.error, raw))
      const r = await (handlers[id] as (b: unknown) => Promise<Legacy26Reply>)(parsed.data)
      return c.json(reply(r), 200)
    })
  }
  const routeOf = new Map(Object.entries(legacy26Routes).map(([id, r]) => [r.path as string, id as Legacy26RouteId]))
  app.notFound((c) => {
    if (routeOf.has(c.req.path)) {
      c.header('Allow', 'POST')
      return c.json(legacyEnvelope(false, `Method ${c.req.method} not allowed on ${c.req.path}; use POST`, { code: ErrorCode.METHOD_NOT_ALLOWED }), 405)
    }
    return c.json(legacyEnvelope(false, `Route not found: ${c.req.method} ${c.req.path}`, { code: ErrorCode.ROUTE_NOT_FOUND }), 404)
  })
  app.onError((err, c) => {
    const { status, envelope } = toLegacyError(err, routeOf.get(c.req.path))
    if (status >= 500) log.error(`${c.req.method} ${c.req.path}: ${envelope.message}`)
    return c.json(envelope, status as 400)
  })
  return app
}
