import { sha3Hex } from '../tokenchain/hash.js'
import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { Lru } from '../util/lru.js'
import type { PeerSeal } from './claim-proofs.js'
import { DOUBLE_SPENDS, type CertificateSide, type DoubleSpendProof, type DoubleSpendSeenBy, type KeptGrant } from './double-spends.js'
import { notify, type ConsensusObserver } from './observe.js'
import type { Clock, Ledger } from './ports.js'

export type { CertificateSide, KeptGrant }

/**
 * Conflicting certificates (docs/protocol.md, "Double spends seen"): grants or seals of one state
 * held by two different transactions, seen by this node where certificates pass through it (a
 * signer checking the grants of its claim, a receiver checking a block's seals, the sender's seal
 * walk). The two are kept as evidence with the double spends (`cs-double-spends`, evidence
 * `certificates`), counted and logged; an arbiter with a *final* grant on both sides (a seal: no
 * release, outcome or marker undoes it) is proven to have granted twice and is distrusted for good
 * (`cs-distrusted-arbiters/<peer>`, its two seals kept as the proof): nothing of it counts toward
 * any state's q(n) here any more.
 *
 * A grant that is not final proves nothing against its arbiter: an honest arbiter grants a state
 * again once every claimant of the first transaction released its claim (signed), and an owner
 * whose quorums claim and release at will would otherwise get every honest arbiter of his states
 * distrusted. Every grant is verified (`check`) before it counts as evidence, and only grants of
 * the state's arbiters as this node counts them are handed in: a forged grant, or one of a peer key
 * made offline, never makes the node distrust anyone.
 */

/** The collection of distrusted arbiters, one record per peer (DistrustRecord). */
export const DISTRUSTED = 'cs-distrusted-arbiters'
/** States whose first certificate seen this process remembers (the index conflicts are found in), and the bytes of grants it holds at most. */
export const CERT_STATES_INDEXED = 16_384
export const CERT_INDEX_BYTES = 64 * 1024 * 1024
/** Grants of up to this many states are counted by the index at their share per state (an arbiter signs one grant per request of at most 64 states). */
const SHARED_GRANT_STATES = 256
/**
 * What the index counts for a grant it holds for one state: its share when it is of few states
 * (its other states hold it too), the whole of it otherwise (a grant of many states held for one
 * must not keep its bytes alive uncounted).
 */
const grantBytes = (g: KeptGrant): number => {
  const all = 256 + 66 * g.states.length
  return g.states.length <= SHARED_GRANT_STATES ? Math.ceil(all / Math.max(1, g.states.length)) : all
}
/** Conflict records of evidence `certificates` kept that prove nothing (no final grant on both sides); past it they are counted and logged only. */
export const CERT_CONFLICTS_MAX = 1024
/** Distrusted arbiters kept at most (each needs a peer of this node's view to have signed two final grants). */
export const DISTRUSTED_MAX = 10_000
/** Bytes of grants one conflict record keeps (a grant of 4,096 states is some 270 kB); the arbiters of the grants left out are still named. */
export const CONFLICT_RECORD_BYTES = 1024 * 1024

/** What a grant is, once checked: not valid (undefined), valid, or final (its arbiter signed that no release undoes it). */
export type GrantCheck = 'valid' | 'final' | undefined

/** The proof that one arbiter granted one state twice: its two final grants. */
export interface DistrustRecord {
  peer: string
  stateHash: string
  txids: [string, string]
  grants: [KeptGrant, KeptGrant]
  /** the conflict record it comes from (`cs-double-spends/<id>`) */
  conflict: string
  at: number
}

/** A seal as evidence: a grant of its holder, final once its signature checks. */
export const sealEvidence = (s: PeerSeal): KeptGrant => ({ peer: s.peer, sig: s.sig, txid: s.holder, states: s.states, seal: true })

/** Grants (or seals) of one state held by one transaction, as a certificate check counted them. */
export interface SeenCertificate { stateHash: string, txid: string, grants: readonly KeptGrant[] }

