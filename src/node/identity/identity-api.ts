/**
 * The HTTP-facing side of identity: maps API inputs onto the IdentityService and runs every
 * signing operation through the two-step engine.
 */
import { ok } from '../../api/contract/envelope.js'
import type { DidPublicInfo } from '../../api/contract/routes.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { bytesToHex } from '../../wallet/bytes.js'
import { DidFile, type DidType } from '../../wallet/did-document.js'
import { isValidDid } from '../../wallet/did-string.js'
import { parsePublicKeyPem } from '../../wallet/keys.js'
import type { IdentityApi, SigningApi } from '../../api/server/services.js'
import type { TwoStepEngine } from '../signing/two-step.js'
import type { CreateRequest, IdentityService } from './identity-service.js'

function requireDid (did: string): void {
  if (!isValidDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
}

export function createIdentityApi (identity: IdentityService, engine: TwoStepEngine, coreRunning: () => boolean): IdentityApi & SigningApi {
  const localType = async (did: string, notLocal: string): Promise<DidType> => {
    requireDid(did)
    const rec = await identity.record(did)
    if (rec === undefined) throw new RbtError(ErrorCode.NOT_FOUND, notLocal)
    return rec.type
  }
  return {
    async create (input) {
      const req: CreateRequest = { type: (input.type ?? 4) as DidType }
      if (input.password !== undefined) req.password = input.password
      if (input.quorum_password !== undefined) req.quorumPassword = input.quorum_password
      if (input.secret !== undefined) req.secret = input.secret
      if (input.public_key !== undefined && input.public_key !== '') req.publicKeyHex = input.public_key
      if (input.mnemonic !== undefined && input.mnemonic !== '') req.mnemonic = input.mnemonic
      if (input.childPath !== undefined) req.childPath = input.childPath
      if (input.files !== undefined) req.files = input.files
      if (input.files?.[DidFile.PVT_KEY] !== undefined) req.privateKey = input.files[DidFile.PVT_KEY]
      if (input.private_key !== undefined && input.private_key !== '') req.privateKeyPath = input.private_key
      const r = await identity.create(req)
      return { did: r.did, peer_id: r.peerId }
    },
    async setup (input) {
      const r = await identity.setup({
        type: input.type as DidType,
        files: input.files,
        ...(input.password !== undefined ? { password: input.password } : {}),
        ...(input.quorum_password !== undefined ? { quorumPassword: input.quorum_password } : {})
      })
      return { did: r.did, peer_id: r.peerId }
    },
    list: async () => await identity.list(),
    async register (did) {
      const type = await localType(did, 'DID is not local, cannot register')
      if (!coreRunning()) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
      return await engine.start(did, type, async (prompt) => {
        await identity.register(did, prompt)
        return ok('DID registered successfully', null)
      }, 'register')
    },
    async signArbitrary (did, msg) {
      const type = await localType(did, `arbitrary sign failed, failed to setup did, err : DID ${did} is not on this node`)
      return await engine.start(did, type, async (prompt) => ok('arbitrary sign successful', { signature: await identity.signArbitrary(did, msg, prompt) }), 'arbitrary')
    },
    verifyArbitrary: async (did, msg, signature) => await identity.verifyArbitrary(did, msg, signature),
    async publicInfo (did): Promise<DidPublicInfo> {
      requireDid(did)
      const local = await identity.isLocal(did)
      const doc = await identity.documentOf(did)
      const q = doc.files[DidFile.QUORUM_PUB_KEY]
      return {
        did,
        did_type: doc.type,
        public_key: bytesToHex(parsePublicKeyPem(doc.files[DidFile.PUB_KEY]!).point),
        quorum_public_key: q !== undefined ? bytesToHex(parsePublicKeyPem(q).point) : null,
        source: local ? 'local' : 'network'
      }
    },
    async resolve (did) {
      const r = await identity.resolvePeer(did)
      return { did, peer_id: r.peerId, did_type: r.didType ?? null, source: r.source }
    },
    complete: async (id, answer) => await engine.complete(id, answer),
    cancel: async (id) => { engine.cancel(id) }
  }
}
