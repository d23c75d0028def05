import { fail, ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import { didString } from '../../../contract/schemas.js'
import type { Registrar } from '../../registrar.js'
import { answered, didOf } from './answer.js'

/** "/ip4/…/p2p/12D3…/" as the reference scripts write it: the last "/" is not part of the address. */
function multiaddrs (peers: string[]): string[] {
  return peers.map((p) => p.replace(/\/+$/, '')).map((p) => {
    if (!p.startsWith('/')) throw new RbtError(ErrorCode.INVALID_MULTIADDR, `Invalid bootstrap peer: ${p}`)
    return p
  })
}

/** A quorum address of addquorum: the DID, or "<peer id>.<DID>". */
function quorumDid (address: string): string {
  const did = didOf(address)
  if (address.split('.').length > 2 || !didString.safeParse(did).success) throw new RbtError(ErrorCode.INVALID_DID, `Invalid quorum DID : ${address}`)
  return did
}

/** The reference's `/api` bootstrap and quorum routes (legacy-api.md §4) over the /svc/v1 services. */
export function legacyQuorumRoutes (r: Registrar, s: ApiServices): void {
  r.on('legacyAddBootstrap', async ({ body }) => await answered(async () => {
    await s.bootstrap.add(multiaddrs(body.peers))
    return ok('Bootstrap peers added successfully', null)
  }))
  r.on('legacyRemoveBootstrap', async ({ body }) => await answered(async () => {
    await s.bootstrap.remove(multiaddrs(body.peers))
    return ok('Bootstrap peers removed successfully', null)
  }))
  r.on('legacyRemoveAllBootstrap', async () => await answered(async () => {
    await s.bootstrap.removeAll()
    return ok('All bootstrap peers removed successfully', null)
  }))
  r.on('legacyGetAllBootstrap', async () => await answered(async () => ok('Got all the bootstrap peers successfully', { peers: await s.bootstrap.list() })))
  r.on('legacyAddQuorum', async ({ body }) => await answered(async () => {
    const dids = body.map((q) => quorumDid(q.address))
    // adding the same list again (scripts do) is not an error: only DIDs not listed yet are added
    const listed = new Set(s.consensus.quorumsList().map(didOf))
    for (const did of new Set(dids)) {
      if (!listed.has(did)) await s.consensus.quorumsAdd(did)
    }
    return ok('Quorums added successfully', null)
  }))
  r.on('legacyGetAllQuorum', async () => await answered(async () => ok('Got all quorums successfully', s.consensus.quorumsList())))
  r.on('legacyRemoveAllQuorum', async () => await answered(async () => {
    await s.consensus.quorumsRemoveAll()
    return ok('Removed all quorums successfully', null)
  }))
  r.on('legacySetupQuorum', async ({ body }) => await answered(async () => {
    await s.consensus.quorumsSetup(body.did, body.password, body.priv_password ?? body.password)
    return ok('Quorum setup done successfully', null)
  }))
  r.on('legacyCheckQuorumStatus', async ({ query }) => await answered(async () =>
    await s.consensus.quorumStatus(query.quorumAddress) ? ok('Quorum is setup', null) : fail('Quorum is not setup') as never))
}
