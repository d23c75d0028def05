import { Hono, type Context } from 'hono'
import type { z } from 'zod'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { silentLogger } from '../../util/logger.js'
import type { Envelope } from '../contract/envelope.js'
import { fail } from '../contract/envelope.js'
import { normalizeKeys } from '../contract/normalize-keys.js'
import { routes, type RouteDef, type RouteId } from '../contract/routes.js'
import type { ApiServices } from './services.js'
import { toHttpError } from './errors.js'
import type { Registrar } from './registrar.js'
import { apiGuard, checkContentType, readLimitedText, type GuardOptions } from './guard.js'
import { nodeRoutes } from './routes/v1/node.routes.js'
import { bootstrapRoutes } from './routes/v1/bootstrap.routes.js'
import { p2pRoutes } from './routes/v1/p2p.routes.js'
import { metaRoutes } from './routes/v1/meta.routes.js'
import { tokenRoutes } from './routes/v1/tokens.routes.js'
import { legacyAccountRoutes } from './routes/legacy/account.routes.js'
import { didRoutes, signatureRoutes } from './routes/v1/dids.routes.js'
import { isMultipart } from './multipart.js'
import { quorumRoutes } from './routes/v1/quorums.routes.js'
import { operatorRoutes } from './routes/v1/operator.routes.js'
import { txRoutes } from './routes/v1/tx.routes.js'
import { legacyTxRoutes } from './routes/legacy/tx.routes.js'
import { legacyNodeRoutes } from './routes/legacy/node.routes.js'
import { legacyQuorumRoutes } from './routes/legacy/quorum.routes.js'
import { legacyTokenRoutes } from './routes/legacy/tokens.routes.js'
import { legacyFtRoutes } from './routes/legacy/fts.routes.js'
import { legacyNftRoutes } from './routes/legacy/nfts.routes.js'
import { legacyScRoutes } from './routes/legacy/sc.routes.js'
import { legacyOtherRoutes } from './routes/legacy/other.routes.js'
import { nftRoutes } from './routes/v1/nfts.routes.js'
import { scRoutes } from './routes/v1/sc.routes.js'
import { ftRoutes } from './routes/v1/fts.routes.js'
import { serviceRoutes } from './routes/v1/services.routes.js'
import { syncRoutes } from './routes/v1/sync.routes.js'
import { docsPage } from './docs-page.js'
import { CORE_WAIT_MS, LOCAL_ROUTES } from './readiness.js'

/** The Prometheus scrape path (docs/operations.md, "Metrics"). */
export const METRICS_PATH = '/metrics'

export interface AppOptions {
  version: string
  logger?: Logger
  /** Largest JSON body accepted, in bytes (read while streaming; default 1 MiB). */
  maxJsonBytes?: number
  /** Host, origin and token rules (docs/security.md); loopback names only by default. */
  guard?: GuardOptions
  /** GET /metrics (Prometheus text, not an envelope); absent: no such route. */
  metrics?: { contentType: string, render: () => Promise<string> }
}

function zodMessage (err: z.ZodError, where: string): string {
  const issue = err.issues[0]
  if (issue === undefined) return `Invalid ${where}`
  const path = issue.path.length > 0 ? issue.path.join('.') : where
  if (issue.code === 'invalid_type' && (issue as { input?: unknown }).input === undefined) return `Invalid input: ${path} is required`
  return `Invalid input: ${path}: ${issue.message}`
}

async function readJson (c: Context, maxBytes: number): Promise<unknown> {
  const text = await readLimitedText(c, maxBytes)
  if (text.trim() === '') return undefined
  checkContentType(c)
  try {
    return JSON.parse(text)
  } catch {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid input: request body is not valid JSON')
  }
}