/** What the claims code hands certificates to, and asks before counting a grant. */
export interface CertificateWatch {
  /** whether this node stopped trusting the arbiter (a proven double grant) */
  distrusted: (peer: string) => boolean
  /** certificates a check counted (verified grants of the state's arbiters): compared with those seen before; never throws, the work runs in the background */
  observe: (seenBy: DoubleSpendSeenBy, certs: readonly SeenCertificate[]) => void
}

/** The arbiters that granted both sides, and those of them whose both grants are final (proven). Pure. */
export function doubleGrantersOf (a: ReadonlyMap<string, KeptGrant>, b: ReadonlyMap<string, KeptGrant>): { grantedTwice: string[], proven: string[] } {
  const grantedTwice = [...a.keys()].filter((p) => b.has(p)).sort()
  return { grantedTwice, proven: grantedTwice.filter((p) => a.get(p)!.final === true && b.get(p)!.final === true) }
}

/** The id of the conflict of two transactions over one state (the same pair seen again is one record). */
export const conflictId = (stateHash: string, t1: string, t2: string): string =>
  sha3Hex(new TextEncoder().encode(`certificates|${stateHash}|${[t1, t2].sort().join('|')}`))

/** A side's grants, those of `first` arbiters first, as many as fit in `budget` bytes (JSON). */
function fit (grants: ReadonlyMap<string, KeptGrant>, first: ReadonlySet<string>, budget: { left: number }): KeptGrant[] {
  const out: KeptGrant[] = []
  const order = [...grants.keys()].sort((x, y) => (first.has(x) ? 0 : 1) - (first.has(y) ? 0 : 1) || (x < y ? -1 : 1))
  for (const p of order) {
    const g = grants.get(p)!
    const n = JSON.stringify(g).length
    if (n > budget.left) continue
    budget.left -= n
    out.push(g)
  }
  return out
}

type Side = { txid: string, grants: Map<string, KeptGrant> }

/**
 * Most arbiters kept on one side: with an arbiter committee in force every seat is an arbiter of
 * every state, so a side is sized for a committee, not for the k arbiters of a walk (the owner
 * would show his honest seals first and push the double sealers out of a smaller side).
 */
const SIDE_ARBITERS_MAX = 256

/**
 * Adds grants to one side's by arbiter (up to SIDE_ARBITERS_MAX): an arbiter's seal takes the
 * place of its grant (only seals can prove). Whether it changed.
 */
function addGrants (into: Map<string, KeptGrant>, grants: readonly KeptGrant[]): boolean {
  let changed = false
  for (const g of grants) {
    const had = into.get(g.peer)
    if (had === undefined ? into.size < SIDE_ARBITERS_MAX : g.seal === true && had.seal !== true) { into.set(g.peer, g); changed = true }
  }
  return changed
}

export class CertificateEvidence implements CertificateWatch {
  /** per state: the first transaction whose grants were seen, and its grants by arbiter (unverified until a conflict) */
  private readonly index = new Lru<{ txid: string, grants: Map<string, KeptGrant> }>(CERT_STATES_INDEXED, {
    maxBytes: CERT_INDEX_BYTES,
    sizeOf: (v) => { let n = 64; for (const g of v.grants.values()) n += grantBytes(g); return n }
  })
  private readonly untrusted = new Set<string>()
  /** conflicts kept as they stand (id and the arbiters of both sides): a replay reads nothing */
  private readonly known = new Lru<true>(4096)
  private unproven = 0
  private queue: Promise<void> = Promise.resolve()

  constructor (private readonly opts: {
    ledger: Pick<Ledger, 'record' | 'records' | 'commit'>
    /** verifies a grant's signature (its arbiter's key) and tells whether it is final */
    check: (g: KeptGrant) => Promise<GrantCheck>
    log: Logger
    clock: Clock
    observe?: ConsensusObserver
  }) {}

