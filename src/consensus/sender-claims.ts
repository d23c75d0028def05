import { decodeContract } from '../tokenchain/contract.js'
import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { Lru } from '../util/lru.js'
import { burntAncestors, type BurnClaim } from './burn-claims.js'
import type { ClaimResult } from './claims.js'
import { ownerPaths, type ClaimantProof, type PeerGrant, type PeerSeal, type SealConsent } from './claim-proofs.js'
import type { Ledger, StateClaims } from './ports.js'
import { isPeerGrant, stateHashOf } from './quorum-claims.js'
import type { PrepareReply, VoteClaim } from './messages.js'

type Vote = Extract<PrepareReply, { vote: 'yes' }>

/**
 * What a decision taken on its signers' own seals keeps beside its certificate, so that a process
 * restarted before the other arbiters' seals came can still gather them: each signer's claim (as
 * its vote showed it) and its consent to the seal (the secret its SIGN answer revealed).
 */
export interface Regrowth { claims: Array<VoteClaim & { quorum: string }>, consents: SealConsent[] }

/** A kept regrowth as read back from the store (anything else: none). */
export function asRegrowth (x: unknown): Regrowth | undefined {
  const r = x as Partial<Regrowth> | undefined
  if (r === undefined || r === null || !Array.isArray(r.claims) || !Array.isArray(r.consents)) return undefined
  const str = (v: unknown): v is string => typeof v === 'string'
  const claims = r.claims.filter((c) => c !== null && typeof c === 'object' && str(c.quorum) && str(c.nonce) && str(c.sig) && Array.isArray(c.states) && c.states.every(str))
  const consents = r.consents.filter((c) => c !== null && typeof c === 'object' && str(c.quorum) && str(c.nonce) && str(c.secret))
  return claims.length > 0 && claims.length === r.claims.length && consents.length === r.consents.length ? { claims, consents } : undefined
}

/** Transactions whose grants are kept in memory (those in flight; a resumed one claims again). */
const GRANTS_KEPT = 64

/**
 * The sender's claim (docs/protocol.md, "Claims"): once five quorums voted, one walk claims every
 * state the transaction spends, and every burnt ancestor those rest on, at their arbiters on behalf
 * of each of the five, showing each quorum's own signed claim; the grants that come back, signed by
 * each arbiter, go to each quorum with its SIGN request. A quorum signs only with enough grants of
 * its own claim, and only it can give that claim up: so whoever the sender is, and whichever of the
 * five he runs, an honest signer's claim holds the state for this transaction alone.
 */
export class SenderClaims {
  /** per transaction, per quorum: the grants of its claim */
  private readonly grants = new Lru<Map<string, PeerGrant[]>>(GRANTS_KEPT)
  /** per transaction: the sealed grants gathered (the certificate, until it is kept with the decision) */
  private readonly seals = new Lru<PeerSeal[]>(GRANTS_KEPT)
  /**
   * transactions some of whose grants were dropped (a signer found them short, or the seal fell
   * short): claimed at every arbiter from then on, never from the votes' grants again, which are
   * what fell short (a signer from before grants in the votes takes none of them; the arbiters
   * that are not among the signers hold no record to seal until the claim is made there)
   */
  private readonly claimAtArbiters = new Lru<true>(GRANTS_KEPT)
  /** transactions whose claim round was skipped for some signers (their votes' grants sufficed) */
  private readonly fromVotes = new Lru<true>(GRANTS_KEPT)
  /** per transaction decided before every arbiter sealed: gathers the other arbiters' seals into its certificate (once; resolves to whether it grew) */
  private readonly growing = new Lru<() => Promise<boolean>>(GRANTS_KEPT)

  constructor (private readonly port: StateClaims, private readonly ledger: Ledger, private readonly log: Logger) {}

  /** The grants of `quorum`'s claim for `txid` gathered by this process, if any. */
  grantsFor (txid: string, quorum: string): PeerGrant[] | undefined {
    return this.grants.get(txid)?.get(quorum)
  }

