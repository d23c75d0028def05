import { tokenStateHash } from '../tokenchain/token-id.js'
import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import type { BurnClaim } from './burn-claims.js'
import type { ClaimResult } from './claims.js'
import { claimDigest, claimNonce, releaseDigest, type PeerGrant, type PeerSeal } from './claim-proofs.js'
import type { ConsensusSigner, StateClaims } from './ports.js'
import { voteKey } from './records.js'

/** The state hash of a vote's state (`tokenId@blockId`), the key its arbiters are placed by. */
export function stateHashOf (state: string): string {
  const at = state.indexOf('@')
  return at < 0 ? tokenStateHash(state, '') : tokenStateHash(state.slice(0, at), state.slice(at + 1))
}

/**
 * A quorum's side of the claims (docs/protocol.md, "Claims"). The sender claims a transaction's
 * states at their arbiters once, on behalf of each of the five signers: each quorum signs its own
 * claim (a nonce of its own, kept with its vote) at PREPARE, checks before it signs that the
 * arbiters granted its claim (the grants name its quorum), and gives the claim up, signed, when
 * its vote is released before signing. Only its signature releases its claim, so an owner who
 * runs one of the five cannot free the state under the honest signers' feet.
 */
export class QuorumClaims {
  /** vote keys whose grants were checked (this process) */
  private readonly held = new Set<string>()

  constructor (private readonly port: StateClaims, private readonly log: Logger, private readonly signerFor: (did: string) => ConsensusSigner | undefined) {}

  /** The quorum's signed claim for a vote: `nonce` when the vote has one already, else a fresh one. */
  async proof (quorumDid: string, txid: string, nonce = claimNonce()): Promise<{ nonce: string, sig: string } | undefined> {
    const signer = this.signerFor(quorumDid)
    if (signer === undefined) return undefined
    return { nonce, sig: await signer.pvtSign(claimDigest(txid, quorumDid, nonce)) }
  }

  /**
   * Whether the arbiters granted this quorum's claim of every state of the vote and every burnt
   * ancestor they rest on (the grants the sender gathered, checked against this node's own count
   * of each state's arbiters), grants of the vote's own claim (`nonce`: not of a claim released
   * before this vote); never rejects.
   */
  async check (quorumDid: string, txid: string, states: readonly string[], burns: ReadonlyArray<BurnClaim>, grants: unknown, nonce?: string, fellows: readonly string[] = []): Promise<ClaimResult> {
    const key = voteKey(quorumDid, txid)
    if (this.held.has(key)) return { granted: true, tallies: [] }
    const t0 = Date.now()
    const list = Array.isArray(grants) ? grants.filter(isPeerGrant) : []
    if (list.length === 0) {
      return { granted: false, code: 'CLAIM_UNREACHABLE', reason: 'CLAIM_UNREACHABLE: the sign request carries no grant of this quorum\'s claim (the sender claims the states at their arbiters for each signer; a sender from before that does not): not signed', tallies: [] }
    }
    const own = new Set(states.map(stateHashOf))
    const r = await this.port.checkGrants(txid, quorumDid, [...own], burns.filter((b) => !own.has(b.stateHash)), list, nonce, fellows).catch((e: unknown): ClaimResult => ({
      granted: false, code: 'CLAIM_UNREACHABLE', reason: `CLAIM_UNREACHABLE: the grants could not be checked (${errorMessage(e)})`, tallies: []
    }))
    if (r.granted) this.held.add(key)
    this.log.debug(`grants of ${txid.slice(0, 12)} for ${quorumDid.slice(0, 12)}: ${list.length} checked, ${r.granted ? 'enough' : `not enough (${r.code})`} in ${Date.now() - t0} ms`)
    return r
  }

