import { ok } from '../../../contract/envelope.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { ApiServices } from '../../services.js'
import type { Registrar } from '../../registrar.js'

export function nodeRoutes (r: Registrar, s: ApiServices): void {
  r.on('nodeStart', async () => ok(await s.node.startCore(), null))
  r.on('nodeShutdown', async () => {
    s.node.requestShutdown()
    return ok('Shutting down...', null)
  })
  r.on('nodePeerId', async () => {
    const id = s.node.peerId()
    return ok(id, id)
  })
  r.on('nodePing', async ({ query }) => {
    const { rttMs, message } = await s.node.ping(query.peerID)
    return ok(message, { peerID: query.peerID, rtt_ms: rttMs })
  })
  r.on('nodeAddPeers', async ({ body }) => {
    await s.node.addPeer(body.DID, body.PeerID, body.DIDType)
    return ok('Peers added successfully', null)
  })
  r.on('nodeStatus', async () => ok('Node status', s.node.status()))
  r.on('nodeOverview', async () => {
    if (s.node.overview === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'node overview not available')
    return ok('Node overview', await s.node.overview())
  })
}
