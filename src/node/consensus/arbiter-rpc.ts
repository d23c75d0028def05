import { ErrorCode, RbtError } from '../../util/errors.js'
import type { RpcClient, RpcHandlers, UnarySpec } from '../../p2p/rpc.js'
import { jsonBytes, wireOf, type WireRegistration } from './arbiter-wire.js'

/**
 * The `arbiters.*` rpc (docs/protocol.md, "The arbiter committee"): its methods and limits, the
 * handlers every node serves, the paged `arbiters.list` answer and a pull of a peer's list page by
 * page (going on, the next time, from where a pull cut at LIST_PAGES stopped).
 */

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
/** The longest cursor taken (asked with, or answered as `next`). */
const CURSOR_MAX = 200

/**
 * A page of the list: the registrations of `listed` (in the list's order, each with its cursor)
 * after the cursor `after`, at most LIST_PAGE_BYTES of them, `next` when more follow, and the
 * charter `held` on the first page (when no registration fits beside it, `next` is the empty cursor: from the first).
 */
export function listPage (listed: ReadonlyArray<{ cursor: string, s: WireRegistration }>, held: WireRegistration[] | undefined, after?: string): ArbiterList {
  let i = after === undefined ? 0 : listed.findIndex((x) => x.cursor > after)
  if (i < 0) i = listed.length
  const charter = after === undefined ? held : undefined
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
  return { regs, ...(charter !== undefined ? { charter } : {}), ...(i < listed.length ? { next: last ?? '' } : {}) }
}

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
  receive: (wire: WireRegistration, from: string) => Promise<string | undefined>
}

/** The rpc handlers of the committee (served by every node). */
export function arbiterRpcHandlers (committee: () => ArbiterServed | undefined): RpcHandlers<ArbiterMethods> {
  const c = (): ArbiterServed => {
    const x = committee()
    if (x === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the arbiter committee is not loaded yet')
    return x
  }
  return {
    'arbiters.list': async (req) => c().listAnswer(typeof req?.after === 'string' && req.after.length <= CURSOR_MAX ? req.after : undefined),
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
