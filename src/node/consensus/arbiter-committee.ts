import {
  countCommittee, matured, registrationDigest, registrationPeerBytes, registrationShapeProblem, stakeProbeTx, stakeProblem,
  type ArbiterRegistration, type CommitteeMember, type KeptRegistration, type StakeTip, type StakedToken
} from '../../consensus/arbiter-registration.js'
import { validateBundleToken } from '../../consensus/bundle.js'
import { earlierSpends } from '../../consensus/receiver.js'
import type { ChainBundle } from '../../consensus/types.js'
import type { ConsensusSigner } from '../../consensus/ports.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { Collection } from '../../storage/kv-store.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { PeerBuckets } from '../../util/peer-buckets.js'
import { bytesToHex, hexToBytes } from '../../wallet/bytes.js'
import type { RpcClient } from '../../p2p/rpc.js'
import { ArbiterCharter } from './arbiter-charter.js'
import { CHARTER_INLINE_BYTES, LIST_MAX, ListPulls, OFFER_MAX, charterField, fetchCharterApart, isCharterDigest, listPage, type ArbiterList, type ArbiterMethods, type HeldCharter } from './arbiter-rpc.js'
import { cleanAddrs, cursorOf, packBundle, stakeAnchors, stakeProbeStates, unpackBundle, wireKey, wireOf, type WireRegistration } from './arbiter-wire.js'

/**
 * The arbiter committee as this node keeps and counts it (docs/protocol.md, "The arbiter
 * committee"): the registrations it has seen, each checked once (both signatures, the staked
 * tokens' chains, the stake unspent at its arbiters) and its stake probed again from time to time;
 * spread by offering new ones to the connected peers and pulling every peer's list on connect and
 * periodically. The claims count the committee's seats as the arbiters once it is in force (its
 * charter: arbiter-charter.ts). The wire's shapes are in arbiter-wire.ts, the rpc and the list's
 * pages in arbiter-rpc.ts.
 */

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

/** Registrations checked per peer and second (the chains are validated, the stake probed), and the burst. */
const CHECK_RATE = 2
const CHECK_BURST = 64
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
  /** a charter heavier than this travels apart (CHARTER_INLINE_BYTES; lower in tests) */
  charterInlineBytes?: number
  now?: () => number
}

export class ArbiterCommittee {
  private readonly kept = new Map<string, Stored>()
  /**
   * The digest of each registration the store holds under another key (none this node wrote: it
   * keeps each under its digest, which is also the registration's place in the list's order)
   */
  private readonly digestOfKey = new Map<string, string>()
  private readonly limits = new PeerBuckets(CHECK_RATE, CHECK_BURST)
  private readonly checking = new Map<string, Promise<string | undefined>>()
  // registrations refused lately, as offered (the digest and what the signatures do not cover): a
  // refusal costs its chains' validation and a probe of the stake's arbiters, once
  private readonly refused = new Map<string, { at: number, why: string }>()
  private timers: NodeJS.Timeout[] = []
  /** the peers' lists pulled page by page, and where a pull cut short goes on from */
  private readonly pulls = new ListPulls()
  private cache: { at: number, members: CommitteeMember[] } | undefined
  private stakedCache: { self: string, at: number, tokens: ReadonlySet<string> } | undefined
  /** the charter this node holds (kept across restarts): the committee in force once it counts */
  private readonly charter: ArbiterCharter
  private readonly now: () => number

  constructor (private readonly opts: ArbiterCommitteeOptions) {
    this.now = opts.now ?? Date.now
    this.charter = new ArbiterCharter({
      maturityMs: opts.maturityMs,
      now: this.now,
      log: opts.log,
      save: async (record) => { await opts.col.put(CHARTER_KEY, record as never) },
      signedProblem: async (w) => await this.signedProblem(w),
      refusedWhy: (key) => this.refusedWhy(key),
      remember: (key, why) => { this.remember(key, why) },
      offer: async (charter, except) => { await this.offerAll([], except, charter) },
      fetchApart: async (digest, from) => {
        const rpc = this.opts.rpc()
        return rpc === undefined ? undefined : await fetchCharterApart(rpc, from, digest)
      }
    })
  }