  /** Reads the distrusted arbiters and counts the conflict records kept (at start). */
  async load (): Promise<void> {
    for await (const [peer] of this.opts.ledger.records<DistrustRecord>(DISTRUSTED)) this.untrusted.add(peer)
    let n = 0
    for await (const [, p] of this.opts.ledger.records<DoubleSpendProof>(DOUBLE_SPENDS)) if (p.kind === 'certificates' && (p.distrusted ?? []).length === 0) n++
    this.unproven = n
  }

  distrusted (peer: string): boolean { return this.untrusted.has(peer) }

  /** The distrusted arbiters with their proofs. */
  async distrustedList (): Promise<DistrustRecord[]> {
    const out: DistrustRecord[] = []
    for await (const [, r] of this.opts.ledger.records<DistrustRecord>(DISTRUSTED)) out.push(r)
    return out.sort((a, b) => b.at - a.at)
  }

  observe (seenBy: DoubleSpendSeenBy, certs: readonly SeenCertificate[]): void {
    const conflicts: Array<{ stateHash: string, first: Side, other: Side }> = []
    for (const c of certs) {
      // that each grant names the state is checked with its signature, on a conflict (the check that counted it did)
      const grants = this.untrusted.size === 0 ? c.grants : c.grants.filter((g) => !this.untrusted.has(g.peer))
      if (grants.length === 0) continue
      const held = this.index.get(c.stateHash)
      if (held === undefined) {
        const m = new Map<string, KeptGrant>()
        addGrants(m, grants)
        this.index.set(c.stateHash, { txid: c.txid, grants: m })
      } else if (held.txid === c.txid) {
        // set again when it changed: its size is counted when it is set
        if (addGrants(held.grants, grants)) this.index.set(c.stateHash, held)
      } else {
        const other = new Map<string, KeptGrant>()
        addGrants(other, grants)
        conflicts.push({ stateHash: c.stateHash, first: { txid: held.txid, grants: new Map(held.grants) }, other: { txid: c.txid, grants: other } })
      }
    }
    // one at a time: two conflicts of one state merge into one record, not overwrite each other
    for (const k of conflicts) {
      this.queue = this.queue.then(async () => { await this.keep(seenBy, k.stateHash, k.first, k.other) }).catch((e: unknown) => {
        this.opts.log.warn(`conflicting certificates of state ${k.stateHash} seen, but the evidence could not be kept: ${errorMessage(e)}`)
      })
    }
  }

  /** Resolves once the conflicts handed in so far are kept (tests, shutdown). */
  async settled (): Promise<void> { await this.queue }

  /** Verifies a side's grants (each at most once per conflict), keeping those that check. */
  private async verified (stateHash: string, side: Side): Promise<Map<string, KeptGrant>> {
    const out = new Map<string, KeptGrant>()
    await Promise.all([...side.grants.values()].map(async (g) => {
      if (g.txid !== side.txid || !g.states.includes(stateHash)) return
      const r = await this.opts.check(g).catch(() => undefined)
      if (r === undefined) return
      const { final: _f, ...plain } = g as KeptGrant
      out.set(g.peer, r === 'final' ? { ...plain, final: true } : plain)
    }))
    return out
  }