  /** Whether every vote's quorum has its grants (made by this process). */
  covered (txid: string, votes: readonly Vote[]): boolean {
    const m = this.grants.get(txid)
    return m !== undefined && votes.every((v) => v.claim === undefined || m.has(v.quorumDid))
  }

  forget (txid: string): void { this.grants.delete(txid); this.seals.delete(txid); this.claimAtArbiters.delete(txid); this.fromVotes.delete(txid); this.growing.delete(txid) }

  /**
   * Gathers the other arbiters' seals of a transaction decided on its signers' own seals into its
   * certificate (asked when a receiver found it short); resolves to whether the certificate grew,
   * undefined when this process has nothing to grow it with.
   */
  grow (txid: string): Promise<boolean> | undefined {
    return this.growing.get(txid)?.()
  }

  /**
   * What to keep with the decision of `txid` so that its certificate can still grow after a restart:
   * undefined unless the decision came before some arbiters were asked or answered (on the signers'
   * own seals, or on as many others as q(n) needed); a certificate sealed at every arbiter already
   * needs nothing more.
   */
  regrowth (txid: string, votes: readonly Vote[], consents: readonly SealConsent[]): Regrowth | undefined {
    if (this.growing.get(txid) === undefined) return undefined
    const claims = votes.flatMap((v) => v.claim !== undefined ? [{ quorum: v.quorumDid, nonce: v.claim.nonce, sig: v.claim.sig, states: [...v.claim.states] }] : [])
    return claims.length > 0 ? { claims, consents: [...consents] } : undefined
  }

  /**
   * Grows, in a process that did not take the decision (restarted since) and when a receiver found
   * it short, the certificate kept with the decision, `kept` (at least q(n) seals of this node's
   * count then): the signers' claims are made at the
   * arbiters that hold none, and every arbiter not yet in the certificate is asked to seal with the
   * signers' consents, as the deciding process would have done. Resolves to the certificate, grown
   * as far as the arbiters answered (`kept` when none did); never rejects.
   */
  async regrow (txid: string, contract: Uint8Array, r: Regrowth, kept: readonly PeerSeal[]): Promise<PeerSeal[]> {
    const votes = r.claims.map((c) => ({ vote: 'yes', quorumDid: c.quorum, claim: { nonce: c.nonce, sig: c.sig, states: c.states } }) as unknown as Vote)
    // nothing was claimed at the arbiters by this process: those outside the kept seals may hold no record
    this.fromVotes.set(txid, true)
    if (!(await this.seal(txid, contract, votes, r.consents, kept)).granted) {
      // the seats of this node's count now differ from the decision's: the claims made again at
      // every arbiter (the same claims; an arbiter that holds them grants them again) and sealed
      this.drop(txid, votes.map((v) => v.quorumDid))
      if ((await this.claim(txid, contract, votes)).granted) await this.seal(txid, contract, votes, r.consents, kept)
    }
    await this.grow(txid)
    const grownCertificate = this.certificate(txid)
    return grownCertificate !== undefined && grownCertificate.length > kept.length ? [...grownCertificate] : [...kept]
  }

  /** Drops the grants of some quorums (a signer found them short: they are gathered again, at the arbiters). */
  drop (txid: string, quorums: readonly string[]): void {
    if (quorums.length > 0) this.claimAtArbiters.set(txid, true)
    const m = this.grants.get(txid)
    for (const q of quorums) m?.delete(q)
  }

  /** The certificate a receiver is shown: the sealed grants this process gathered for `txid`. */
  certificate (txid: string): PeerSeal[] | undefined {
    return this.seals.get(txid)
  }

