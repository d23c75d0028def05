import { CHARTER_SIZE } from '../../consensus/arbiter-registration.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { PeerBuckets } from '../../util/peer-buckets.js'
import type { RpcClient, RpcHandlers, UnarySpec } from '../../p2p/rpc.js'
import { jsonBytes, wireOf, type WireRegistration } from './arbiter-wire.js'

/**
 * The `arbiters.*` rpc (docs/protocol.md, "The arbiter committee"): its methods and limits, the
 * handlers every node serves, the paged `arbiters.list` answer and a pull of a peer's list page by
 * page (going on, the next time, from where a pull cut at LIST_PAGES stopped), and a charter too
 * heavy to ride beside the list fetched apart (`arbiters.charter`, one registration an answer).
 */

/** What a node lists and offers: registrations, and the charter it holds (the committee in force). */
export interface ArbiterList {
  regs: WireRegistration[]
  /** the charter whole, when it weighs at most CHARTER_INLINE_BYTES (as every version sends it) */
  charter?: WireRegistration[]
  /** instead, the digest of a heavier charter (`charterDigest`), whose registrations `arbiters.charter` answers one by one */
  charterApart?: string
  /** more registrations follow: ask again with `after` set to this */
  next?: string
}

/** The charter a node holds, as it lists and offers it: its registrations, their weight on the wire and its digest. */
export interface HeldCharter {
  regs: WireRegistration[]
  bytes: number
  digest: string
}

/** One registration of the charter of `digest` (`reg` absent when the node holds another charter now: `digest` is then that one's). */
export interface CharterPart {
  digest: string
  reg?: WireRegistration
}

export interface ArbiterMethods {
  /** every registration this node holds verified (with its chains), and its charter */
  'arbiters.list': UnarySpec<{ after?: string }, ArbiterList>
  /** registrations (or a charter) offered by a peer: checked, kept when they hold, passed on when new */
  'arbiters.offer': UnarySpec<ArbiterList, { taken: number }>
  /** registration `i` (0 to CHARTER_SIZE − 1) of the charter of `digest` this node holds: a charter too heavy to list, fetched apart */
  'arbiters.charter': UnarySpec<{ digest: string, i: number }, CharterPart>
}

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
/**
 * A charter weighing more than this (UTF-8 JSON) travels apart: the first page (and an offer)
 * carries its digest, `charterApart`, and the puller asks `arbiters.charter` for its registrations
 * one by one (each fits a frame: it was offered, or listed, in one). Up to this, it rides the first
 * page whole, as peers of earlier versions send and expect it; a heavier one, inline, made every
 * first page cross the 1 MiB frame, and no node could pull from a node holding it.
 */
export const CHARTER_INLINE_BYTES = 768 * 1024
/** `arbiters.charter` answers per peer: 4 a charter, one charter each 10 s, 4 at once (each answer up to a frame). */
const CHARTER_PART_RATE = 0.4
const CHARTER_PART_BURST = 16
/** A charter's digest: sha3-256, hex. */
const DIGEST_RE = /^[0-9a-f]{64}$/

/** The charter as it rides a list page or an offer: whole when light enough, else its digest. */
export function charterField (held: HeldCharter | undefined, inlineBytes = CHARTER_INLINE_BYTES): Pick<ArbiterList, 'charter' | 'charterApart'> {
  if (held === undefined) return {}
  return held.bytes <= inlineBytes ? { charter: held.regs } : { charterApart: held.digest }
}

/** Peers whose cut pull is remembered, to go on from (past it, the memory starts over). */
const RESUME_PEERS_MAX = 1024
/** The longest cursor taken (asked with, or answered as `next`). */
const CURSOR_MAX = 200

/**
 * A page of the list: the registrations of `listed` (in the list's order, each with its cursor)
 * after the cursor `after`, at most LIST_PAGE_BYTES of them, `next` when more follow, and the
 * charter `held` on the first page, whole or, past CHARTER_INLINE_BYTES, as its digest (when no
 * registration fits beside it, `next` is the empty cursor: from the first).
 */
export function listPage (listed: ReadonlyArray<{ cursor: string, s: WireRegistration }>, held: HeldCharter | undefined, after?: string, inlineBytes = CHARTER_INLINE_BYTES): ArbiterList {
  let i = after === undefined ? 0 : listed.findIndex((x) => x.cursor > after)
  if (i < 0) i = listed.length
  const field = after === undefined ? charterField(held, inlineBytes) : {}
  const charter = field.charter ?? field.charterApart
  let bytes = charter === undefined ? 0 : jsonBytes(charter)
  const regs: WireRegistration[] = []
  let last: string | undefined
  for (; i < listed.length; i++) {
    const w = wireOf(listed[i]!.s)
    const n = jsonBytes(w)
    // the first page's charter counts too: a registration that does not fit beside it waits for the next page
    if ((regs.length > 0 || charter !== undefined) && bytes + n > LIST_PAGE_BYTES) break
    last = listed[i]!.cursor
    // one registration larger than a page never crosses a frame: left out, not blocking the pages after it
    if (n > LIST_PAGE_BYTES) continue
    regs.push(w)
    bytes += n
  }
  return { regs, ...field, ...(i < listed.length ? { next: last ?? '' } : {}) }
}

