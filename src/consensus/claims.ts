import { GroupCommit } from '../util/group-commit.js'
import { KeyedMutex } from './keyed-mutex.js'

/**
 * Claims of token states (docs/protocol.md, "Claims"). Before a transaction can be signed, its
 * designated checker claims every state it spends at the state's arbiters: the k peers closest to
 * the state's key. An arbiter grants the first transaction that claims a state and refuses every
 * other while that claim lives; the claim ends only by its transaction's outcome. A claim holds
 * when more than two thirds of the arbiters granted it, so two conflicting transactions' grants
 * share at least two arbiters, one of them honest when one arbiter lies: at most one of them can
 * ever be signed.
 */

/** Kademlia's k: the arbiters of a state are the k peers closest to its key (self included). */
export const CLAIM_ARBITERS = 20

/**
 * Grants a claim needs from `n` arbiters: n − ⌊(n−1)/3⌋, more than two thirds. Two claims of `n`
 * then share at least 2q − n ≥ ⌊(n−1)/3⌋ + 1 arbiters: two for n ≥ 4, so one lying arbiter (one
 * that grants every claim) leaves an honest arbiter that granted both, which never happens. Up to
 * ⌊(n−1)/3⌋ arbiters may be down or unreachable and a claim still holds.
 */
export function claimThreshold (n: number): number {
  if (!Number.isInteger(n) || n <= 0) return 1
  return n - Math.floor((n - 1) / 3)
}

/**
 * Whether a state's arbiters show that a block spending it was never certified (a receiver's check
 * of earlier blocks, docs/security.md "Laundering"): fewer than q(n) of its n arbiters sealed it to
 * the block's transaction while 2f + 1 hold it for another (so f + 1 honest ones, which never
 * sealed it to the block's, and the block's transaction cannot have q(n) seals).
 */
export function neverCertified (n: number, sealedToBlock: number, heldForOthers: number, sealedToOthers = 0): boolean {
  const q = claimThreshold(n)
  // held for others by 2f + 1 (f + 1 honest ones, which never sealed it to this block), or sealed
  // to others by f + 1: one honest arbiter at least sealed it to another transaction of the same
  // owner, so this block is on the other side of a double spend (a certificate of q(n) seals may
  // count f lying seats, which leaves only f + 1 honest holders when the other seats were never asked)
  return sealedToBlock < q && (heldForOthers >= 2 * (n - q) + 1 || sealedToOthers >= n - q + 1)
}

/** What an arbiter keeps for a state: the transaction holding it and the quorums that claimed it for that transaction. */
export interface ClaimRecord {
  txid: string
  /**
   * who claimed it: the claimant's peer and quorum DID (asked for the outcome), the nonce of its
   * claim (its release and its `released` answer are signed over it), and `tx`, the transaction
   * the claimant claimed for when it is not `txid` (a part token's burnt ancestor is spent by its
   * burn block, claimed by every transaction that spends one of its parts)
   */
  claimants: Claimant[]
  /** when it was first granted */
  at: number
  /** last time its outcome was asked (the sweep), and how many times it was asked with no end */
  askedAt?: number
  asks?: number
  /** the transaction committed: the claim stands for good (the state is spent) */
  committed?: true
  /**
   * more claimants than the record keeps were granted (a burnt ancestor is claimed again by every
   * transaction spending a part of its burn): those past MAX_CLAIMANTS are not written, so no
   * release or `released` answer frees the state from then on; it ends only as committed, or when
   * its transaction's verified spent marker arrives
   */
  full?: true
}

/**
 * `nonce`: chosen by the claimant for this claim, and `sig`, its quorum's signature over it (the
 * evidence that this quorum claimed); both absent only in records written before claims were signed.
 */
export interface Claimant { peer: string, quorum: string, tx?: string, nonce?: string, sig?: string }

