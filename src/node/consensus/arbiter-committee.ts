import {
  CHARTER_SIZE, charterCountsFrom, charterOf, charterProblem, countCommittee, matured, registrationDigest, registrationPeerBytes, registrationShapeProblem, stakeProbeTx, stakeProblem, stakeStateOf,
  type ArbiterRegistration, type CommitteeMember, type KeptRegistration, type StakeTip, type StakedToken
} from '../../consensus/arbiter-registration.js'
import { validateBundleToken } from '../../consensus/bundle.js'
import { earlierSpends } from '../../consensus/receiver.js'
import { spendAnchor } from '../../tokenchain/validate.js'
import { sha3Hex } from '../../tokenchain/hash.js'
import type { ChainBundle } from '../../consensus/types.js'
import type { ConsensusSigner } from '../../consensus/ports.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { Collection } from '../../storage/kv-store.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { PeerBuckets } from '../../util/peer-buckets.js'
import { bytesToHex, hexToBytes } from '../../wallet/bytes.js'
import type { RpcClient, RpcHandlers, UnarySpec } from '../../p2p/rpc.js'

/**
 * The arbiter committee as this node keeps and counts it (docs/protocol.md, "The arbiter
 * committee"): the registrations it has seen, each checked once (both signatures, the staked
 * tokens' chains, the stake unspent at its arbiters) and its stake probed again from time to time;
 * spread by offering new ones to the connected peers and pulling every peer's list on connect and
 * periodically. The claims count the committee's seats as the arbiters once it is in force.
 */

/** A registration on the wire: the record, the staked tokens' chains (hex block envelopes) and contents, the peer's addresses. */
export interface WireRegistration {
  reg: ArbiterRegistration
  chains?: Record<string, string[]>
  contents?: Record<string, string>
  addrs?: string[]
}

/** What a node lists and offers: registrations, and the charter it holds (the committee in force). */
export interface ArbiterList {
  regs: WireRegistration[]
  charter?: WireRegistration[]
  /** more registrations follow: ask again with `after` set to this */
  next?: string
}

export interface ArbiterMethods {
  /** every registration this node holds verified (with its chains), and its charter */
  'arbiters.list': UnarySpec<{ after?: string }, ArbiterList>
  /** registrations (or a charter) offered by a peer: checked, kept when they hold, passed on when new */
  'arbiters.offer': UnarySpec<ArbiterList, { taken: number }>
}

/**
 * How long after it was made a registration counts (default; `RBTNODE_ARBITER_MATURITY_MS`): long
 * against the time registrations take to reach every node, so that two honest nodes count the same
 * seats but for registrations younger than this.
 */
export const ARBITER_MATURITY_MS = 10 * 60_000
/** And how long after this node first saw it (`RBTNODE_ARBITER_GRACE_MS`): a registration made long ago and shown late. */
export const ARBITER_GRACE_MS = 2 * 60_000
/** How often every seat's stake is probed again at its arbiters (`RBTNODE_ARBITER_RECHECK_MS`). */
export const ARBITER_RECHECK_MS = 5 * 60_000
/** How often the connected peers' lists are pulled (`RBTNODE_ARBITER_PULL_MS`), besides once on every connection. */
export const ARBITER_PULL_MS = 60_000

/** Where the charter is kept; and where an earlier version kept a record of its own that the committee was in force (dropped: only a charter counts). */
const CHARTER_KEY = '~charter'
const OLD_IN_FORCE_KEY = '~in-force'

/** Most registrations one offer carries, and one list answer (its page) taken. */
export const OFFER_MAX = 16
export const LIST_MAX = 1024
/**
 * A list answer carries registrations of at most this many bytes (a frame carries 1 MiB), the
 * rest in further pages (`next`, asked with `after`); one pull reads at most LIST_PAGES pages.
 * Paged, not cut: a list cut to a budget would let whoever registers most often push older seats
 * out of what new nodes learn.
 */
export const LIST_PAGE_BYTES = 512 * 1024
export const LIST_PAGES = 64
/** Peers whose cut pull is remembered, to go on from (past it, the memory starts over). */
const RESUME_PEERS_MAX = 1024
/** Registrations checked per peer and second (the chains are validated, the stake probed), and the burst. */
const CHECK_RATE = 2
const CHECK_BURST = 64
/**
 * Charters checked per peer: one each 10 s, 4 at once. A budget of their own: an honest node offers
 * a charter only when it takes one that counts earlier than the one it held, so a relay's charter is
 * never refused because the registrations it passed on (any seat's, re-registered at will) spent
 * the budget they share.
 */
