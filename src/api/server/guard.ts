/**
 * The browser guard in front of every HTTP surface of the node (`/svc/v1`, `/api`, the 2.6 port):
 * what stops a web page the operator happens to open from driving the local API (docs/security.md).
 *
 * - Host: only loopback names and the names the operator allowed are served (DNS rebinding: a
 *   page's own name resolving to 127.0.0.1 still arrives with that name).
 * - Origin and Sec-Fetch-Site: a request a browser marks as coming from another site is refused
 *   unless its origin is allowed; CORS headers exist only for allowed origins.
 * - Content type: a body must be what the route reads (JSON routes application/json, uploads
 *   multipart/form-data), so a CORS-"simple" text/plain or form POST never reaches a handler.
 * - Opt-in bearer token (`-apiAuth`): every request carries it.
 */
import { timingSafeEqual } from 'node:crypto'
import type { Context, MiddlewareHandler } from 'hono'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { readLimited } from './multipart.js'

export interface GuardOptions {
  /** Host names served besides localhost, 127.0.0.1 and [::1] (`-allowHosts`); `*` serves any. */
  allowHosts?: readonly string[]
  /** Browser origins allowed to call the API (`-corsOrigins`, e.g. http://localhost:3000); none by default. */
  corsOrigins?: readonly string[]
  /** When set, every request needs `Authorization: Bearer <token>` (`-apiAuth`). */
  token?: string
}

const LOOPBACK_NAMES = new Set(['localhost', '127.0.0.1', '[::1]', '::1'])

/** The host name of a Host header value or URL authority, lower case, without the port. */
export function hostName (authority: string): string {
  const a = authority.trim().toLowerCase()
  if (a.startsWith('[')) {
    const end = a.indexOf(']')
    return end < 0 ? a : a.slice(0, end + 1)
  }
  const colon = a.indexOf(':')
  return colon < 0 ? a : a.slice(0, colon)
}

/** An origin as browsers send it: scheme://host[:port], lower case, no trailing slash. */
export function normalizeOrigin (o: string): string {
  return o.trim().toLowerCase().replace(/\/+$/, '')
}

function forbidden (message: string): RbtError {
  return new RbtError(ErrorCode.FORBIDDEN, message)
}

function sameToken (given: string, want: string): boolean {
  const a = Buffer.from(given)
  const b = Buffer.from(want)
  return a.length === b.length && timingSafeEqual(a, b)
}

/** Builds the guard middleware; errors go to the app's one error handler. */
export function apiGuard (opts: GuardOptions = {}): MiddlewareHandler {
  const hosts = new Set([...LOOPBACK_NAMES, ...(opts.allowHosts ?? []).map((h) => hostName(h))])
  const anyHost = hosts.has('*')
  const origins = new Set((opts.corsOrigins ?? []).map(normalizeOrigin))
  const hostAllowed = (name: string): boolean => anyHost || hosts.has(name)

  /** The request's authority (Host header, else the URL's) once every name it carries is served. */
  const checkHost = (c: Context, url: URL): string => {
    const header = c.req.header('host')
    for (const name of header !== undefined ? [hostName(header), hostName(url.host)] : [hostName(url.host)]) {
      if (!hostAllowed(name)) throw forbidden(`Host "${name}" is not served by this node; add it with run -allowHosts`)
    }
    return header ?? url.host
  }

  /** The allowed origin a browser sent, undefined for the node's own pages and non-browser calls. */
  const checkOrigin = (c: Context, url: URL, authority: string): string | undefined => {
    const origin = c.req.header('origin')
    const site = c.req.header('sec-fetch-site')?.toLowerCase()
    if (origin !== undefined && origin !== '') {
      const o = normalizeOrigin(origin)
      if (origins.has(o)) return o
      // the node's own pages (same scheme, host and port as the request, already checked) are not another site
      if (o === normalizeOrigin(`${url.protocol}//${authority}`)) return undefined
      throw forbidden(`Origin ${origin} may not call this node's API; allow it with run -corsOrigins`)
    }
    if (site === 'cross-site' || site === 'same-site') throw forbidden('a request from another site may not call this node\'s API; allow its origin with run -corsOrigins')
    return undefined
  }

  return async (c, next) => {
    const url = new URL(c.req.url)
    const authority = checkHost(c, url)
    const allowedOrigin = checkOrigin(c, url, authority)
    if (allowedOrigin !== undefined) {
      c.header('Access-Control-Allow-Origin', c.req.header('origin') ?? allowedOrigin)
      c.header('Vary', 'Origin')
      if (c.req.method === 'OPTIONS') {
        c.header('Access-Control-Allow-Methods', 'GET, POST, OPTIONS')
        c.header('Access-Control-Allow-Headers', 'Content-Type, Authorization')
        c.header('Access-Control-Max-Age', '600')
        return c.body(null, 204)
      }
    }
    if (opts.token !== undefined) {
      const auth = c.req.header('authorization') ?? ''
      const m = /^Bearer\s+(\S+)$/i.exec(auth)
      if (m === null || !sameToken(m[1]!, opts.token)) throw new RbtError(ErrorCode.UNAUTHORIZED, 'this node\'s API needs its token: Authorization: Bearer <token> (the token is in <data dir>/api.cookie; the CLI reads RBTNODE_API_TOKEN or -apiToken)')
    }
    await next()
  }
}

/**
 * Refuses a JSON route's body sent as anything but JSON (415): the content types a page can send
 * without a preflight never reach a handler. Called once a body turned out not to be empty: a
 * request without one needs no content type. Uploads are told apart before (isMultipart).
 */
export function checkContentType (c: Context): void {
  const type = (c.req.header('content-type') ?? '').split(';')[0]!.trim().toLowerCase()
  if (type !== 'application/json' && !/^application\/[a-z0-9.+-]+\+json$/.test(type)) {
    throw new RbtError(ErrorCode.UNSUPPORTED_MEDIA_TYPE, `Content-Type ${type === '' ? '(none)' : type} is not accepted here; send application/json`)
  }
}

/** A JSON request body as text, read under the byte limit while streaming (see readLimited). */
export async function readLimitedText (c: Context, maxBytes: number): Promise<string> {
  const bytes = await readLimited(c.req.raw, maxBytes, 'Request body')
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('utf8')
}