  /**
   * The quorum voted: when this node holds a seat of the committee in force, its own table grants
   * the quorum's claim of the vote's states and burnt ancestors at once, and the grants ride the
   * vote (docs/protocol.md, "Grants in the votes"). Never rejects (no grant: the sender claims).
   */
  async grantOwn (quorumDid: string, txid: string, states: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash' | 'spender'>>, proof: { nonce: string, sig: string }): Promise<PeerGrant[]> {
    if (this.port.grantOwn === undefined) return []
    return await this.port.grantOwn(txid, { quorum: quorumDid, nonce: proof.nonce, sig: proof.sig }, states.map(stateHashOf), burns).catch((e: unknown) => {
      this.log.debug(`granting ${txid.slice(0, 12)} as ${quorumDid.slice(0, 12)} voted: ${errorMessage(e)}`)
      return []
    })
  }

  /**
   * The quorum signed: this node's own table seals what it holds for the transaction under this
   * quorum's claim (every state of the vote and every burnt ancestor), and the seals ride the SIGN
   * answer, so a sender whose signers' nodes are arbiters need not ask them again. Never rejects.
   */
  async sealSigned (quorumDid: string, txid: string, states: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash' | 'spender'>>, nonce: string | undefined): Promise<PeerSeal[]> {
    if (nonce === undefined || this.port.sealSigned === undefined) return []
    const own = [...new Set(states.map(stateHashOf))]
    const items = [...own.map((stateHash) => ({ stateHash, holder: txid })), ...burns.filter((b) => !own.includes(b.stateHash)).map((b) => ({ stateHash: b.stateHash, holder: b.spender }))]
    return await this.port.sealSigned(txid, quorumDid, nonce, items).catch((e: unknown) => {
      this.log.debug(`sealing ${txid.slice(0, 12)} as ${quorumDid.slice(0, 12)} signed: ${errorMessage(e)}`)
      return []
    })
  }

  /** Whether this quorum's grants for the vote were checked (by this process since it started). */
  holds (quorumDid: string, txid: string): boolean {
    return this.held.has(voteKey(quorumDid, txid))
  }

  /**
   * The vote was released before it signed: its claim is given up at the arbiters, best effort,
   * signed over the vote's nonce. Safe: the vote cannot sign any more.
   */
  release (quorumDid: string, txid: string, states: readonly string[], burns: ReadonlyArray<Pick<BurnClaim, 'stateHash'>>, nonce: string | undefined): void {
    this.held.delete(voteKey(quorumDid, txid))
    if (nonce === undefined) return
    void (async () => {
      const signer = this.signerFor(quorumDid)
      if (signer === undefined) return
      const hashes = [...new Set([...states.map(stateHashOf), ...burns.map((b) => b.stateHash)])]
      await this.port.release(txid, quorumDid, hashes, { nonce, sig: await signer.pvtSign(releaseDigest(txid, quorumDid, nonce)) })
    })().catch((e: unknown) => { this.log.debug(`releasing the claim of ${txid.slice(0, 12)}: ${errorMessage(e)}`) })
  }

  /** The vote ended otherwise (committed): its claim stays at the arbiters, nothing to keep here. */
  forget (quorumDid: string, txid: string): void {
    this.held.delete(voteKey(quorumDid, txid))
  }
}

const isStr = (x: unknown, max = 256): x is string => typeof x === 'string' && x.length <= max

/** The shape of a grant as a sign request carries it (what it proves is checked by the port). */
export function isPeerGrant (g: unknown): g is PeerGrant {
  const x = g as Partial<PeerGrant> | undefined
  return x !== undefined && x !== null && isStr(x.peer) && isStr(x.sig, 512) && isStr(x.txid, 64) && isStr(x.quorum) && isStr(x.nonce, 32) && isStr(x.forTx, 64) &&
    Array.isArray(x.states) && x.states.length > 0 && x.states.length <= 4096 && x.states.every((s) => isStr(s, 64))
}

/** The shape of a sealed grant as a delivery carries it (what it proves is checked by the port). */
export function isPeerSeal (g: unknown): g is PeerSeal {
  const x = g as Partial<PeerSeal> | undefined
  return x !== undefined && x !== null && isStr(x.peer) && isStr(x.sig, 512) && isStr(x.holder, 64) &&
    Array.isArray(x.states) && x.states.length > 0 && x.states.length <= 4096 && x.states.every((s) => isStr(s, 64))
}