const CHARTER_RATE = 0.1
const CHARTER_BURST = 4
const MAX_CHAIN_BLOCKS = 64
/** How long a refused registration (as offered: with its chains) is answered from memory, and how many are remembered. */
const REFUSED_MEMORY_MS = 5 * 60_000
const REFUSED_MAX = 4096

interface Stored extends WireRegistration, Omit<KeptRegistration, 'reg'> {
  why?: string
  /** the addresses the relay that showed it gave (the seat's own, in `addrs`, come first) */
  relayAddrs?: string[]
}

export interface ArbiterCommitteeOptions {
  col: Collection<Stored>
  /** this node's peer: its id, its key and its addresses (undefined before the network is up) */
  host: () => { peerId: string, signAsPeer: (data: Uint8Array) => Promise<Uint8Array>, addrs: () => string[], learn: (peer: string, addrs: string[]) => Promise<void>, connected: () => string[] } | undefined
  rpc: () => RpcClient<ArbiterMethods> | undefined
  verifier: SignatureVerifier
  verifyPeer: (peer: string, data: Uint8Array, sig: Uint8Array) => Promise<boolean>
  /**
   * asks the arbiters of the staked states (as this node counts them) whether any holds one for a
   * transaction; `byView`: the peers of the view, as before any charter (no seat stands to ask)
   */
  probe: (items: Array<{ stateHash: string, holder: string }>, o?: { byView?: boolean }) => Promise<{ refused?: string, unanswered?: string }>
  distrusted?: (peer: string) => boolean
  log: Logger
  /** a test network: test RBT stake there (they cost nothing to mint, so nowhere else) */
  testNet: boolean
  maturityMs: number
  graceMs: number
  recheckMs: number
  pullMs: number
  now?: () => number
}

export class ArbiterCommittee {
  private readonly kept = new Map<string, Stored>()
  private readonly limits = new PeerBuckets(CHECK_RATE, CHECK_BURST)
  private readonly charterLimits = new PeerBuckets(CHARTER_RATE, CHARTER_BURST)
  private readonly checking = new Map<string, Promise<string | undefined>>()
  // registrations refused lately, as offered (the digest and what the signatures do not cover): a
  // refusal costs its chains' validation and a probe of the stake's arbiters, once
  private readonly refused = new Map<string, { at: number, why: string }>()
  private timers: NodeJS.Timeout[] = []
  /** Per peer, the cursor a pull cut at LIST_PAGES stopped at (the next pull of that peer goes on from it). */
  private readonly resumeAt = new Map<string, string>()
  private cache: { at: number, members: CommitteeMember[] } | undefined
  private stakedCache: { self: string, at: number, tokens: ReadonlySet<string> } | undefined
  /** the charter this node holds (kept across restarts): the committee in force once it counts */
  private charter: { regs: WireRegistration[], countsFrom: number } | undefined
  private readonly now: () => number

  constructor (private readonly opts: ArbiterCommitteeOptions) {
    this.now = opts.now ?? Date.now
  }

  async load (): Promise<void> {
    for await (const [k, s] of this.opts.col.entries()) {
      if (k === OLD_IN_FORCE_KEY) { await this.opts.col.del(k).catch(() => {}); continue }
      if (k === CHARTER_KEY) {
        // a record another version wrote, or a damaged one, is dropped (the charter is made again, or pulled)
        const regs = (s as unknown as { regs?: unknown } | null)?.regs
        const ok = Array.isArray(regs) && regs.length === CHARTER_SIZE &&
          regs.every((w) => registrationShapeProblem((w as WireRegistration | null)?.reg, Number.MAX_SAFE_INTEGER) === undefined) &&
          charterProblem((regs as WireRegistration[]).map((w) => w.reg)) === undefined
        if (ok) this.charter = { regs: regs as WireRegistration[], countsFrom: charterCountsFrom((regs as WireRegistration[]).map((w) => w.reg), this.opts.maturityMs) }
        else await this.opts.col.del(k).catch(() => {})
        continue
      }
      if (registrationShapeProblem(s?.reg, Number.MAX_SAFE_INTEGER) !== undefined) { await this.opts.col.del(k).catch(() => {}); continue }
      this.kept.set(k, s.anchors !== undefined || s.reg.leave === true ? s : { ...s, anchors: stakeAnchors(s) })
    }
    await this.charterFromKept()
  }

  start (): void {
    const every = (ms: number, f: () => Promise<void>): void => {
      if (ms <= 0) return
      const t = setInterval(() => { void f().catch((e: unknown) => { this.opts.log.debug(`arbiters: ${errorMessage(e)}`) }) }, ms)
      t.unref()
      this.timers.push(t)
    }
    every(this.opts.recheckMs, async () => { await this.recheck() })
    every(this.opts.pullMs, async () => { await this.pullAll() })
  }

