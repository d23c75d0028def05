import { ok } from '../../../contract/envelope.js'
import type { ApiServices, P2pApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'

/** The wire as it is: connected peers, a connect, Kubo's DHTs and the reference's peer_service topic. */
export function p2pRoutes (r: Registrar, s: ApiServices): void {
  const api = (): P2pApi => {
    if (s.p2p === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'the p2p routes are not served by this node')
    return s.p2p
  }
  r.on('p2pPeers', async () => {
    const peers = await api().peers()
    return ok(`${peers.length} connected peer(s)`, peers)
  })
  r.on('p2pConnect', async ({ body }) => {
    const peerId = await api().connect(body.addr)
    return ok(`connected to ${peerId}`, { peer_id: peerId })
  })
  r.on('p2pProvide', async ({ body }) => {
    const dht = await api().provide(body.cid, body.dht)
    return ok(`provided ${body.cid} on the Kubo ${dht.toUpperCase()} DHT`, { cid: body.cid, dht })
  })
  r.on('p2pProviders', async ({ query }) => {
    const providers = await api().providers(query.cid, { ...(query.dht !== undefined ? { dht: query.dht } : {}), ...(query.timeout_ms !== undefined ? { timeoutMs: query.timeout_ms } : {}) })
    return ok(`${providers.length} provider(s) of ${query.cid}`, { cid: query.cid, providers })
  })
  r.on('p2pPeerService', async () => {
    const heard = api().peerService()
    return ok(`${heard.length} PeerMap(s) heard on peer_service`, heard)
  })
}
