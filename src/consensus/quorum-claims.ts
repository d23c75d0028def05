import { tokenStateHash } from '../tokenchain/token-id.js'
import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import type { BurnClaim } from './burn-claims.js'
import type { ClaimResult } from './claims.js'
import { claimDigest, claimNonce, releaseDigest } from './claim-proofs.js'
import type { ConsensusSigner, StateClaims } from './ports.js'
import { voteKey } from './records.js'

/** The state hash of a vote's state (`tokenId@blockId`), the key its arbiters are placed by. */
export function stateHashOf (state: string): string {
  const at = state.indexOf('@')
  return at < 0 ? tokenStateHash(state, '') : tokenStateHash(state.slice(0, at), state.slice(at + 1))
}

/**
 * A quorum's claims (docs/protocol.md, "Claims"): which of its votes hold the claim of their
 * states, the claims under way (an arbiter asking about one is told it lives), and the claim
 * given up when a vote is released before signing. Kept in memory only: after a restart a
 * designated checker claims again before it signs (a claim of the same transaction is granted
 * again), and an arbiter that was not told of a release asks the outcome.
 */
export class QuorumClaims {
  /** vote keys whose claim holds */
  private readonly held = new Set<string>()
  /** vote keys whose claim is under way */
  private readonly running = new Map<string, Promise<ClaimResult>>()
  /** the burnt ancestors claimed with a vote's states (given up with them), while the vote lives */
  private readonly burns = new Map<string, string[]>()
  /** the nonce of the claims a vote makes (one per vote: given up, signed, when the vote is released) */
  private readonly nonces = new Map<string, string[]>()

  constructor (private readonly port: StateClaims, private readonly log: Logger, private readonly signerFor: (did: string) => ConsensusSigner | undefined) {}

  /**
   * Claims the states of a vote (once at a time per vote), showing the sender's signed `contract`
   * and signing the claim as the quorum; resolves to the tally's outcome, never rejects.
   */
  claim (quorumDid: string, txid: string, states: readonly string[], burns: ReadonlyArray<BurnClaim>, contract: Uint8Array | undefined, paths?: Readonly<Record<string, string[]>>): Promise<ClaimResult> {
    const key = voteKey(quorumDid, txid)
    const running = this.running.get(key)
    if (running !== undefined) return running
    const t0 = Date.now()
    if (burns.length > 0) this.burns.set(key, burns.map((b) => b.stateHash))
    // one nonce for every claim the vote makes (its retries add no claimant to the arbiters'
    // records, which keep 16 and are never freed once full); a vote released and made again gets
    // a new one, so a replayed release of the old never frees the new
    const nonce = this.nonces.get(key)?.[0] ?? claimNonce()
    if (this.nonces.get(key) === undefined) this.nonces.set(key, [nonce])
    const made = (async (): Promise<ClaimResult> => {
      const signer = this.signerFor(quorumDid)
      if (signer === undefined || contract === undefined) {
        return { granted: false, code: 'CLAIM_UNREACHABLE', reason: `CLAIM_UNREACHABLE: ${signer === undefined ? 'the quorum cannot sign its claim' : 'the transaction\'s contract is not at hand to show the arbiters'}; try again later`, tallies: [] }
      }
      const sig = await signer.pvtSign(claimDigest(txid, quorumDid, nonce))
      return await this.port.claim(txid, quorumDid, states.map(stateHashOf), burns, { contract, nonce, sig }, paths)
    })()
    const p = made.catch((e: unknown): ClaimResult => ({
      granted: false, code: 'CLAIM_UNREACHABLE', reason: `CLAIM_UNREACHABLE: the claim could not be made (${errorMessage(e)}); try again later`, tallies: []
    })).then((r) => {
      if (r.granted) this.held.add(key)
      this.log.debug(`claim ${txid.slice(0, 12)}: ${states.length} state(s) ${r.granted ? 'granted' : `refused (${r.code})`} in ${Date.now() - t0} ms`)
      return r
    }).finally(() => { this.running.delete(key) })
    this.running.set(key, p)
    return p
  }

  /** Whether the vote's claim holds (made by this process since it started). */
  holds (quorumDid: string, txid: string): boolean {
    return this.held.has(voteKey(quorumDid, txid))
  }

  /** Whether a claim of the vote is under way or holds: an arbiter asking is told it lives. */
  live (quorumDid: string, txid: string): boolean {
    const key = voteKey(quorumDid, txid)
    return this.held.has(key) || this.running.has(key)
  }

  /**
   * The vote was released before it signed: its claim (whole or partial) is given up at the
   * arbiters, best effort. Safe: the vote cannot sign any more, and another designated checker of
   * the same transaction claims for itself.
   */
  release (quorumDid: string, txid: string, states: readonly string[]): void {
    const key = voteKey(quorumDid, txid)
    this.held.delete(key)
    const burns = this.burns.get(key) ?? []
    this.burns.delete(key)
    // the nonces of this vote, taken now: a claim of a vote made again later has its own
    const nonces = this.nonces.get(key) ?? []
    this.nonces.delete(key)
    const running = this.running.get(key)
    void (async () => {
      // a claim still under way is given up once it has answered (its grants are written by then)
      await running
      const signer = this.signerFor(quorumDid)
      if (signer === undefined) return
      for (const nonce of nonces) {
        await this.port.release(txid, quorumDid, [...states.map(stateHashOf), ...burns], { nonce, sig: await signer.pvtSign(releaseDigest(txid, quorumDid, nonce)) })
      }
    })().catch((e: unknown) => { this.log.debug(`releasing the claim of ${txid.slice(0, 12)}: ${errorMessage(e)}`) })
  }

  /** The vote ended otherwise (committed): its claim stays at the arbiters, nothing to keep here. */
  forget (quorumDid: string, txid: string): void {
    this.held.delete(voteKey(quorumDid, txid))
    this.burns.delete(voteKey(quorumDid, txid))
    this.nonces.delete(voteKey(quorumDid, txid))
  }
}
