import { CertificateEvidence, type GrantCheck } from '../../consensus/certificate-evidence.js'
import { peerGrantBytes, type PeerGrant } from '../../consensus/claim-proofs.js'
import type { ConsensusObserver } from '../../consensus/observe.js'
import type { Ledger } from '../../consensus/ports.js'
import type { Logger } from '../../util/logger.js'
import { hexToBytes } from '../../wallet/bytes.js'
import { verifyPeerSignature } from '../../p2p/host.js'

/**
 * What a grant is as evidence (certificate-evidence.ts): its signature checked with its arbiter's
 * peer key over peerGrantBytes. No grant is final yet: a grant of a claim is undone by its holder's
 * release, so two of them for one state prove nothing against an honest arbiter. A grant sealed
 * once the block is decided (which no release undoes) checks as `final` here, and two final grants
 * of one state for two transactions then distrust their arbiter.
 */
export async function checkPeerGrant (g: PeerGrant): Promise<GrantCheck> {
  if (typeof g.sig !== 'string' || !/^(?:[0-9a-f]{2}){1,128}$/.test(g.sig)) return undefined
  return await verifyPeerSignature(g.peer, peerGrantBytes(g), hexToBytes(g.sig)) ? 'valid' : undefined
}

/** The node's watch of conflicting certificates over its ledger, its distrusted arbiters read in. */
export async function nodeCertificateEvidence (opts: { ledger: Ledger, log: Logger, observe?: ConsensusObserver, check?: (g: PeerGrant) => Promise<GrantCheck> }): Promise<CertificateEvidence> {
  const e = new CertificateEvidence({ ledger: opts.ledger, check: opts.check ?? checkPeerGrant, log: opts.log, clock: { now: () => Date.now() }, ...(opts.observe !== undefined ? { observe: opts.observe } : {}) })
  await e.load()
  return e
}