  stop (): void { for (const t of this.timers) clearInterval(t); this.timers = [] }

  /** The members seated now (verified, standing, matured). */
  members (): CommitteeMember[] {
    const now = this.now()
    if (this.cache !== undefined && now - this.cache.at < 1000) return this.cache.members
    const members = countCommittee(this.kept.values(), now, { maturityMs: this.opts.maturityMs, graceMs: this.opts.graceMs, ...(this.opts.distrusted !== undefined ? { distrusted: this.opts.distrusted } : {}) })
    this.cache = { at: now, members }
    return members
  }

  /**
   * The seats' peers when the committee is in force, else undefined (the claims count the peers of
   * the view). In force means a charter counts: held (made here of the registrations the node
   * holds, or pulled and checked) and its youngest registration matured. It stays in force: a
   * committee that shrinks below its minimum (a seat leaves, lapses or is distrusted) counts its
   * remaining seats, however few, and never free peer ids again (an owner holding one seat of four
   * would otherwise leave and bring the Sybil attack back). Every node holding the charter counts
   * the same, whenever it came and whatever it was asked in between.
   */
  seats (): string[] | undefined {
    return this.inForce() ? this.members().map((x) => x.peer) : undefined
  }

  /** Whether a charter counts on this node (the committee in force), and from when. */
  inForce (): boolean { return this.charter !== undefined && this.now() >= this.charter.countsFrom }
  charterView (): { dids: string[], countsFrom: number } | undefined {
    return this.charter === undefined ? undefined : { dids: this.charter.regs.map((w) => w.reg.did), countsFrom: this.charter.countsFrom }
  }

  /** The addresses a seated peer registered with. */
  addrsOf (peer: string): string[] {
    let best: Stored | undefined
    for (const s of this.kept.values()) if (s.reg.peer === peer && s.verified && (best === undefined || s.reg.at > best.reg.at)) best = s
    return best === undefined ? [] : best.addrs !== undefined && best.addrs.length > 0 ? best.addrs : best.relayAddrs ?? []
  }

  /**
   * The tokens this node's own registrations stake (kept out of transfers and pledges): every join
   * not lapsed and not followed by a matured leave or replacement of its DID (a stake is free once
   * the seat it backs has ended everywhere).
   */
  stakedBy (self: string): ReadonlySet<string> {
    const now = this.now()
    // read by the consensus ledger on every token read: worked out again at most once a second
    if (this.stakedCache !== undefined && this.stakedCache.self === self && now - this.stakedCache.at < 1000) return this.stakedCache.tokens
    const out = new Set<string>()
    const rules = { maturityMs: this.opts.maturityMs, graceMs: this.opts.graceMs }
    const ended = new Map<string, number>()
    for (const s of this.kept.values()) {
      if (s.verified && matured(s, now, rules)) ended.set(s.reg.did, Math.max(ended.get(s.reg.did) ?? 0, s.reg.at))
    }
    for (const s of this.kept.values()) {
      if (s.reg.peer !== self || !s.verified || s.reg.leave === true || s.lapsed === true) continue
      if ((ended.get(s.reg.did) ?? 0) > s.reg.at) continue
      for (const t of s.reg.stake) out.add(t.token)
    }
    this.stakedCache = { self, at: now, tokens: out }
    return out
  }

  /** Every registration kept, for the operator: counted, waiting to mature, left, lapsed or refused. */
  view (): Array<{ did: string, peer: string, at: number, state: 'seated' | 'maturing' | 'left' | 'lapsed' | 'refused' | 'replaced', stake: StakedToken[], why?: string }> {
    const seated = new Set(this.members().map((m) => `${m.did}|${m.at}`))
    const latest = new Map<string, number>()
    for (const s of this.kept.values()) if (s.verified) latest.set(s.reg.did, Math.max(latest.get(s.reg.did) ?? 0, s.reg.at))
    return [...this.kept.values()].sort((a, b) => a.reg.at - b.reg.at).map((s) => ({
      did: s.reg.did,
      peer: s.reg.peer,
      at: s.reg.at,
      stake: s.reg.stake,
      state: !s.verified ? 'refused' : s.lapsed === true ? 'lapsed' : s.reg.leave === true ? 'left' : seated.has(`${s.reg.did}|${s.reg.at}`) ? 'seated' : (latest.get(s.reg.did) ?? 0) > s.reg.at ? 'replaced' : 'maturing',
      ...(s.why !== undefined ? { why: s.why } : {})
    }))
  }

