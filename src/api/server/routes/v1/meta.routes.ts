import { ok } from '../../../contract/envelope.js'
import { buildOpenApi } from '../../../contract/openapi.js'
import type { Registrar } from '../../registrar.js'

export function metaRoutes (r: Registrar, version: string): void {
  let doc: Record<string, unknown> | undefined
  r.on('openapi', async ({ c }) => {
    doc ??= buildOpenApi(version)
    // The OpenAPI document is served bare (tools expect it at the top level), not in the envelope.
    return c.json(doc) as never
  })
}