  /**
   * The states a transaction's claims hold and the burnt ancestors they rest on, from the votes'
   * claims and the contract, as the quorums show them to their arbiters.
   */
  private async scope (contract: Uint8Array, votes: readonly Vote[]): Promise<{ states: string[], burns: BurnClaim[], paths: Record<string, Uint8Array[]> }> {
    const states = [...new Set(votes.flatMap((v) => v.claim?.states ?? []))]
    const chainOf = async (id: string): Promise<readonly Uint8Array[] | undefined> => await this.ledger.chain(id)
    const burns = await burntAncestors(states.map((st) => { const at = st.indexOf('@'); return [st.slice(0, at), st.slice(at + 1)] as const }), chainOf)
    // every state's owner shown: the blocks from its block to the tip the contract spends
    const tips = new Map(Object.entries(decodeContract(contract).content.transInfo.transTokens ?? {}).map(([id, t]) => [id, `${id}@${t.blockId ?? ''}`]))
    const paths = await ownerPaths(states.flatMap((state) => { const tip = tips.get(state.slice(0, state.indexOf('@'))); return tip === undefined || tip.endsWith('@') ? [] : [{ state, tip }] }), chainOf)
    return { states, burns, paths }
  }

  /**
   * The seal (docs/protocol.md, "Seals"), once the five signed: every state and burnt ancestor the
   * signers' claims hold is sealed at its arbiters with the signers' consents (the secrets their
   * SIGN answers revealed); the sealed grants are the certificate every receiver checks. Resolves
   * to the tally's outcome, never rejects.
   */
  async seal (txid: string, contract: Uint8Array, votes: readonly Vote[], consents: readonly SealConsent[], presealed: readonly PeerSeal[] = []): Promise<ClaimResult> {
    const t0 = Date.now()
    const sealFor = this.port.sealFor
    if (sealFor === undefined) return { granted: false, code: 'CLAIM_UNREACHABLE', reason: 'CLAIM_UNREACHABLE: this node cannot seal claims', tallies: [] }
    try {
      const { states, burns, paths } = await this.scope(contract, votes)
      const own = states.map(stateHashOf)
      const items = [...own.map((stateHash) => ({ stateHash, holder: txid })), ...burns.filter((b) => !own.includes(b.stateHash)).map((b) => ({ stateHash: b.stateHash, holder: b.spender }))]
      // the arbiters that granted the claims are asked first; the port adds those of its own count
      const peers = [...new Set([...(this.grants.get(txid)?.values() ?? [])].flat().map((g) => g.peer))]
      // the claim round was skipped (the votes' grants sufficed): the arbiters that are not among the
      // signers hold no record of the transaction and seal nothing until the five claims are made
      // there; made after the decision, at those arbiters only, before they are asked to seal
      const claimants: ClaimantProof[] = votes.flatMap((v) => v.claim !== undefined ? [{ quorum: v.quorumDid, nonce: v.claim.nonce, sig: v.claim.sig }] : [])
      const before = this.fromVotes.get(txid) === undefined
        ? undefined
        : async (others: readonly string[]): Promise<void> => { await this.port.claimFor(txid, claimants, own, burns, contract, Object.keys(paths).length > 0 ? paths : undefined, others) }
      const r = await sealFor(txid, items, consents, peers, presealed, before)
      if (r.granted) {
        // the certificate grows with the other arbiters' seals when a receiver that counts a seat
        // more than this node found it short (grow); a delivery tried again shows them
        const certificate = [...r.seals]
        this.seals.set(txid, certificate)
        const key = (g: PeerSeal): string => `${g.peer}|${g.holder}|${[...g.states].sort().join(',')}`
        const add = (later: readonly PeerSeal[]): void => {
          const have = new Set(certificate.map(key))
          for (const g of later) if (!have.has(key(g))) { have.add(key(g)); certificate.push(g) }
        }
        const more = r.grow
        // a seal made again (a signer replaced) that needs no growth leaves none of the earlier one
        if (more === undefined) this.growing.delete(txid)
        else {
          this.growing.set(txid, async () => {
            const before = certificate.length
            try { add(await more()) } catch (e) { this.log.debug(`seal ${txid.slice(0, 12)} at the other arbiters: ${errorMessage(e)}`) }
            return certificate.length > before
          })
        }
      }
      this.log.debug(`seal ${txid.slice(0, 12)}: ${items.length} state(s) ${r.granted ? 'sealed' : `refused (${r.code})`} in ${Date.now() - t0} ms`)
      return r
    } catch (e) {
      return { granted: false, code: 'CLAIM_UNREACHABLE', reason: `CLAIM_UNREACHABLE: the seal could not be made (${errorMessage(e)}); try again later`, tallies: [] }
    }
  }