  /**
   * Registers `signer`'s DID as an arbiter answered for by this node's peer, staking `stake` (whole
   * RBT tokens of the DID at their latest block, chains in `bundle`), or ends its seat (`leave`).
   */
  async register (signer: ConsensusSigner, stake: StakedToken[], bundle: ChainBundle, leave = false): Promise<ArbiterRegistration> {
    const h = this.opts.host()
    if (h === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the network is not up: an arbiter registration names this node\'s peer')
    const body = { v: 1 as const, did: signer.did, peer: h.peerId, stake: leave ? [] : stake, at: this.now(), ...(leave ? { leave: true as const } : {}) }
    const reg: ArbiterRegistration = { ...body, sig: await signer.pvtSign(registrationDigest(body)), peerSig: bytesToHex(await h.signAsPeer(registrationPeerBytes(body))) }
    const wire: WireRegistration = { reg, ...(leave ? {} : packBundle(bundle, stake.map((s) => s.token))), addrs: h.addrs() }
    const why = await this.check(wire, h.peerId, true)
    if (why !== undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `the registration does not hold: ${why}`)
    await this.offerAll([wire])
    return reg
  }

  /** A registration offered by `from`: kept when it holds (undefined), else why not. */
  async receive (wire: WireRegistration, from: string): Promise<string | undefined> {
    const shape = registrationShapeProblem(wire?.reg, this.now())
    if (shape !== undefined) return shape
    const key = registrationDigest(wire.reg)
    const had = this.kept.get(key)
    if (had !== undefined) {
      // the seat's own peer tells where it listens (the addresses are signed by nobody: no one else's count)
      if (from === wire.reg.peer && Array.isArray(wire.addrs)) {
        had.addrs = cleanAddrs(wire.addrs)
        await this.opts.col.put(key, had).catch(() => {})
      }
      return undefined
    }
    // a DID's registration older than the one kept: replaced, nothing to check or keep
    if (this.newerOf(wire.reg) !== undefined) return 'replaced by a later registration of its DID'
    if (!this.limits.take(from)) return 'too many registrations from this peer: try later'
    const r = this.refused.get(wireKey(wire))
    if (r !== undefined && this.now() - r.at < REFUSED_MEMORY_MS) return r.why
    return await this.check(wire, from, false)
  }

  /** A verified registration of `reg`'s DID made later than it, if one is kept. */
  private newerOf (reg: ArbiterRegistration): Stored | undefined {
    for (const s of this.kept.values()) if (s.verified && s.reg.did === reg.did && s.reg.at > reg.at) return s
    return undefined
  }

  private async check (wire: WireRegistration, from: string, own: boolean): Promise<string | undefined> {
    // keyed on the registration as offered: a copy with its chains spoilt shares no check with the real one
    const key = wireKey(wire)
    let p = this.checking.get(key)
    if (p === undefined) {
      // checked once however many peers offer it at once; passed on once, by the first check
      p = this.verify(wire, own || from === wire.reg.peer).then((why) => {
        if (why === undefined && !own) void this.offerAll([wire], from).catch(() => {})
        return why
      }).finally(() => { this.checking.delete(key) })
      this.checking.set(key, p)
    }
    return await p
  }

  /** `fromSeat`: offered by the seat's own peer (or registered here), whose addresses alone are kept. */
  private async verify (wire: WireRegistration, fromSeat: boolean): Promise<string | undefined> {
    const own = fromSeat && wire.reg.peer === this.opts.host()?.peerId
    const { reg } = wire
    const key = registrationDigest(reg)
    const why = await this.problem(wire).catch((e: unknown) => `checking it failed: ${errorMessage(e)}`)
    // a refusal is kept only for the operator's view of what the node itself registered; a peer's is dropped
    if (why !== undefined) {
      if (own) this.opts.log.warn(`arbiter registration of ${reg.did} refused: ${why}`)
      else this.opts.log.debug(`arbiter registration of ${reg.did} from its peer ${reg.peer} refused: ${why}`)
      this.remember(wireKey(wire), why)
      return why
    }
    // checked while a later one of its DID was taken: replaced already
    if (this.newerOf(reg) !== undefined) return 'replaced by a later registration of its DID'
    // a relay's addresses are kept apart, dialled only while the seat's own are not known: a wrong
    // one costs a failed dial (the handshake proves the peer id), none leaves the seat unreachable
    const stored: Stored = { ...wireOf(wire), addrs: fromSeat ? cleanAddrs(wire.addrs ?? []) : [], ...(fromSeat ? {} : { relayAddrs: cleanAddrs(wire.addrs ?? []) }), seen: this.now(), verified: true, ...(reg.leave === true ? {} : { anchors: stakeAnchors(wire) }) }
    await this.opts.col.put(key, stored)
    this.kept.set(key, stored)
    // a charter before the prune: the join a leave replaces is one of those that made it
    await this.charterFromKept()
    await this.prune(reg.did)
    this.cache = undefined
    this.stakedCache = undefined
    const h = this.opts.host()
    const dial = this.addrsOf(reg.peer)
    if (h !== undefined && dial.length > 0 && reg.peer !== h.peerId) await h.learn(reg.peer, dial).catch(() => {})
    this.opts.log.info(`arbiter ${reg.leave === true ? 'leaving' : 'registered'}: ${reg.did} (peer ${reg.peer})`)
    return undefined
  }