/** Builds the Hono app. Dependencies are handed in; there are no module singletons. */
export function createApp (services: ApiServices, opts: AppOptions): Hono {
  const app = new Hono()
  const log = opts.logger ?? silentLogger
  const maxJson = opts.maxJsonBytes ?? 1024 * 1024
  const table = routes as unknown as Record<RouteId, RouteDef>
  const registered = new Set<RouteId>()
  app.use('*', apiGuard(opts.guard))

  const registrar: Registrar = {
    on (id, handler) {
      const def = table[id]
      registered.add(id)
      app.on(def.method, def.path, async (c) => {
        let body: unknown
        const multipartUpload = def.multipart === true && isMultipart(c)
        if (multipartUpload) {
          // the route reads the upload itself (parseUpload, with its own size limits)
        } else if (def.body !== undefined) {
          const raw = normalizeKeys(await readJson(c, maxJson), def.body)
          const parsed = def.body.safeParse(raw ?? {})
          if (!parsed.success) throw new RbtError(ErrorCode.INVALID_INPUT, zodMessage(parsed.error, 'body'))
          body = parsed.data
        } else if (def.method === 'POST' && def.multipart !== true) {
          // routes without a body schema still refuse malformed JSON rather than ignoring it
          await readJson(c, maxJson)
        }
        let query: unknown
        if (def.query !== undefined) {
          const raw = normalizeKeys(c.req.query(), def.query)
          const parsed = def.query.safeParse(raw)
          if (!parsed.success) throw new RbtError(ErrorCode.INVALID_INPUT, zodMessage(parsed.error, 'query'))
          query = parsed.data
        }
        // a route that may need the network waits for a starting core (readiness.ts); local ones answer now
        if (!LOCAL_ROUTES.has(id) && services.node.starting?.() === true) await services.node.untilUp?.(CORE_WAIT_MS)
        const env: unknown = await handler({ body, query, params: c.req.param() as Record<string, string>, c } as never)
        // a handler may answer with its own Response (the OpenAPI document, file downloads)
        if (env instanceof Response) return env
        return c.json(env as Envelope<unknown>, 200)
      })
    }
  }

  nodeRoutes(registrar, services)
  bootstrapRoutes(registrar, services)
  p2pRoutes(registrar, services)
  metaRoutes(registrar, opts.version)
  tokenRoutes(registrar, services)
  legacyAccountRoutes(registrar, services)
  didRoutes(registrar, services)
  signatureRoutes(registrar, services)
  quorumRoutes(registrar, services)
  operatorRoutes(registrar, services)
  txRoutes(registrar, services)
  legacyTxRoutes(registrar, services)
  legacyNodeRoutes(registrar, services)
  legacyQuorumRoutes(registrar, services)
  legacyTokenRoutes(registrar, services)
  legacyFtRoutes(registrar, services)
  legacyNftRoutes(registrar, services)
  legacyScRoutes(registrar, services)
  legacyOtherRoutes(registrar, services)
  nftRoutes(registrar, services)
  scRoutes(registrar, services)
  ftRoutes(registrar, services)
  serviceRoutes(registrar, services)
  syncRoutes(registrar, services)

  const metrics = opts.metrics
  if (metrics !== undefined) {
    // outside the contract table (no envelope), behind the same guard as every route
    app.get(METRICS_PATH, async (c) => {
      c.header('Cache-Control', 'no-store')
      return c.body(await metrics.render(), 200, { 'Content-Type': metrics.contentType })
    })
  }

  const missing = (Object.keys(table) as RouteId[]).filter((id) => !registered.has(id))
  if (missing.length > 0) throw new Error(`routes without a handler: ${missing.join(', ')}`)
  // the API reference page: HTML and static files, not envelopes, so outside the route contract
  docsPage(app)

  app.notFound((c) => {
    const path = c.req.path
    const methods = Object.values(table).filter((r) => pathMatches(r.path, path)).map((r) => r.method)
    if (methods.length > 0) {
      c.header('Allow', [...new Set(methods)].join(', '))
      return c.json(fail(`Method ${c.req.method} not allowed on ${path}; use ${[...new Set(methods)].join(' or ')}`, { code: ErrorCode.METHOD_NOT_ALLOWED }), 405)
    }
    return c.json(fail(`Route not found: ${c.req.method} ${path}`, { code: ErrorCode.ROUTE_NOT_FOUND }), 404)
  })

  app.onError((err, c) => {
    const { status, envelope } = toHttpError(err)
    if (status >= 500) log.error(`${c.req.method} ${c.req.path}: ${envelope.message}`)
    return c.json(envelope, status as 400)
  })

  return app
}

function pathMatches (pattern: string, path: string): boolean {
  const re = new RegExp('^' + pattern.replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\\?:[A-Za-z_]+/g, '[^/]+') + '/?$')
  return re.test(path)
}
