import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import { DOCS_CSP } from '../../src/api/server/docs-page.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { unusedConsensus } from './stub-consensus.js'

function services (): ApiServices {
  const unused = async (): Promise<never> => { throw new Error('not used here') }
  return {
    node: {
      status: () => { throw new Error('not used here') },
      startCore: unused,
      requestShutdown: () => {},
      peerId: () => '',
      ping: unused,
      addPeer: unused
    },
    ...unusedIdentity(),
    ...unusedConsensus(),
    ...unusedTokens(),
    bootstrap: { list: unused, add: unused, remove: unused, removeAll: unused }
  }
}

describe('api: the API reference page (GET /svc/v1/docs)', () => {
  const app = createApp(services(), { version: 'test' })
  const get = async (path: string, headers: Record<string, string> = {}): Promise<Response> =>
    await app.request(`http://127.0.0.1:20000${path}`, { headers })

  it('answers an HTML page with a strict CSP, no inline script or style, pointing at its own assets', async () => {
    const res = await get('/svc/v1/docs')
    expect(res.status).to.equal(200)
    expect(res.headers.get('content-type')).to.equal('text/html; charset=utf-8')
    const csp = res.headers.get('content-security-policy') ?? ''
    expect(csp).to.equal(DOCS_CSP)
    expect(csp.split(';').map((d) => d.trim())).to.include("default-src 'self'")
    expect(csp).to.not.match(/unsafe-inline|unsafe-eval|\*|https?:/)
    expect(res.headers.get('x-content-type-options')).to.equal('nosniff')
    const html = await res.text()
    const scripts = [...html.matchAll(/<script\b([^>]*)>([\s\S]*?)<\/script>/g)]
    expect(scripts).to.have.length(2)
    for (const [, attrs, body] of scripts) {
      expect(attrs).to.match(/ src="\/svc\/v1\/docs\/assets\/[\w.-]+\.js"/)
      expect(body!.trim()).to.equal('')
    }
    expect(html).to.not.match(/<style|\sstyle=|\son[a-z]+=|https?:\/\//i)
    // every file the page names is served, with its content type and the same CSP
    const refs = [...html.matchAll(/(?:src|href)="([^"]+)"/g)].map((m) => m[1]!)
    expect(refs).to.include.members(['/svc/v1/docs/assets/swagger-ui-bundle.js', '/svc/v1/docs/assets/swagger-ui.css', '/svc/v1/docs/assets/index.css', '/svc/v1/docs/assets/docs-init.js'])
    for (const ref of refs) {
      const a = await get(ref)
      expect(a.status, ref).to.equal(200)
      expect(a.headers.get('content-security-policy'), ref).to.equal(DOCS_CSP)
      const want = ref.endsWith('.js') ? 'text/javascript; charset=utf-8' : ref.endsWith('.css') ? 'text/css; charset=utf-8' : 'image/png'
      expect(a.headers.get('content-type'), ref).to.equal(want)
      expect((await a.arrayBuffer()).byteLength, ref).to.be.greaterThan(0)
    }
  })

  it('serves the package files and an init script that points Swagger UI at /svc/v1/openapi.json', async () => {
    const bundle = await get('/svc/v1/docs/assets/swagger-ui-bundle.js')
    expect(await bundle.text()).to.match(/SwaggerUIBundle/)
    const init = await (await get('/svc/v1/docs/assets/docs-init.js')).text()
    expect(init).to.include('"/svc/v1/openapi.json"')
    expect(init).to.match(/queryConfigEnabled: false/)
  })

  it('answers 304 to a matching If-None-Match', async () => {
    const first = await get('/svc/v1/docs/assets/swagger-ui.css')
    const etag = first.headers.get('etag')
    expect(etag).to.match(/^"[\w-]+"$/)
    const again = await get('/svc/v1/docs/assets/swagger-ui.css', { 'if-none-match': etag! })
    expect(again.status).to.equal(304)
    expect(await again.text()).to.equal('')
  })

  it('unknown asset names, other package files and traversal get 404', async () => {
    for (const p of [
      '/svc/v1/docs/assets/nope.js',
      '/svc/v1/docs/assets/index.html',
      '/svc/v1/docs/assets/swagger-ui-bundle.js.map',
      '/svc/v1/docs/assets/package.json',
      '/svc/v1/docs/assets/swagger-ui-standalone-preset.js',
      '/svc/v1/docs/assets/..%2Fpackage.json',
      '/svc/v1/docs/assets/..%2f..%2f..%2fpackage.json',
      '/svc/v1/docs/assets/%2e%2e%2fpackage.json',
      '/svc/v1/docs/assets/../../../package.json',
      '/svc/v1/docs/assets/swagger-ui.css/../../../../package.json',
      '/svc/v1/docs/assets/',
      '/svc/v1/docs/assets/a/swagger-ui.css'
    ]) {
      const res = await get(p)
      expect(res.status, p).to.equal(404)
      const env = await res.json() as { status: boolean }
      expect(env.status, p).to.equal(false)
    }
  })

  it('stays behind the guard: foreign Host and cross-site requests are refused, the own origin is not', async () => {
    const rebound = await app.request('http://attacker.example/svc/v1/docs', { headers: { host: 'attacker.example' } })
    expect(rebound.status).to.equal(403)
    const cross = await get('/svc/v1/docs/assets/swagger-ui-bundle.js', { 'sec-fetch-site': 'cross-site' })
    expect(cross.status).to.equal(403)
    const foreign = await get('/svc/v1/docs', { origin: 'https://evil.example' })
    expect(foreign.status).to.equal(403)
    const own = await get('/svc/v1/docs', { origin: 'http://127.0.0.1:20000', 'sec-fetch-site': 'same-origin' })
    expect(own.status).to.equal(200)
  })

  it('is not an operation of the OpenAPI document (no envelope)', async () => {
    const doc = await (await get('/svc/v1/openapi.json')).json() as { paths: Record<string, unknown> }
    expect(Object.keys(doc.paths).filter((p) => p.startsWith('/svc/v1/docs'))).to.deep.equal([])
    expect(doc.paths).to.have.property('/svc/v1/node/status')
  })
})