  /**
   * Why a registration does not hold by what it carries: its two signatures, its staked tokens'
   * chains (the DID's whole RBT at the blocks named). Else the chains, unpacked.
   */
  private async signedProblem (wire: WireRegistration): Promise<string | ChainBundle> {
    const { reg } = wire
    // the digest covers every field but the two signatures
    if (!await this.opts.verifyPeer(reg.peer, registrationPeerBytes(reg), hexToBytes(reg.peerSig)).catch(() => false)) return 'the peer\'s signature does not verify'
    if (!await this.opts.verifier.verify(reg.did, registrationDigest(reg), reg.sig, 'quorum').catch(() => false)) return 'the DID\'s signature does not verify'
    if (reg.leave === true) return { chains: {}, contents: {} }
    const bundle = unpackBundle(wire, reg.stake.map((s) => s.token))
    if (typeof bundle === 'string') return bundle
    const tips = new Map<string, StakeTip>()
    for (const s of reg.stake) {
      const tip = await validateBundleToken(bundle, s.token, this.opts.verifier).catch((e: unknown) => errorMessage(e))
      if (typeof tip === 'string') return `the chain of staked token ${s.token} does not validate: ${tip}`
      tips.set(s.token, { owner: tip.owner, blockId: tip.blockId, tokenType: tip.tokenType })
    }
    return stakeProblem(reg, tips, { testNet: this.opts.testNet }) ?? bundle
  }

  /** Why a registration does not hold: its signatures, its staked tokens' chains, the stake still unspent at its arbiters. */
  private async problem (wire: WireRegistration): Promise<string | undefined> {
    const { reg } = wire
    const bundle = await this.signedProblem(wire)
    if (typeof bundle === 'string') return bundle
    if (reg.leave === true) return undefined
    // the stake unspent, and every quorum-signed block of its chain certified: a former owner who
    // forks the token past his old block with quorums of his own shows a chain whose fork block
    // spent a state its arbiters hold for the token's real transfer (the receiver's earlier-block check)
    const earlier = reg.stake.flatMap((st) => earlierSpends(st.token, bundle.chains[st.token]!, 1))
    // with a charter in force and no seat standing, no arbiter could answer: every registration
    // would be refused, and no seat ever taken again. The peers of the view are asked then, as
    // before any charter (the seats' recheck lapses a stake found spent once seats stand)
    const byView = this.inForce() && this.members().length === 0
    const spent = await this.opts.probe([...stakeProbeStates(wire).map((stateHash) => ({ stateHash, holder: stakeProbeTx(reg) })), ...earlier], byView ? { byView } : undefined)
    if (spent.refused !== undefined) return `its stake is spent: ${spent.refused}`
    // not taken while its stake's arbiters cannot tell (the next pull offers it again)
    return spent.unanswered !== undefined ? `its stake cannot be checked now: ${spent.unanswered}` : undefined
  }

  /**
   * A charter offered by `from`: kept when it holds and counts earlier than the one held (which has
   * not counted yet), else why not (undefined too when it changes nothing here). Checked by what
   * its registrations carry, not by probing their stakes: a stake spent since, or a seat left since,
   * does not undo that the committee came into force, and a node joining later must count the same.
   */
  async receiveCharter (regs: unknown, from: string): Promise<string | undefined> {
    if (!Array.isArray(regs) || regs.length !== CHARTER_SIZE) return `a charter holds ${CHARTER_SIZE} registrations`
    for (const w of regs as WireRegistration[]) {
      const shape = registrationShapeProblem(w?.reg, this.now())
      if (shape !== undefined) return `a registration of the charter: ${shape}`
    }
    const wires = regs as WireRegistration[]
    const bad = charterProblem(wires.map((w) => w.reg))
    if (bad !== undefined) return bad
    if (!this.better(wires)) return undefined
    const key = wires.map(wireKey).join('+')
    const r = this.refused.get(key)
    if (r !== undefined && this.now() - r.at < REFUSED_MEMORY_MS) return r.why
    let p = this.checking.get(key)
    if (p === undefined) {
      if (!this.charterLimits.take(from)) return 'too many charters from this peer: try later'
      p = (async () => {
        for (const w of wires) {
          const why = await this.signedProblem(w).catch((e: unknown) => `checking it failed: ${errorMessage(e)}`)
          if (typeof why === 'string') {
            const said = `registration of ${w.reg.did} in the charter: ${why}`
            this.remember(key, said)
            this.opts.log.debug(`arbiter charter from ${from} refused: ${said}`)
            return said
          }
        }
        await this.keepCharter(wires.map(wireOf), from)
        return undefined
      })().finally(() => { this.checking.delete(key) })
      this.checking.set(key, p)
    }
    return await p
  }