  /**
   * Claims the states of `votes` that have no grants yet, for their quorums at once (one walk);
   * resolves to the tally's outcome, never rejects. Votes without a claim (a quorum from before the
   * sender's claim) have nothing to claim.
   */
  async claim (txid: string, contract: Uint8Array, votes: readonly Vote[]): Promise<ClaimResult> {
    const t0 = Date.now()
    const have = this.grants.get(txid) ?? new Map<string, PeerGrant[]>()
    const todo = votes.filter((v) => v.claim !== undefined && !have.has(v.quorumDid))
    if (todo.length === 0) return { granted: true, tallies: [] }
    try {
      // the states the quorums hold (the same for every honest quorum; each checks its own)
      const { states, burns, paths } = await this.scope(contract, todo)
      // the grants seated voters' nodes made of their own claims as they voted ("Grants in the
      // votes"): when they are enough for every vote, as each signer will count them, nobody is asked
      const fellows = votes.map((v) => v.quorumDid)
      const voted = votes.flatMap((v) => v.claim !== undefined && Array.isArray(v.grants)
        ? v.grants.filter((g) => isPeerGrant(g) && g.quorum === v.quorumDid && g.nonce === v.claim!.nonce && g.forTx === txid)
        : [])
      if (voted.length > 0 && this.claimAtArbiters.get(txid) === undefined) {
        const enough = await Promise.all(todo.map(async (v) => {
          const own = new Set(v.claim!.states.map(stateHashOf))
          const r = await this.port.checkGrants(txid, v.quorumDid, [...own], burns.filter((b) => !own.has(b.stateHash)), voted, v.claim!.nonce, fellows)
          return r.granted
        }))
        if (enough.every((ok) => ok)) {
          this.fromVotes.set(txid, true)
          for (const v of todo) have.set(v.quorumDid, voted)
          this.grants.set(txid, have)
          this.log.debug(`claim ${txid.slice(0, 12)}: granted in the votes (${voted.length} grants) in ${Date.now() - t0} ms`)
          return { granted: true, tallies: [] }
        }
      }
      const claimants: ClaimantProof[] = todo.map((v) => ({ quorum: v.quorumDid, nonce: v.claim!.nonce, sig: v.claim!.sig }))
      const r = await this.port.claimFor(txid, claimants, states.map(stateHashOf), burns, contract, Object.keys(paths).length > 0 ? paths : undefined)
      if (r.granted) {
        // every signer's claim made at the arbiters: none rests on the votes' grants alone
        if (todo.length === votes.filter((v) => v.claim !== undefined).length) this.fromVotes.delete(txid)
        for (const c of claimants) have.set(c.quorum, [...r.grants.filter((g) => g.quorum === c.quorum && g.nonce === c.nonce && g.forTx === txid), ...voted.filter((g) => g.quorum !== c.quorum)])
        this.grants.set(txid, have)
      }
      this.log.debug(`claim ${txid.slice(0, 12)}: ${states.length} state(s), ${burns.length} ancestor(s) for ${claimants.length} quorum(s) ${r.granted ? 'granted' : `refused (${r.code})`} in ${Date.now() - t0} ms`)
      return r
    } catch (e) {
      return { granted: false, code: 'CLAIM_UNREACHABLE', reason: `CLAIM_UNREACHABLE: the claim could not be made (${errorMessage(e)}); try again later`, tallies: [] }
    }
  }
}
