import { ok, type Envelope } from '../../../contract/envelope.js'
import type { LegacyAccountInfo } from '../../../contract/legacy-api-routes.js'
import type { ApiServices } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { didCreateInput, didSetupInput } from '../v1/dids.routes.js'
import { answered, withKeys } from './answer.js'

/**
 * The reference's `/api` identity and node routes (legacy-api.md §3), each over the service its
 * /svc/v1 route uses (docs/api.md, "The reference's /api routes").
 */
export function legacyNodeRoutes (r: Registrar, s: ApiServices): void {
  // scripts poll this route until it answers 200 and then use the node: it answers from the store as
  // soon as the API listens, and what they call next waits for a starting core (readiness.ts)
  r.on('legacyGetAllDid', async () => await allDids())
  const allDids = async (): Promise<Envelope<null>> => await answered(async () => {
    const dids = await s.identity.list()
    const info: LegacyAccountInfo[] = []
    for (const did of dids) {
      try {
        info.push(await s.tokens.accountInfo(did))
      } catch (err) {
        // as the reference: a DID whose balance cannot be read is still listed, with zeros
        if (!(err instanceof RbtError)) throw err
        info.push({ did, did_type: 0, rbt_amount: 0, pledged_rbt: 0, locked_rbt: 0, pinned_rbt: 0 })
      }
    }
    return withKeys(ok('Got all DIDs', null), { account_info: info })
  }, { account_info: [] })
  r.on('legacyCreateDid', async ({ body, c }) => await answered(async () =>
    ok('DID created successfully', await s.identity.create(await didCreateInput(c, body)))))
  r.on('legacyRegisterDid', async ({ body }) => await answered(async () => await s.identity.register(body.did)))
  r.on('legacySetupDid', async ({ c }) => await answered(async () => {
    const res = await s.identity.setup(await didSetupInput(c))
    return ok('DID added successfully', res.did)
  }))
  r.on('legacyGetPeerId', async () => await answered(async () => ok(s.node.peerId(), null)))
  r.on('legacyStart', async () => await answered(async () => ok(await s.node.startCore(), null)))
  r.on('legacyShutdown', async () => {
    s.node.requestShutdown()
    return ok('Shutting down...', null)
  })
  r.on('legacyNodeStatus', async () => await answered(async () => {
    s.node.status()
    return ok('Node is up and running', null)
  }))
  r.on('legacyPing', async ({ query }) => await answered(async () => ok((await s.node.ping(query.peerID)).message, null)))
  r.on('legacyAddPeerDetails', async ({ body }) => await answered(async () => {
    await s.node.addPeer(body.DID, body.PeerID, body.DIDType)
    return ok('Peers added successfully', null)
  }))
}