  /** Remembers a refusal (a registration's or a charter's, as offered), the oldest forgotten past REFUSED_MAX. */
  private remember (key: string, why: string): void {
    this.refused.delete(key)
    while (this.refused.size >= REFUSED_MAX) this.refused.delete(this.refused.keys().next().value!)
    this.refused.set(key, { at: this.now(), why })
  }

  /** Whether a charter of `regs` would replace the one held: none held, or one that has not counted yet and counts later. */
  private better (regs: readonly WireRegistration[]): boolean {
    if (this.charter === undefined) return true
    return !this.inForce() && charterCountsFrom(regs.map((w) => w.reg), this.opts.maturityMs) < this.charter.countsFrom
  }

  /** Makes a charter of the registrations held, when they allow one that the held one does not beat. */
  private async charterFromKept (): Promise<void> {
    const regs = charterOf(this.kept.values())
    if (regs !== undefined && this.better(regs)) await this.keepCharter(regs.map(wireOf))
  }

  private async keepCharter (regs: WireRegistration[], from?: string): Promise<void> {
    if (!this.better(regs)) return
    const countsFrom = charterCountsFrom(regs.map((w) => w.reg), this.opts.maturityMs)
    this.charter = { regs, countsFrom }
    // kept in memory when the write fails: it is made again from the registrations, or pulled, after a restart
    await this.opts.col.put(CHARTER_KEY, { regs } as never).catch((e: unknown) => { this.opts.log.warn(`arbiters: the charter could not be written: ${errorMessage(e)}`) })
    this.opts.log.info(`arbiter committee charter${from !== undefined ? ` from ${from}` : ''}: ${regs.map((w) => w.reg.did).join(', ')} (in force from ${new Date(countsFrom).toISOString()})`)
    void this.offerAll([], from, regs).catch(() => {})
  }

  /**
   * At most two registrations kept per DID: its newest, and its newest matured one while the newest
   * has not matured (a replacement or a leave takes the seat over only once matured, so nodes that
   * saw it early and late switch together). Every other is dropped: each would be kept, listed and
   * probed for good.
   */
  private async prune (did: string): Promise<void> {
    const now = this.now()
    const rules = { maturityMs: this.opts.maturityMs, graceMs: this.opts.graceMs }
    let newest: Stored | undefined
    let newestMatured: Stored | undefined
    for (const s of this.kept.values()) {
      if (s.reg.did !== did || !s.verified) continue
      if (newest === undefined || s.reg.at > newest.reg.at) newest = s
      if (matured(s, now, rules) && (newestMatured === undefined || s.reg.at > newestMatured.reg.at)) newestMatured = s
    }
    for (const [k, s] of [...this.kept]) {
      if (s.reg.did !== did || s === newest || s === newestMatured) continue
      this.kept.delete(k)
      await this.opts.col.del(k).catch(() => {})
    }
  }

  /** Probes every standing registration's stake again: a stake spent since lapses its seat. */
  async recheck (): Promise<void> {
    for (const did of new Set([...this.kept.values()].map((s) => s.reg.did))) await this.prune(did)
    for (const [key, s] of this.kept) {
      if (!s.verified || s.lapsed === true || s.reg.leave === true) continue
      const spent = await this.opts.probe(stakeProbeStates(s).map((stateHash) => ({ stateHash, holder: stakeProbeTx(s.reg) }))).catch(() => ({ refused: undefined }))
      if (spent.refused === undefined) continue
      s.lapsed = true
      s.why = spent.refused
      this.cache = undefined
      this.stakedCache = undefined
      await this.opts.col.put(key, s).catch(() => {})
      this.opts.log.warn(`arbiter ${s.reg.did} loses its seat: its stake is spent (${spent.refused})`)
    }
  }

  /** The registrations this node offers (verified ones, with their chains), oldest first. */
  list (): WireRegistration[] {
    return this.listed().map(wireOf)
  }

  private listed (): Stored[] {
    return [...this.kept.values()].filter((s) => s.verified).sort((a, b) => a.reg.at - b.reg.at || (cursorOf(a) < cursorOf(b) ? -1 : 1))
  }