/** The transaction a claimant claimed for. */
export const claimantTx = (r: Pick<ClaimRecord, 'txid'>, c: Claimant): string => c.tx ?? r.txid
/** A claimant of a record, as one string (peer, quorum, transaction, nonce). */
export const claimantKey = (r: Pick<ClaimRecord, 'txid'>, c: Claimant): string => `${c.peer}|${c.quorum}|${claimantTx(r, c)}|${c.nonce ?? ''}`

/**
 * Whether two claimants are one claim: the same quorum, transaction and nonce, whoever sent it. A
 * peer that saw a claim's proof (every arbiter does) could otherwise replay it under sixteen peer
 * ids, fill the record, and have the state held for good if that transaction never commits.
 * Claimants from before signed claims (no nonce) are told apart by peer as they were.
 */
const sameClaim = (r: Pick<ClaimRecord, 'txid'>, a: Claimant, b: Claimant): boolean =>
  a.nonce !== undefined && b.nonce !== undefined
    ? a.quorum === b.quorum && a.nonce === b.nonce && claimantTx(r, a) === claimantTx(r, b)
    : claimantKey(r, a) === claimantKey(r, b)

/**
 * Most claimants one record keeps. A claimant past it is granted (it claims the same transaction)
 * but not written, never written over an earlier one, and the record is marked `full`: a claim is
 * never pushed out by a later claimant, and a full record is never freed by releases, since a
 * claimant it does not name may have signed (each claimant showed the sender's signed contract, so
 * only the owner, or a quorum he sent the contract to, can fill a record, and only with claims of
 * that same transaction). Refusing the claimant past it instead stopped honest chains of small
 * payments: every split of a part re-claims the burnt ancestors above it, the 17th payment of a
 * chain was refused STATE_CLAIMED by its own burn.
 */
export const MAX_CLAIMANTS = 16

/** An arbiter's answer to a seal of one state: `holder` the transaction that holds it when not sealed to the asked one. */
export type SealAnswer = { sealed: true } | { sealed: false, holder?: string, committed?: true, why: string }

/** An arbiter's answer for one state. */
export type ClaimAnswer =
  | { granted: true }
  | { granted: false, holder: string, spent?: true }

/** The arbiter's durable table of claims (one record per state hash). */
export interface ClaimStore {
  getMany: (stateHashes: string[]) => Promise<Array<ClaimRecord | undefined>>
  /** one atomic write */
  write: (puts: Array<[string, ClaimRecord]>, dels: string[]) => Promise<void>
  entries: () => AsyncIterable<[string, ClaimRecord]>
}

type Write = { put: [string, ClaimRecord] } | { del: string }

/**
 * The arbiter's side: grants, refusals, releases and outcomes. A state is changed by one caller at a
 * time (a lock per state, never one for the whole table), and every change is durable before it is
 * answered, so an arbiter that restarts never grants a state twice; the changes of concurrent
 * callers share one synced write (group commit), so no single lock or fsync per grant serialises
 * the arbiter.
 */
export class ClaimTable {
  private readonly lock = new KeyedMutex()
  private readonly commits: GroupCommit<Write>

  constructor (private readonly store: ClaimStore, private readonly clock: { now: () => number }) {
    this.commits = new GroupCommit<Write>(async (ops) => {
      const puts: Array<[string, ClaimRecord]> = []
      const dels: string[] = []
      for (const o of ops) if ('put' in o) puts.push(o.put); else dels.push(o.del)
      await this.store.write(puts, dels)
    })
  }

  private async save (puts: Array<[string, ClaimRecord]>, dels: string[] = []): Promise<void> {
    await this.commits.add([...puts.map((put): Write => ({ put })), ...dels.map((del): Write => ({ del }))])
  }

