import { CHARTER_SIZE, charterCountsFrom, charterOf, charterProblem, registrationShapeProblem, type KeptRegistration } from '../../consensus/arbiter-registration.js'
import type { ChainBundle } from '../../consensus/types.js'
import { errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { PeerBuckets } from '../../util/peer-buckets.js'
import { sha3Hex } from '../../tokenchain/hash.js'
import type { HeldCharter } from './arbiter-rpc.js'
import { jsonBytes, wireKey, wireOf, type WireRegistration } from './arbiter-wire.js'

/**
 * The charter a node holds (docs/protocol.md, "The arbiter committee"): the 4 joins that stood
 * together, made here of the registrations held or offered by a peer and checked by what they
 * carry; the committee is in force once its youngest registration matured. A charter replaces the
 * one held only while that one has not counted yet, and only by one that counts earlier.
 */

/**
 * Charters checked per peer: one each 10 s, 4 at once. A budget of their own: an honest node offers
 * a charter only when it takes one that counts earlier than the one it held, so a relay's charter is
 * never refused because the registrations it passed on (any seat's, re-registered at will) spent
 * the budget they share.
 */
const CHARTER_RATE = 0.1
const CHARTER_BURST = 4
/** Digests of charters fetched apart that changed nothing here, remembered (past this many, the memory starts over). */
const UNCHANGED_MAX = 256

/**
 * A charter's digest, as it is listed apart and remembered when refused: sha3-256 over each
 * registration's key (its digest, its chains and contents) and both its signatures, so that a
 * copy with a spoilt signature never shares a refusal with the real one.
 */
export function charterDigest (regs: readonly WireRegistration[]): string {
  return sha3Hex(new TextEncoder().encode(JSON.stringify(regs.map((w) => [wireKey(w), w.reg.sig, w.reg.peerSig]))))
}

export interface ArbiterCharterOptions {
  maturityMs: number
  now: () => number
  log: Logger
  /** writes the charter's record (kept across restarts) */
  save: (record: { regs: WireRegistration[] }) => Promise<void>
  /** why a registration does not hold by what it carries (its signatures, its staked tokens' chains), else its chains */
  signedProblem: (w: WireRegistration) => Promise<string | ChainBundle>
  /** why a charter (by its key) was refused lately, if it was; and a refusal to remember */
  refusedWhy: (key: string) => string | undefined
  remember: (key: string, why: string) => void
  /** offers a charter taken to the connected peers but `except` */
  offer: (charter: HeldCharter, except?: string) => Promise<void>
  /** fetches from `from` the registrations of the charter of `digest` it listed or offered apart (undefined: it holds another by now) */
  fetchApart: (digest: string, from: string) => Promise<unknown[] | undefined>
}

export class ArbiterCharter {
  private held: (HeldCharter & { countsFrom: number }) | undefined
  private readonly limits = new PeerBuckets(CHARTER_RATE, CHARTER_BURST)
  /** fetches of charters sent apart, per peer: the same pace (each costs up to 4 frames before any check) */
  private readonly fetches = new PeerBuckets(CHARTER_RATE, CHARTER_BURST)
  private readonly checking = new Map<string, Promise<string | undefined>>()
  private readonly fetching = new Map<string, Promise<string | undefined>>()
  /**
   * Charters fetched apart that counted no earlier than the one held: never fetched again (the
   * charter held only ever gives way to one that counts earlier still), else every pull of a peer
   * holding another charter would fetch it again while neither counts
   */
  private readonly unchanged = new Set<string>()

  constructor (private readonly opts: ArbiterCharterOptions) {}

  /** Takes the charter's record as the store holds it; false for a record another version wrote, or a damaged one (to drop: the charter is made again, or pulled). */
  restore (record: unknown): boolean {
    const regs = (record as { regs?: unknown } | null)?.regs
    const ok = Array.isArray(regs) && regs.length === CHARTER_SIZE &&
      regs.every((w) => registrationShapeProblem((w as WireRegistration | null)?.reg, Number.MAX_SAFE_INTEGER) === undefined) &&
      charterProblem((regs as WireRegistration[]).map((w) => w.reg)) === undefined
    if (ok) this.held = this.holding(regs as WireRegistration[])
    return ok
  }

  private holding (regs: WireRegistration[]): HeldCharter & { countsFrom: number } {
    return { regs, bytes: jsonBytes(regs), digest: charterDigest(regs), countsFrom: charterCountsFrom(regs.map((w) => w.reg), this.opts.maturityMs) }
  }

  /** Whether the charter counts (the committee in force). */
  inForce (): boolean { return this.held !== undefined && this.opts.now() >= this.held.countsFrom }

  /** The charter's registrations, as listed and offered, with their weight and digest. */
  charter (): HeldCharter | undefined { return this.held === undefined ? undefined : { regs: this.held.regs, bytes: this.held.bytes, digest: this.held.digest } }

  view (): { dids: string[], countsFrom: number } | undefined {
    return this.held === undefined ? undefined : { dids: this.held.regs.map((w) => w.reg.did), countsFrom: this.held.countsFrom }
  }

  /** Whether a charter of `regs` would replace the one held: none held, or one that has not counted yet and counts later. */
  private better (regs: readonly WireRegistration[]): boolean {
    if (this.held === undefined) return true
    return !this.inForce() && charterCountsFrom(regs.map((w) => w.reg), this.opts.maturityMs) < this.held.countsFrom
  }

  /** Makes a charter of the registrations held, when they allow one that the held one does not beat. */
  async fromKept (kept: Iterable<KeptRegistration & WireRegistration>): Promise<void> {
    const regs = charterOf(kept)
    if (regs !== undefined && this.better(regs)) await this.keep(regs.map(wireOf))
  }

  private async keep (regs: WireRegistration[], from?: string): Promise<void> {
    if (!this.better(regs)) return
    const held = this.holding(regs)
    this.held = held
    // kept in memory when the write fails: it is made again from the registrations, or pulled, after a restart
    await this.opts.save({ regs }).catch((e: unknown) => { this.opts.log.warn(`arbiters: the charter could not be written: ${errorMessage(e)}`) })
    this.opts.log.info(`arbiter committee charter${from !== undefined ? ` from ${from}` : ''}: ${regs.map((w) => w.reg.did).join(', ')} (in force from ${new Date(held.countsFrom).toISOString()})`)
    void this.opts.offer(this.charter()!, from).catch(() => {})
  }

  /**
   * A charter `from` listed or offered apart, by its digest: fetched from it (`arbiters.charter`,
   * one registration an answer) only when it could change anything here (none held, or one held
   * that has not counted yet and is another), at most one each 10 s a peer; then checked as any
   * charter is (`receive`), once its registrations hash to the digest named. Undefined when it
   * was not fetched or changes nothing, else why it was refused.
   */
  async receiveApart (digest: string, from: string): Promise<string | undefined> {
    if (this.held !== undefined && (this.inForce() || this.held.digest === digest || this.unchanged.has(digest))) return undefined
    const refused = this.opts.refusedWhy(digest)
    if (refused !== undefined) return refused
    let p = this.fetching.get(digest)
    if (p === undefined) {
      if (!this.fetches.take(from)) return 'too many charters from this peer: try later'
      p = (async () => {
        const regs = await this.opts.fetchApart(digest, from).catch((e: unknown) => `fetching it failed: ${errorMessage(e)}`)
        if (typeof regs === 'string') return regs
        // the peer holds another charter by now: its next list names that one
        if (regs === undefined) return undefined
        let got: string
        try { got = charterDigest(regs as WireRegistration[]) } catch { got = '' }
        if (got !== digest) return 'the charter sent apart does not match its digest'
        const why = await this.receive(regs, from)
        if (why === undefined && this.held !== undefined && this.held.digest !== digest) {
          if (this.unchanged.size >= UNCHANGED_MAX) this.unchanged.clear()
          this.unchanged.add(digest)
        }
        return why
      })().finally(() => { this.fetching.delete(digest) })
      this.fetching.set(digest, p)
    }
    return await p
  }

  /**
   * A charter offered by `from`: kept when it holds and counts earlier than the one held (which has
   * not counted yet), else why not (undefined too when it changes nothing here). Checked by what
   * its registrations carry, not by probing their stakes: a stake spent since, or a seat left since,
   * does not undo that the committee came into force, and a node joining later must count the same.
   */
  async receive (regs: unknown, from: string): Promise<string | undefined> {
    if (!Array.isArray(regs) || regs.length !== CHARTER_SIZE) return `a charter holds ${CHARTER_SIZE} registrations`
    for (const w of regs as WireRegistration[]) {
      const shape = registrationShapeProblem(w?.reg, this.opts.now())
      if (shape !== undefined) return `a registration of the charter: ${shape}`
    }
    const wires = regs as WireRegistration[]
    const bad = charterProblem(wires.map((w) => w.reg))
    if (bad !== undefined) return bad
    if (!this.better(wires)) return undefined
    const key = charterDigest(wires)
    const refused = this.opts.refusedWhy(key)
    if (refused !== undefined) return refused
    let p = this.checking.get(key)
    if (p === undefined) {
      if (!this.limits.take(from)) return 'too many charters from this peer: try later'
      p = (async () => {
        for (const w of wires) {
          const why = await this.opts.signedProblem(w).catch((e: unknown) => `checking it failed: ${errorMessage(e)}`)
          if (typeof why === 'string') {
            const said = `registration of ${w.reg.did} in the charter: ${why}`
            this.opts.remember(key, said)
            this.opts.log.debug(`arbiter charter from ${from} refused: ${said}`)
            return said
          }
        }
        await this.keep(wires.map(wireOf), from)
        return undefined
      })().finally(() => { this.checking.delete(key) })
      this.checking.set(key, p)
    }
    return await p
  }
}