  /**
   * What this node answers a pull with: a page of its registrations (those after the cursor
   * `after`, oldest first, at most LIST_PAGE_BYTES of them), `next` when more follow, and its
   * charter on the first page (when no registration fits beside it, `next` is the empty cursor: from the first).
   */
  listAnswer (after?: string): ArbiterList {
    const all = this.listed()
    let i = after === undefined ? 0 : all.findIndex((s) => cursorOf(s) > after)
    if (i < 0) i = all.length
    const charter = after === undefined ? this.charter?.regs : undefined
    let bytes = charter === undefined ? 0 : jsonBytes(charter)
    const regs: WireRegistration[] = []
    let last: Stored | undefined
    for (; i < all.length; i++) {
      const w = wireOf(all[i]!)
      const n = jsonBytes(w)
      // the first page's charter counts too: a registration that does not fit beside it waits for the next page
      if ((regs.length > 0 || charter !== undefined) && bytes + n > LIST_PAGE_BYTES) break
      last = all[i]
      // one registration larger than a page never crosses a frame: left out, not blocking the pages after it
      if (n > LIST_PAGE_BYTES) continue
      regs.push(w)
      bytes += n
    }
    return { regs, ...(charter !== undefined ? { charter } : {}), ...(i < all.length ? { next: last !== undefined ? cursorOf(last) : '' } : {}) }
  }

  /**
   * Takes a peer's list (a pull's answer): its charter first (checked by what it carries, at once:
   * not after every registration's probe), then the registrations that hold. Returns how many
   * registrations were new.
   */
  async take (list: ArbiterList, from: string): Promise<number> {
    if (list?.charter !== undefined) await this.receiveCharter(list.charter, from)
    let taken = 0
    for (const w of Array.isArray(list?.regs) ? list.regs.slice(0, LIST_MAX) : []) {
      const before = this.kept.size
      if (await this.receive(w, from) === undefined && this.kept.size > before) taken++
    }
    return taken
  }

  /** Pulls `peer`'s registrations (page by page) and charter, and takes what holds. */
  async pullFrom (peer: string): Promise<number> {
    const rpc = this.opts.rpc()
    if (rpc === undefined) return 0
    let taken = 0
    // a pull cut at LIST_PAGES goes on, next time, from where it stopped: registrations backdated
    // ahead of the rest (the registrant picks `at`) cannot keep the later ones out of every pull
    let after: string | undefined = this.resumeAt.get(peer)
    this.resumeAt.delete(peer)
    for (let page = 0; page < LIST_PAGES; page++) {
      const res = await rpc.call(peer, 'arbiters.list', after === undefined ? {} : { after }, { timeoutMs: 10_000 })
      taken += await this.take(res, peer)
      // a cursor that does not move on ends the pull (a peer of an older version answers no `next`)
      if (typeof res?.next !== 'string' || res.next.length > 200 || (after !== undefined && res.next <= after)) break
      after = res.next
      if (page === LIST_PAGES - 1) {
        if (this.resumeAt.size >= RESUME_PEERS_MAX) this.resumeAt.clear()
        this.resumeAt.set(peer, after)
      }
    }
    return taken
  }

  private async pullAll (): Promise<void> {
    const h = this.opts.host()
    if (h === undefined) return
    await Promise.all(h.connected().map(async (p) => { await this.pullFrom(p).catch(() => 0) }))
  }

  private async offerAll (regs: WireRegistration[], except?: string, charter?: WireRegistration[]): Promise<void> {
    const h = this.opts.host()
    const rpc = this.opts.rpc()
    if (h === undefined || rpc === undefined) return
    await Promise.all(h.connected().filter((p) => p !== except).map(async (p) => {
      await rpc.call(p, 'arbiters.offer', { regs: regs.slice(0, OFFER_MAX), ...(charter !== undefined ? { charter } : {}) }, { timeoutMs: 10_000 }).catch(() => {})
    }))
  }
}

/**
 * The states a registration's stake is probed at: each staked token's spend anchor, read from the
 * chain it shows (the claims of a spend are keyed there, not on the staked block when it is a
 * genesis or an owner-only block).
 */
export function stakeProbeStates (w: Pick<WireRegistration, 'reg' | 'chains'>): string[] {
  const anchors = stakeAnchors(w)
  return w.reg.stake.map((s, i) => stakeStateOf(s, anchors[i]!))
}

/** Each staked token's spend anchor, read from the chain the registration shows (the staked block when none is shown). */
export function stakeAnchors (w: Pick<WireRegistration, 'reg' | 'chains'>): string[] {
  return w.reg.stake.map((s) => {
    const chain = w.chains?.[s.token]
    // the chain was validated when the registration was taken: it ends at the staked block
    try { if (chain !== undefined && chain.length > 0) return spendAnchor(chain.map((e) => hexToBytes(e))) } catch {}
    return s.block
  })
}

