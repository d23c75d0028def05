import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../../../node/services.js'
import type { OperatorApi } from '../../../../node/operator-api.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../app.js'

/** The operator features of the reference's CLI (docs/api.md, "Operator features"). */
export function operatorRoutes (r: Registrar, s: ApiServices): void {
  const op = (): OperatorApi => {
    if (s.operator === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'operator features are not available on this node')
    return s.operator
  }
  r.on('tokensReleaseLocked', async ({ body }) => {
    const res = await op().releaseLocked(body.min_age_seconds !== undefined ? { minAgeMs: body.min_age_seconds * 1000 } : {})
    // the reference's text when nothing is held back
    const msg = res.kept.length === 0
      ? `All Locked Tokens Releases Successfully Or NO Locked Tokens to release (${res.released.length} released)`
      : `Released ${res.released.length} locked token(s); kept ${res.kept.length} held by transactions that may still commit`
    return ok(msg, res)
  })
}
