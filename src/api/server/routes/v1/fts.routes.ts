import { ok } from '../../../contract/envelope.js'
import type { ApiServices, FtApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'

export function ftRoutes (r: Registrar, s: ApiServices): void {
  const fts = (): FtApi => {
    if (s.fts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'FTs are not served by this node')
    return s.fts
  }
  r.on('ftsMint', async ({ body }) => await fts().mint({
    did: body.did, ftName: body.ft_name, ftCount: body.ft_count, tokenCount: body.token_count, startIndex: body.ft_num_start_index ?? 0
  }))
  r.on('ftsList', async () => ok('FTs retrieved successfully', await fts().list()))
}
