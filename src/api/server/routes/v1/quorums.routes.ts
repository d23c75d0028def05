import { fail, ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { Registrar } from '../../registrar.js'

export function quorumRoutes (r: Registrar, s: ApiServices): void {
  r.on('quorumsAdd', async ({ body }) => {
    await s.consensus.quorumsAdd(body.did)
    return ok('Quorums added successfully', null)
  })
  r.on('quorumsList', async () => ok('Got all quorums successfully', s.consensus.quorumsList()))
  r.on('quorumsRemoveAll', async () => {
    await s.consensus.quorumsRemoveAll()
    return ok('Removed all quorums successfully', null)
  })
  r.on('quorumsSetup', async ({ body }) => {
    await s.consensus.quorumsSetup(body.did, body.password, body.priv_password ?? body.password)
    return ok('Quorum setup done successfully', null)
  })
  r.on('quorumsStatus', async ({ query }) => {
    const up = await s.consensus.quorumStatus(query.quorumAddress)
    // a reachable quorum that is not set up is an answer, not a failure of the request
    return up ? ok('Quorum is setup', null) : fail('Quorum is not setup') as never
  })
}
