import { z } from 'zod'
import { routes, type RouteDef } from './routes.js'

const envelopeSchema = {
  type: 'object',
  required: ['status', 'message', 'result'],
  properties: {
    status: { type: 'boolean' },
    message: { type: 'string' },
    result: {}
  }
}

function jsonSchema (s: z.ZodType): Record<string, unknown> {
  const out = z.toJSONSchema(s, { unrepresentable: 'any', io: 'input' }) as Record<string, unknown>
  delete out.$schema
  return out
}

/** OpenAPI 3.1 document generated from the shared route table. */
export function buildOpenApi (version: string, table: Record<string, RouteDef> = routes as unknown as Record<string, RouteDef>): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {}
  for (const [id, r] of Object.entries(table)) {
    const oaPath = r.path.replace(/:([A-Za-z_]+)/g, '{$1}')
    const params: unknown[] = []
    for (const m of r.path.matchAll(/:([A-Za-z_]+)/g)) {
      params.push({ name: m[1], in: 'path', required: true, schema: { type: 'string' } })
    }
    if (r.query !== undefined) {
      const qs = jsonSchema(r.query) as { properties?: Record<string, unknown>, required?: string[] }
      for (const [name, schema] of Object.entries(qs.properties ?? {})) {
        params.push({ name, in: 'query', required: qs.required?.includes(name) ?? false, schema })
      }
    }
    const op: Record<string, unknown> = {
      operationId: id,
      summary: r.summary,
      tags: r.tags,
      responses: {
        200: { description: r.async === true ? 'Envelope; for an async operation the first answer is the "Password needed" challenge' : 'Envelope', content: { 'application/json': { schema: envelopeSchema } } },
        '4XX': { description: 'Envelope with status false', content: { 'application/json': { schema: envelopeSchema } } }
      }
    }
    if (params.length > 0) op.parameters = params
    if (r.body !== undefined) {
      op.requestBody = { required: true, content: { 'application/json': { schema: jsonSchema(r.body) } } }
    } else if (r.multipart === true) {
      op.requestBody = { required: true, content: { 'multipart/form-data': { schema: { type: 'object' } } } }
    }
    paths[oaPath] ??= {}
    paths[oaPath][r.method.toLowerCase()] = op
  }
  // GET /metrics is served next to the table, outside the envelope (docs/operations.md, "Metrics")
  paths['/metrics'] = {
    get: {
      operationId: 'metrics',
      summary: 'Prometheus metrics of the node (text exposition format 0.0.4, not an envelope)',
      tags: ['node'],
      responses: {
        200: { description: 'Prometheus text', content: { 'text/plain; version=0.0.4': { schema: { type: 'string' } } } },
        '4XX': { description: 'Envelope with status false (e.g. a missing bearer token on a node started with -apiAuth)', content: { 'application/json': { schema: envelopeSchema } } }
      }
    }
  }
  return {
    openapi: '3.1.0',
    info: { title: 'rbtnode API', version, description: 'HTTP API of an rbtnode node. Every response is the envelope {status, message, result}.', license: { name: 'MIT', identifier: 'MIT' } },
    // first the node that serves this document ('/' resolves against the document's own URL: the
    // docs page's "Try it out" calls go to that node, within its CSP 'self'), then any node by
    // address: 127.0.0.1 and port 20000+n unless -host and -port say otherwise
    servers: [{ url: '/', description: 'the node serving this document' }, {
      url: 'http://{host}:{port}',
      description: 'one rbtnode node',
      variables: { host: { default: '127.0.0.1', description: 'the address the API binds to (-host)' }, port: { default: '20000', description: 'the API port (-port; 20000+n by default)' } }
    }],
    components: {
      securitySchemes: {
        bearerAuth: { type: 'http', scheme: 'bearer', description: 'A node started with -apiAuth requires `Authorization: Bearer <token>` on every call; the token is written to <-p>/api.cookie at each start. Without -apiAuth no token is needed.' }
      }
    },
    // the token is needed only by a node started with -apiAuth: {} names the unauthenticated case
    security: [{ bearerAuth: [] }, {}],
    paths
  }
}
