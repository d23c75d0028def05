import { CertificateEvidence, type GrantCheck, type KeptGrant } from '../../consensus/certificate-evidence.js'
import { peerGrantBytes, peerSealBytes } from '../../consensus/claim-proofs.js'
import type { ConsensusObserver } from '../../consensus/observe.js'
import type { Ledger } from '../../consensus/ports.js'
import type { Logger } from '../../util/logger.js'
import { hexToBytes } from '../../wallet/bytes.js'
import { verifyPeerSignature } from '../../p2p/host.js'

/**
 * What a grant is as evidence (certificate-evidence.ts), its signature checked with its arbiter's
 * peer key: a grant of a claim (peerGrantBytes) is `valid`, never final (its claim's release undoes
 * it, so two of them for one state prove nothing against an honest arbiter); a seal
 * (peerSealBytes, docs/protocol.md "Seals") is `final`: an arbiter seals only the claim it holds
 * and never undoes it, so two seals of one state for two transactions distrust their arbiter.
 */
export async function checkPeerGrant (g: KeptGrant): Promise<GrantCheck> {
  if (typeof g.sig !== 'string' || !/^(?:[0-9a-f]{2}){1,128}$/.test(g.sig) || !Array.isArray(g.states)) return undefined
  if (g.seal === true) return await verifyPeerSignature(g.peer, peerSealBytes({ peer: g.peer, holder: g.txid, states: g.states }), hexToBytes(g.sig)) ? 'final' : undefined
  if (typeof g.quorum !== 'string' || typeof g.nonce !== 'string' || typeof g.forTx !== 'string') return undefined
  return await verifyPeerSignature(g.peer, peerGrantBytes({ peer: g.peer, txid: g.txid, quorum: g.quorum, nonce: g.nonce, forTx: g.forTx, states: g.states }), hexToBytes(g.sig)) ? 'valid' : undefined
}

/** The node's watch of conflicting certificates over its ledger, its distrusted arbiters read in. */
export async function nodeCertificateEvidence (opts: { ledger: Ledger, log: Logger, observe?: ConsensusObserver, check?: (g: KeptGrant) => Promise<GrantCheck> }): Promise<CertificateEvidence> {
  const e = new CertificateEvidence({ ledger: opts.ledger, check: opts.check ?? checkPeerGrant, log: opts.log, clock: { now: () => Date.now() }, ...(opts.observe !== undefined ? { observe: opts.observe } : {}) })
  await e.load()
  return e
}
