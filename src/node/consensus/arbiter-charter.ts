import { CHARTER_SIZE, charterCountsFrom, charterOf, charterProblem, registrationShapeProblem, type KeptRegistration } from '../../consensus/arbiter-registration.js'
import type { ChainBundle } from '../../consensus/types.js'
import { errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { PeerBuckets } from '../../util/peer-buckets.js'
import { wireKey, wireOf, type WireRegistration } from './arbiter-wire.js'

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
  offer: (charter: WireRegistration[], except?: string) => Promise<void>
}

export class ArbiterCharter {
  private held: { regs: WireRegistration[], countsFrom: number } | undefined
  private readonly limits = new PeerBuckets(CHARTER_RATE, CHARTER_BURST)
  private readonly checking = new Map<string, Promise<string | undefined>>()

  constructor (private readonly opts: ArbiterCharterOptions) {}

  /** Takes the charter's record as the store holds it; false for a record another version wrote, or a damaged one (to drop: the charter is made again, or pulled). */
  restore (record: unknown): boolean {
    const regs = (record as { regs?: unknown } | null)?.regs
    const ok = Array.isArray(regs) && regs.length === CHARTER_SIZE &&
      regs.every((w) => registrationShapeProblem((w as WireRegistration | null)?.reg, Number.MAX_SAFE_INTEGER) === undefined) &&
      charterProblem((regs as WireRegistration[]).map((w) => w.reg)) === undefined
    if (ok) this.held = { regs: regs as WireRegistration[], countsFrom: charterCountsFrom((regs as WireRegistration[]).map((w) => w.reg), this.opts.maturityMs) }
    return ok
  }

  /** Whether the charter counts (the committee in force). */
  inForce (): boolean { return this.held !== undefined && this.opts.now() >= this.held.countsFrom }

  /** The charter's registrations, as listed and offered. */
  regs (): WireRegistration[] | undefined { return this.held?.regs }

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
    const countsFrom = charterCountsFrom(regs.map((w) => w.reg), this.opts.maturityMs)
    this.held = { regs, countsFrom }
    // kept in memory when the write fails: it is made again from the registrations, or pulled, after a restart
    await this.opts.save({ regs }).catch((e: unknown) => { this.opts.log.warn(`arbiters: the charter could not be written: ${errorMessage(e)}`) })
    this.opts.log.info(`arbiter committee charter${from !== undefined ? ` from ${from}` : ''}: ${regs.map((w) => w.reg.did).join(', ')} (in force from ${new Date(countsFrom).toISOString()})`)
    void this.opts.offer(regs, from).catch(() => {})
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
    const key = wires.map(wireKey).join('+')
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