  /**
   * Claims `stateHashes` for `txid`: each state is granted when no other transaction holds it (nor
   * spent it: `spentBy[i]`, the txid of a verified spent marker of the state, if any); a grant to
   * the same transaction again adds the claimant (up to MAX_CLAIMANTS; past it, granted and the
   * record marked `full`). The
   * caller authenticated the claimant (its signed claim, the sender's signed contract).
   */
  async claim (txid: string, stateHashes: readonly string[], claimant: Claimant | readonly Claimant[], spentBy: ReadonlyArray<string | undefined> = []): Promise<ClaimAnswer[]> {
    // several claimants of one transaction (the sender's claim for its five signers): one write a state
    const claimants: readonly Claimant[] = Array.isArray(claimant) ? claimant : [claimant as Claimant]
    return await this.lock.runAll(stateHashes, async () => {
      const held = await this.store.getMany([...stateHashes])
      const now = this.clock.now()
      const puts: Array<[string, ClaimRecord]> = []
      const answers = stateHashes.map((h, i): ClaimAnswer => {
        const spent = spentBy[i]
        if (spent !== undefined && spent !== txid) return { granted: false, holder: spent, spent: true }
        const r = held[i]
        if (r !== undefined && r.txid !== txid) return { granted: false, holder: r.txid, ...(r.committed === true ? { spent: true as const } : {}) }
        if (r !== undefined && r.committed === true) return { granted: true }
        const rec: ClaimRecord = r ?? { txid, claimants: [], at: now }
        let kept = rec.claimants
        let full = rec.full === true
        for (const c of claimants) {
          if (kept.some((k) => sameClaim(rec, k, c))) continue
          if (kept.length >= MAX_CLAIMANTS) full = true
          else kept = [...kept, c]
        }
        if (r === undefined || kept !== rec.claimants || full !== (rec.full === true)) puts.push([h, { ...rec, claimants: kept, ...(full ? { full: true as const } : {}) }])
        return { granted: true }
      })
      await this.save(puts)
      return answers
    })
  }

  /**
   * The claimant `quorum` gives up its claim `nonce` of transaction `txid` (its vote was released
   * before any signature); the caller checked the quorum's signature over the release. A state no
   * other claimant holds is free again. Answers how many states were freed.
   */
  async release (txid: string, stateHashes: readonly string[], quorum: string, nonce: string): Promise<number> {
    return await this.lock.runAll(stateHashes, async () => {
      const held = await this.store.getMany([...stateHashes])
      const puts: Array<[string, ClaimRecord]> = []
      const dels: string[] = []
      stateHashes.forEach((h, i) => {
        const r = held[i]
        if (r === undefined || r.committed === true) return
        const left = r.claimants.filter((c) => c.quorum !== quorum || c.nonce !== nonce || claimantTx(r, c) !== txid)
        if (left.length === r.claimants.length) return
        if (left.length === 0 && r.full !== true) dels.push(h)
        else puts.push([h, { ...r, claimants: left }])
      })
      await this.save(puts, dels)
      return dels.length
    })
  }

  /**
   * How the transactions of a claim's claimants ended (by claimant key): `committed` keeps the claim
   * for good, `released` drops that claimant (the claim is free once none is left), `pending` asks
   * again later (each time after twice as long). Only while the claim is still `txid`'s. The caller
   * takes only verifiable outcomes: a `released` signed by the claimant's quorum, a `committed`
   * shown by the transaction's verified spent marker.
   */
  async settle (stateHash: string, txid: string, outcome: 'committed' | 'released' | 'pending' | ReadonlyMap<string, 'committed' | 'released' | 'pending'>): Promise<void> {
    await this.lock.run(stateHash, async () => {
      const [r] = await this.store.getMany([stateHash])
      if (r === undefined || r.txid !== txid || r.committed === true) return
      const each = r.claimants.map((c) => typeof outcome === 'string' ? outcome : outcome.get(claimantKey(r, c)) ?? 'pending')
      // kept for good, it needs only its transaction: who claimed it is asked nothing again
      if (each.includes('committed')) { await this.save([[stateHash, { txid: r.txid, claimants: [], at: r.at, committed: true }]]); return }
      const left = r.claimants.filter((_c, i) => each[i] !== 'released')
      if (left.length === 0 && r.full !== true) await this.save([], [stateHash])
      else await this.save([[stateHash, { ...r, claimants: left, askedAt: this.clock.now(), asks: (r.asks ?? 0) + 1 }]])
    })
  }