  async load (): Promise<void> {
    for await (const [k, s] of this.opts.col.entries()) {
      if (k === OLD_IN_FORCE_KEY) { await this.opts.col.del(k).catch(() => {}); continue }
      if (k === CHARTER_KEY) {
        // a record another version wrote, or a damaged one, is dropped (the charter is made again, or pulled)
        if (!this.charter.restore(s)) await this.opts.col.del(k).catch(() => {})
        continue
      }
      if (registrationShapeProblem(s?.reg, Number.MAX_SAFE_INTEGER) !== undefined) { await this.opts.col.del(k).catch(() => {}); continue }
      this.kept.set(k, s.anchors !== undefined || s.reg.leave === true ? s : { ...s, anchors: stakeAnchors(s) })
      // hashed once here, not on every list answer
      const digest = registrationDigest(s.reg)
      if (digest !== k) this.digestOfKey.set(k, digest)
    }
    await this.charter.fromKept(this.kept.values())
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
  inForce (): boolean { return this.charter.inForce() }
  charterView (): { dids: string[], countsFrom: number } | undefined { return this.charter.view() }

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
    const refused = this.refusedWhy(wireKey(wire))
    if (refused !== undefined) return refused
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
    await this.charter.fromKept(this.kept.values())
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

  /** A charter offered by `from`: kept when it holds and counts earlier than the one held (arbiter-charter.ts), else why not. */
  async receiveCharter (regs: unknown, from: string): Promise<string | undefined> {
    return await this.charter.receive(regs, from)
  }

  /** A charter `from` listed or offered apart (its digest): fetched and checked when it could change anything here (arbiter-charter.ts). */
  async receiveCharterApart (digest: string, from: string): Promise<string | undefined> {
    return await this.charter.receiveApart(digest, from)
  }

  /** The charter held, with its weight and digest (`arbiters.charter` answers its registrations). */
  heldCharter (): HeldCharter | undefined { return this.charter.charter() }

  /** Why a registration or a charter (by its key, as offered) was refused lately, if it was. */
  private refusedWhy (key: string): string | undefined {
    const r = this.refused.get(key)
    return r !== undefined && this.now() - r.at < REFUSED_MEMORY_MS ? r.why : undefined
  }

  /** Remembers a refusal (a registration's or a charter's, as offered), the oldest forgotten past REFUSED_MAX. */
  private remember (key: string, why: string): void {
    this.refused.delete(key)
    while (this.refused.size >= REFUSED_MAX) this.refused.delete(this.refused.keys().next().value!)
    this.refused.set(key, { at: this.now(), why })
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
      this.digestOfKey.delete(k)
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
    return this.listed().map((x) => wireOf(x.s))
  }

  /** The verified registrations in the list's order (time, then digest), each with its cursor: the key it is kept under is its digest. */
  private listed (): Array<{ cursor: string, s: Stored }> {
    const out: Array<{ cursor: string, s: Stored }> = []
    for (const [k, s] of this.kept) if (s.verified) out.push({ cursor: cursorOf(s.reg.at, this.digestOfKey.get(k) ?? k), s })
    return out.sort((a, b) => a.s.reg.at - b.s.reg.at || (a.cursor < b.cursor ? -1 : 1))
  }

  /**
   * What this node answers a pull with: a page of its registrations (those after the cursor
   * `after`, oldest first, at most LIST_PAGE_BYTES of them), `next` when more follow, and its
   * charter on the first page, whole or, too heavy, its digest (arbiter-rpc.ts).
   */
  listAnswer (after?: string): ArbiterList {
    return listPage(this.listed(), this.charter.charter(), after, this.opts.charterInlineBytes ?? CHARTER_INLINE_BYTES)
  }

  /**
   * Takes a peer's list (a pull's answer): its charter first (checked by what it carries, at once:
   * not after every registration's probe; listed whole, as every version lists it, or apart,
   * fetched from the peer), then the registrations that hold. Returns how many registrations were new.
   */
  async take (list: ArbiterList, from: string): Promise<number> {
    if (list?.charter !== undefined) await this.receiveCharter(list.charter, from)
    else if (isCharterDigest(list?.charterApart)) await this.receiveCharterApart(list.charterApart, from)
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
    return await this.pulls.pull(rpc, peer, async (page) => await this.take(page, peer))
  }

  private async pullAll (): Promise<void> {
    const h = this.opts.host()
    if (h === undefined) return
    await Promise.all(h.connected().map(async (p) => { await this.pullFrom(p).catch(() => 0) }))
  }

  private async offerAll (regs: WireRegistration[], except?: string, charter?: HeldCharter): Promise<void> {
    const h = this.opts.host()
    const rpc = this.opts.rpc()
    if (h === undefined || rpc === undefined) return
    // a charter too heavy to offer whole is offered as its digest: the peer fetches it apart
    const field = charterField(charter, this.opts.charterInlineBytes ?? CHARTER_INLINE_BYTES)
    await Promise.all(h.connected().filter((p) => p !== except).map(async (p) => {
      await rpc.call(p, 'arbiters.offer', { regs: regs.slice(0, OFFER_MAX), ...field }, { timeoutMs: 10_000 }).catch(() => {})
    }))
  }
}
