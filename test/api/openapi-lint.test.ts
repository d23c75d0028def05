import { expect } from 'chai'
import { buildOpenApi } from '../../src/api/contract/openapi.js'

/** The part of @redocly/openapi-core this test uses (a devDependency: loaded by name, so the build never needs it). */
interface RedoclyLint {
  createConfig: (raw: { extends: string[] }) => Promise<unknown>
  lintFromString: (o: { source: string, absoluteRef: string, config: unknown }) => Promise<Array<{ severity: string, ruleId: string, message: string, location: Array<{ pointer?: string }> }>>
}
const REDOCLY = '@redocly/openapi-core'

/**
 * Third-party tools read the node's OpenAPI document: it passes Redocly's recommended rules with
 * no error and no warning (the bearer scheme of -apiAuth declared, servers named).
 */
describe('api: the OpenAPI document under Redocly\'s recommended lint', function () {
  this.timeout(60_000)

  it('has no problem under the recommended rules', async () => {
    const { createConfig, lintFromString } = await import(REDOCLY) as RedoclyLint
    const config = await createConfig({ extends: ['recommended'] })
    const problems = await lintFromString({ source: JSON.stringify(buildOpenApi('0.1.0')), absoluteRef: '/openapi.json', config })
    expect(problems.map((p) => `${p.severity} ${p.ruleId}: ${p.message} at ${p.location[0]?.pointer ?? ''}`)).to.deep.equal([])
  })

  it('declares the bearer token as optional: a node without -apiAuth needs none', () => {
    const doc = buildOpenApi('0.1.0') as { security: unknown[], components: { securitySchemes: Record<string, { type: string, scheme: string }> }, servers: Array<{ url: string }> }
    expect(doc.components.securitySchemes.bearerAuth).to.include({ type: 'http', scheme: 'bearer' })
    expect(doc.security).to.deep.equal([{ bearerAuth: [] }, {}])
    expect(doc.servers[1].url).to.equal('http://{host}:{port}')
  })

  it('names first the node serving the document, so the docs page calls its own origin', () => {
    // a client that takes the first server (Swagger UI's "Try it out") must reach the node it read
    // the document from, not 127.0.0.1:20000, which the page's CSP 'self' refuses
    const doc = buildOpenApi('0.1.0') as { servers: Array<{ url: string }> }
    expect(doc.servers[0].url).to.equal('/')
  })
})