/** What a value weighs on the wire: its JSON in UTF-8 bytes (a character past ASCII, as unsigned addresses may carry, weighs up to 3). */
const jsonBytes = (x: unknown): number => Buffer.byteLength(JSON.stringify(x), 'utf8')

/** Where a registration stands in the list's order (its time, then its digest): a page's cursor. */
const cursorOf = (s: WireRegistration): string => `${String(s.reg.at).padStart(16, '0')}|${registrationDigest(s.reg)}`

/**
 * A registration as it is kept and goes on the wire: its staked tokens' chains and contents only,
 * and at most 8 addresses. Nothing else a relay adds (other chains, contents, fields) is kept or
 * passed on: a charter, kept for good and sent in every list answer, padded near the frame limit
 * made every `arbiters.list` answer too large to send.
 */
const wireOf = (s: WireRegistration): WireRegistration => {
  const staked = Array.isArray(s.reg?.stake) ? s.reg.stake.map((t) => t.token) : []
  const pick = <T>(m: Record<string, T> | undefined): Record<string, T> | undefined => {
    if (m === undefined || m === null || typeof m !== 'object') return undefined
    const out: Record<string, T> = {}
    for (const t of staked) if (Object.prototype.hasOwnProperty.call(m, t)) out[t] = m[t]!
    return out
  }
  const chains = pick(s.chains)
  const contents = pick(s.contents)
  return { reg: s.reg, ...(chains !== undefined ? { chains } : {}), ...(contents !== undefined ? { contents } : {}), ...(Array.isArray(s.addrs) ? { addrs: cleanAddrs(s.addrs) } : {}) }
}

/** A registration as offered: its digest and a hash of what the signatures do not cover (its chains and contents). */
function wireKey (w: WireRegistration): string {
  return `${registrationDigest(w.reg)}|${sha3Hex(new TextEncoder().encode(JSON.stringify([w.chains ?? null, w.contents ?? null])))}`
}

/** At most 8 addresses, each a string under 256 characters; anything else an offer carried (not a list, other values) is none. */
const cleanAddrs = (addrs: unknown): string[] => Array.isArray(addrs) ? addrs.filter((a): a is string => typeof a === 'string' && a.length < 256).slice(0, 8) : []

function packBundle (b: ChainBundle, ids: readonly string[]): Pick<WireRegistration, 'chains' | 'contents'> {
  const chains: Record<string, string[]> = {}
  const contents: Record<string, string> = {}
  for (const id of ids) {
    const c = b.chains[id]
    if (c !== undefined) chains[id] = c.map((e) => bytesToHex(e))
    if (b.contents[id] !== undefined) contents[id] = b.contents[id]!
  }
  return { chains, contents }
}

function unpackBundle (w: WireRegistration, ids: readonly string[]): ChainBundle | string {
  const chains: Record<string, Uint8Array[]> = {}
  const contents: Record<string, string> = {}
  for (const id of ids) {
    const c = w.chains?.[id]
    if (!Array.isArray(c) || c.length === 0 || c.length > MAX_CHAIN_BLOCKS || !c.every((e) => typeof e === 'string' && e.length < 1_000_000 && /^[0-9a-f]*$/.test(e))) return `the chain of staked token ${id} is missing or malformed`
    chains[id] = c.map((e) => hexToBytes(e))
    const content = w.contents?.[id]
    if (content !== undefined) {
      if (typeof content !== 'string' || content.length > 100_000) return `the content of staked token ${id} is malformed`
      contents[id] = content
    }
  }
  return { chains, contents }
}

/** The rpc handlers of the committee (served by every node). */
export function arbiterRpcHandlers (committee: () => ArbiterCommittee | undefined): RpcHandlers<ArbiterMethods> {
  const c = (): ArbiterCommittee => {
    const x = committee()
    if (x === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the arbiter committee is not loaded yet')
    return x
  }
  return {
    'arbiters.list': async (req) => c().listAnswer(typeof req?.after === 'string' && req.after.length <= 200 ? req.after : undefined),
    'arbiters.offer': async (req, ctx) => {
      if (!Array.isArray(req?.regs) || req.regs.length > OFFER_MAX) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed arbiter offer: up to ${OFFER_MAX} registrations`)
      const why = req.charter !== undefined ? await c().receiveCharter(req.charter, ctx.peerId) : undefined
      let taken = 0
      for (const w of req.regs) if (await c().receive(w, ctx.peerId) === undefined) taken++
      if (why !== undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `arbiter charter refused: ${why}`)
      return { taken }
    }
  }
}

