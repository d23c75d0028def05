import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { Registrar } from '../../registrar.js'

/** Legacy /api account endpoints: the envelope plus the `account_info` list old clients read. */
export function legacyAccountRoutes (r: Registrar, s: ApiServices): void {
  r.on('legacyGetAccountInfo', async ({ query }) => {
    const info = [await s.tokens.accountInfo(query.did)]
    const env = { ...ok('Got account info successfully', info), account_info: info }
    return env
  })
}
