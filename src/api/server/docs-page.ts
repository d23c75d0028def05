/**
 * `GET /svc/v1/docs`: the API reference page, Swagger UI over `GET /svc/v1/openapi.json`
 * (docs/decisions/0007-api-docs-page.md).
 *
 * Not part of the route contract: these routes answer HTML, scripts and styles, not envelopes, so
 * they are mounted on the app directly, behind the same guard as every other route. Everything the
 * page loads comes from the node itself (the `swagger-ui-dist` package's files and a small init
 * script of ours), so the page and its assets carry a Content-Security-Policy without
 * 'unsafe-inline' or 'unsafe-eval'.
 */
import { createHash } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createRequire } from 'node:module'
import { dirname, join } from 'node:path'
import type { Context, Hono } from 'hono'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { paths } from '../contract/paths.js'

export const DOCS_PATH = '/svc/v1/docs'
const ASSETS = `${DOCS_PATH}/assets`
const INIT_SCRIPT = 'docs-init.js'

/**
 * Scripts, styles and images of the page: nothing may load from elsewhere, no inline script or
 * style element, no eval. Swagger UI's stylesheet draws its icons as data: SVGs, hence img-src.
 */
export const DOCS_CSP = [
  "default-src 'self'",
  "img-src 'self' data:",
  "object-src 'none'",
  "base-uri 'none'",
  "form-action 'none'",
  "frame-ancestors 'none'"
].join('; ')

const TYPES: Record<string, string> = {
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
  '.png': 'image/png'
}

/**
 * The only files of swagger-ui-dist that are served; any other name is 404. The standalone preset
 * is left out on purpose: its top bar (a box to load other documents) draws its logo with an
 * inline <style> element, which the CSP refuses; the base layout has none.
 */
const PACKAGE_FILES = new Set([
  'swagger-ui-bundle.js',
  'swagger-ui.css',
  'index.css',
  'favicon-32x32.png',
  'favicon-16x16.png'
])

function initScript (specUrl: string): string {
  return `'use strict'
window.addEventListener('load', function () {
  window.ui = SwaggerUIBundle({
    url: ${JSON.stringify(specUrl)},
    dom_id: '#swagger-ui',
    deepLinking: true,
    queryConfigEnabled: false,
    validatorUrl: null,
    presets: [SwaggerUIBundle.presets.apis],
    layout: 'BaseLayout'
  })
})
`
}

function page (): string {
  const a = (name: string): string => `${ASSETS}/${name}`
  return `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>rbtnode API</title>
<link rel="stylesheet" href="${a('swagger-ui.css')}">
<link rel="stylesheet" href="${a('index.css')}">
<link rel="icon" type="image/png" sizes="32x32" href="${a('favicon-32x32.png')}">
<link rel="icon" type="image/png" sizes="16x16" href="${a('favicon-16x16.png')}">
</head>
<body>
<div id="swagger-ui"></div>
<script src="${a('swagger-ui-bundle.js')}"></script>
<script src="${a(INIT_SCRIPT)}"></script>
</body>
</html>
`
}

interface Asset { body: Uint8Array, type: string, etag: string }

function asset (body: Uint8Array | string, type: string): Asset {
  const bytes = typeof body === 'string' ? Buffer.from(body, 'utf8') : body
  return { body: bytes, type, etag: `"${createHash('sha256').update(bytes).digest('base64url').slice(0, 22)}"` }
}

/** The folder of the installed swagger-ui-dist package. */
function packageDir (): string {
  return dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'))
}

function send (c: Context, a: Asset): Response {
  c.header('Content-Security-Policy', DOCS_CSP)
  c.header('X-Content-Type-Options', 'nosniff')
  c.header('Referrer-Policy', 'no-referrer')
  // revalidated on every load (cheap: the ETag), so an upgraded node never serves a stale bundle
  c.header('Cache-Control', 'no-cache')
  c.header('ETag', a.etag)
  if (c.req.header('if-none-match') === a.etag) return c.body(null, 304)
  c.header('Content-Type', a.type)
  return c.body(a.body as Uint8Array<ArrayBuffer>, 200)
}

/** Mounts the page and its assets on the app (behind the app's guard). Files are read once, on first use. */
export function docsPage (app: Hono): void {
  const cache = new Map<string, Asset>()
  let html: Asset | undefined
  const load = (name: string): Asset | undefined => {
    let a = cache.get(name)
    if (a !== undefined) return a
    if (name === INIT_SCRIPT) {
      a = asset(initScript(paths.openapi.path), TYPES['.js']!)
    } else if (PACKAGE_FILES.has(name)) {
      a = asset(readFileSync(join(packageDir(), name)), TYPES[name.slice(name.lastIndexOf('.'))]!)
    } else {
      return undefined
    }
    cache.set(name, a)
    return a
  }

  app.get(DOCS_PATH, (c) => send(c, html ??= asset(page(), 'text/html; charset=utf-8')))
  app.get(`${DOCS_PATH}/`, (c) => c.redirect(DOCS_PATH, 301))
  app.get(`${ASSETS}/:name`, (c) => {
    const a = load(c.req.param('name'))
    if (a === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `No such file of the docs page: ${c.req.path}`)
    return send(c, a)
  })
}