/**
 * Fetches from `peer` the registrations of the charter of `digest` it listed apart, one an answer;
 * undefined when the peer holds another charter by now (the next pull reads its new digest).
 * Checked by the caller as any charter is (its digest, then `receiveCharter`).
 */
export async function fetchCharterApart (rpc: RpcClient<ArbiterMethods>, peer: string, digest: string): Promise<unknown[] | undefined> {
  const regs: unknown[] = []
  for (let i = 0; i < CHARTER_SIZE; i++) {
    const res = await rpc.call(peer, 'arbiters.charter', { digest, i }, { timeoutMs: 10_000 })
    if (res?.digest !== digest || res.reg === undefined) return undefined
    regs.push(res.reg)
  }
  return regs
}

/** Whether `x` is a charter's digest as `charterApart` names it. */
export const isCharterDigest = (x: unknown): x is string => typeof x === 'string' && DIGEST_RE.test(x)

/** Pulls of the peers' lists, page by page; per peer, the cursor a pull cut at LIST_PAGES stopped at (the next pull of that peer goes on from it). */
export class ListPulls {
  private readonly resumeAt = new Map<string, string>()

  /** Pulls `peer`'s list, each page handed to `take` (which returns how many registrations were new); the sum. */
  async pull (rpc: RpcClient<ArbiterMethods>, peer: string, take: (page: ArbiterList) => Promise<number>): Promise<number> {
    let taken = 0
    // a pull cut at LIST_PAGES goes on, next time, from where it stopped: registrations backdated
    // ahead of the rest (the registrant picks `at`) cannot keep the later ones out of every pull
    let after: string | undefined = this.resumeAt.get(peer)
    this.resumeAt.delete(peer)
    for (let page = 0; page < LIST_PAGES; page++) {
      const res = await rpc.call(peer, 'arbiters.list', after === undefined ? {} : { after }, { timeoutMs: 10_000 })
      taken += await take(res)
      // a cursor that does not move on ends the pull (a peer of an older version answers no `next`)
      if (typeof res?.next !== 'string' || res.next.length > CURSOR_MAX || (after !== undefined && res.next <= after)) break
      after = res.next
      if (page === LIST_PAGES - 1) {
        if (this.resumeAt.size >= RESUME_PEERS_MAX) this.resumeAt.clear()
        this.resumeAt.set(peer, after)
      }
    }
    return taken
  }
}

/** What the handlers ask of the committee. */
export interface ArbiterServed {
  listAnswer: (after?: string) => ArbiterList
  receiveCharter: (regs: unknown, from: string) => Promise<string | undefined>
  /** a charter `from` listed or offered apart (its digest): fetched from it when it could change anything here, and checked */
  receiveCharterApart: (digest: string, from: string) => Promise<string | undefined>
  /** the charter held, to answer `arbiters.charter` */
  heldCharter: () => HeldCharter | undefined
  receive: (wire: WireRegistration, from: string) => Promise<string | undefined>
}

/** The rpc handlers of the committee (served by every node). */
export function arbiterRpcHandlers (committee: () => ArbiterServed | undefined): RpcHandlers<ArbiterMethods> {
  const c = (): ArbiterServed => {
    const x = committee()
    if (x === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the arbiter committee is not loaded yet')
    return x
  }
  const parts = new PeerBuckets(CHARTER_PART_RATE, CHARTER_PART_BURST)
  return {
    'arbiters.list': async (req) => c().listAnswer(typeof req?.after === 'string' && req.after.length <= CURSOR_MAX ? req.after : undefined),
    'arbiters.offer': async (req, ctx) => {
      if (!Array.isArray(req?.regs) || req.regs.length > OFFER_MAX) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed arbiter offer: up to ${OFFER_MAX} registrations`)
      // a charter offered apart is fetched from the offerer after this answer (it may be waiting on it)
      if (req.charter === undefined && isCharterDigest(req.charterApart)) {
        const from = ctx.peerId
        const committee = c()
        setImmediate(() => { void committee.receiveCharterApart(req.charterApart!, from).catch(() => {}) })
      }
      const why = req.charter !== undefined ? await c().receiveCharter(req.charter, ctx.peerId) : undefined
      let taken = 0
      for (const w of req.regs) if (await c().receive(w, ctx.peerId) === undefined) taken++
      if (why !== undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `arbiter charter refused: ${why}`)
      return { taken }
    },
    'arbiters.charter': async (req, ctx) => {
      if (!isCharterDigest(req?.digest) || !Number.isInteger(req?.i) || req.i < 0 || req.i >= CHARTER_SIZE) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed charter request: a digest and a registration from 0 to ${CHARTER_SIZE - 1}`)
      if (!parts.take(ctx.peerId)) throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, 'too many charter requests from this peer: try later')
      const held = c().heldCharter()
      if (held === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'no arbiter charter held')
      return held.digest === req.digest ? { digest: held.digest, reg: held.regs[req.i]! } : { digest: held.digest }
    }
  }
}