  /**
   * A spent marker of `txid` for the state arrived, signed by one of the claim's quorums: the
   * transaction committed, and the record is kept for good as its (committed: no release, outcome
   * or marker ends it). It is what this arbiter refuses every other transaction from: no marker
   * vetoes a grant (any DID can sign one).
   */
  async superseded (stateHash: string, txid: string): Promise<void> {
    await this.lock.run(stateHash, async () => {
      const [r] = await this.store.getMany([stateHash])
      if (r !== undefined && r.txid === txid && r.committed !== true) await this.save([[stateHash, { txid: r.txid, claimants: [], at: r.at, committed: true }]])
    })
  }

  /**
   * Seals states for good (docs/protocol.md, "Seals"): each item's state is spent by `holder` (its
   * own transaction, or a burnt ancestor's burn block) for transaction `forTx`. Sealed when the
   * record is `holder`'s and already committed, or full (no release frees it), or when `consents`
   * (claim nonces whose secrets the caller checked) open the claims of at least `needed` distinct
   * claimant quorums of `forTx` in it; a state with no record is not sealed. A sealed record is
   * committed: no release, outcome or marker ends it, and every other transaction is refused it.
   * With `signer`, a claimant quorum of this node that has just signed `forTx`'s block seals the
   * records that name its own claim (its quorum and nonce) instead: it consents for itself, and
   * an arbiter that signed a spend never grants the state to another (docs/protocol.md, "Seals").
   * One write for all the items.
   */
  async seal (items: ReadonlyArray<{ stateHash: string, holder: string, forTx: string }>, consents: ReadonlySet<string>, needed: number, signer?: { quorum: string, nonce: string }): Promise<SealAnswer[]> {
    const hashes = items.map((it) => it.stateHash)
    return await this.lock.runAll(hashes, async () => {
      const held = await this.store.getMany([...hashes])
      const puts = new Map<string, ClaimRecord>()
      const answers = items.map((it, i): SealAnswer => {
        const r = puts.get(it.stateHash) ?? held[i]
        // nothing held here to seal: a seal never creates a claim (a spent marker, which any quorum
        // DID can sign, does not make one either)
        if (r === undefined) return { sealed: false, why: 'no claim of it is held here' }
        if (r.txid !== it.holder) return r.committed === true ? { sealed: false, holder: r.txid, committed: true, why: 'sealed to another transaction' } : { sealed: false, holder: r.txid, why: 'claimed by another transaction' }
        if (r.committed === true) return { sealed: true }
        if (signer !== undefined) {
          if (!r.claimants.some((c) => c.quorum === signer.quorum && c.nonce === signer.nonce && claimantTx(r, c) === it.forTx)) return { sealed: false, holder: r.txid, why: 'the signer\'s own claim is not among its claimants here' }
        } else if (r.full !== true) {
          const opened = new Set(r.claimants.filter((c) => c.nonce !== undefined && claimantTx(r, c) === it.forTx && consents.has(c.nonce)).map((c) => c.quorum))
          if (opened.size < needed) return { sealed: false, holder: r.txid, why: `the consents of ${opened.size} of its claimants were shown, ${needed} needed` }
        }
        puts.set(it.stateHash, { txid: r.txid, claimants: [], at: r.at, committed: true })
        return { sealed: true }
      })
      await this.save([...puts])
      return answers
    })
  }

  /**
   * Claims still open (not committed) due to be asked about, at most `limit`: first `staleMs` after
   * the grant, then after twice as long each time the answer changed nothing (up to a day), so a
   * claim whose holder vanished costs a question a day, not one every sweep.
   */
  async stale (staleMs: number, limit = 256): Promise<Array<{ stateHash: string, claim: ClaimRecord }>> {
    const now = this.clock.now()
    const out: Array<{ stateHash: string, claim: ClaimRecord }> = []
    for await (const [stateHash, claim] of this.store.entries()) {
      if (claim.committed === true) continue
      const wait = Math.min(staleMs * 2 ** Math.min(claim.asks ?? 0, 20), CLAIM_ASK_MAX_MS)
      if (Math.max(claim.at, claim.askedAt ?? 0) + wait > now) continue
      out.push({ stateHash, claim })
      if (out.length >= limit) break
    }
    return out
  }