  private async keep (seenBy: DoubleSpendSeenBy, stateHash: string, first: Side, other: Side): Promise<void> {
    const id = conflictId(stateHash, first.txid, other.txid)
    // what each side holds of each arbiter (a seal that took a grant's place is news)
    const held = (s: Side): string => [...s.grants.values()].map((g) => `${g.peer}${g.seal === true ? '*' : ''}`).sort().join(',')
    const memo = `${id}|${held(first)}|${held(other)}`
    if (this.known.get(memo) !== undefined) return
    const [a, b] = await Promise.all([this.verified(stateHash, first), this.verified(stateHash, other)])
    // grants that do not verify are no evidence; a first side that holds none no longer stands for the state
    if (a.size === 0 && b.size > 0 && this.index.get(stateHash)?.txid === first.txid) this.index.set(stateHash, { txid: other.txid, grants: new Map(b) })
    if (a.size === 0 || b.size === 0) return
    // what is kept already (an earlier sight of the same pair): merged, by arbiter
    const old = await this.opts.ledger.record<DoubleSpendProof>(DOUBLE_SPENDS, id)
    const sides: [Map<string, KeptGrant>, Map<string, KeptGrant>] = [a, b]
    const txids: [string, string] = [first.txid, other.txid]
    let changed = old === undefined
    for (const s of old?.certificates ?? []) {
      const into = s.txid === txids[0] ? sides[0] : s.txid === txids[1] ? sides[1] : undefined
      if (into === undefined) continue
      for (const g of s.grants) if (!into.has(g.peer) || (g.final === true && into.get(g.peer)!.final !== true)) into.set(g.peer, g)
    }
    if (old !== undefined) {
      const before = new Set((old.certificates ?? []).flatMap((s) => s.arbiters.map((p) => `${s.txid}|${p}`)))
      changed = sides.some((m, i) => [...m.keys()].some((p) => !before.has(`${txids[i]}|${p}`)))
    }
    const { grantedTwice, proven } = doubleGrantersOf(sides[0], sides[1])
    const fresh = proven.filter((p) => !this.untrusted.has(p)).slice(0, Math.max(0, DISTRUSTED_MAX - this.untrusted.size))
    if (!changed && fresh.length === 0) { this.known.set(memo, true); return }
    if (old === undefined && fresh.length === 0 && this.unproven >= CERT_CONFLICTS_MAX) {
      notify(this.opts.observe, { kind: 'double-spend', seenBy, evidence: 'certificates' })
      this.opts.log.warn(`conflicting certificates: state ${stateHash} granted to ${txids[0]} and to ${txids[1]} (seen by this node's ${seenBy}); not kept, ${CERT_CONFLICTS_MAX} such records are kept already`)
      this.known.set(memo, true)
      return
    }
    const budget = { left: CONFLICT_RECORD_BYTES }
    const twice = new Set(grantedTwice)
    const certificates: [CertificateSide, CertificateSide] = [0, 1].map((i) => ({ txid: txids[i]!, arbiters: [...sides[i]!.keys()].sort(), grants: fit(sides[i]!, twice, budget) })) as [CertificateSide, CertificateSide]
    const distrusted = [...new Set([...(old?.distrusted ?? []), ...fresh])].sort()
    const now = this.opts.clock.now()
    const proof: DoubleSpendProof = {
      id, tokenId: '', state: stateHash, stateHash, kind: 'certificates', spenders: txids,
      certificates, grantedTwice, distrusted, seenBy: old?.seenBy ?? seenBy, at: old?.at ?? now
    }
    await this.opts.ledger.commit((w) => {
      w.putRecord(DOUBLE_SPENDS, id, proof)
      for (const p of fresh) {
        const rec: DistrustRecord = { peer: p, stateHash, txids, grants: [sides[0].get(p)!, sides[1].get(p)!], conflict: id, at: now }
        w.putRecord(DISTRUSTED, p, rec)
      }
    })
    this.known.set(memo, true)
    if (old === undefined && distrusted.length === 0) this.unproven++
    for (const p of fresh) this.untrusted.add(p)
    if (old === undefined) {
      notify(this.opts.observe, { kind: 'double-spend', seenBy, evidence: 'certificates' })
      this.opts.log.warn(`conflicting certificates: state ${stateHash} granted to ${txids[0]} (${sides[0].size} arbiter(s)) and to ${txids[1]} (${sides[1].size}), ${grantedTwice.length} arbiter(s) granted both (seen by this node's ${seenBy}); evidence kept as ${id}`)
    }
    for (const p of fresh) {
      notify(this.opts.observe, { kind: 'arbiter-distrusted' })
      this.opts.log.warn(`arbiter ${p} distrusted: it sealed state ${stateHash} to ${txids[0]} and to ${txids[1]}; nothing of it counts here any more (proof in ${id})`)
    }
  }
}