  /** The records of some states, as kept (the operator's view of a token's claims). */
  async records (stateHashes: readonly string[]): Promise<Array<ClaimRecord | undefined>> {
    return await this.store.getMany([...stateHashes])
  }
}

/** Longest wait between two questions about one claim. */
export const CLAIM_ASK_MAX_MS = 24 * 3600_000

/** How the claim of one state went, tallied over its arbiters. */
export interface StateTally {
  stateHash: string
  arbiters: number
  needed: number
  grants: number
  /** the other transaction that holds or spent the state, when an arbiter named one */
  holder?: string
  spent?: boolean
  /** arbiters that gave no answer (down, unreachable, or a node that does not serve claims) */
  silent: number
}

/**
 * Tallies the answers for one state over its arbiters (an arbiter not in the set does not count;
 * one that did not answer, or that does not serve claims, counts as a refusal). `own`: the claiming
 * transaction; a refusal naming it (an arbiter that took its quorums' releases first) is counted but
 * never reported as the holder, which is another transaction.
 */
export function tallyState (stateHash: string, arbiters: readonly string[], answers: ReadonlyMap<string, ClaimAnswer>, own?: string): StateTally {
  const set = [...new Set(arbiters)]
  let grants = 0
  let silent = 0
  let holder: string | undefined
  let spent = false
  for (const a of set) {
    const ans = answers.get(a)
    if (ans === undefined) { silent++; continue }
    if (ans.granted) { grants++; continue }
    if (own !== undefined && ans.holder === own) continue
    // a spent state names its spender first
    if (holder === undefined || (ans.spent === true && !spent)) { holder = ans.holder; spent = ans.spent === true }
  }
  return { stateHash, arbiters: set.length, needed: claimThreshold(set.length), grants, silent, ...(holder !== undefined ? { holder, spent } : {}) }
}

/** The outcome of a transaction's claim over all its states. */
export type ClaimResult =
  | { granted: true, tallies: StateTally[] }
  | { granted: false, code: 'STATE_CLAIMED' | 'STATE_SPENT' | 'CLAIM_UNREACHABLE', reason: string, holder?: string, tallies: StateTally[] }

/** A transaction's claim holds when every state it spends holds. */
export function claimResult (tallies: StateTally[]): ClaimResult {
  const short = tallies.find((t) => t.grants < t.needed)
  if (short === undefined) return { granted: true, tallies }
  const spent = tallies.find((t) => t.spent === true && t.holder !== undefined)
  if (spent !== undefined) {
    return { granted: false, code: 'STATE_SPENT', holder: spent.holder, reason: `Token state is exhausted: state ${spent.stateHash} is being double spent (spent by ${spent.holder})`, tallies }
  }
  const claimed = tallies.find((t) => t.grants < t.needed && t.holder !== undefined)
  if (claimed !== undefined) {
    return {
      granted: false,
      code: 'STATE_CLAIMED',
      holder: claimed.holder,
      reason: `STATE_CLAIMED: state ${claimed.stateHash} is claimed by transaction ${claimed.holder} (${claimed.grants} of ${claimed.arbiters} arbiters granted this one, ${claimed.needed} needed); try again once that transaction has ended`,
      tallies
    }
  }
  return {
    granted: false,
    code: 'CLAIM_UNREACHABLE',
    reason: `CLAIM_UNREACHABLE: ${short.arbiters - short.silent} of the ${short.arbiters} arbiters of state ${short.stateHash} answered, ${short.needed} grants needed; refused rather than risk a double spend, try again when the network is whole`,
    tallies
  }
}
