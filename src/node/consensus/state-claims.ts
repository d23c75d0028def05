import { ClaimTable, CLAIM_ARBITERS, claimResult, claimantKey, claimantTx, tallyState, type ClaimAnswer, type ClaimRecord, type ClaimResult, type ClaimStore } from '../../consensus/claims.js'
import type { StateClaims } from '../../consensus/ports.js'
import type { BatchOp, Collection, KvStore } from '../../storage/kv-store.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { P2pHost } from '../../p2p/host.js'
import type { RpcClient, RpcHandlers, UnarySpec } from '../../p2p/rpc.js'
import { closestQuery, compareDistance, kadKey, kadPeerKey, type QueryPeer } from '../../p2p/closest-query.js'
import { raceAbort } from '../../p2p/deadline.js'
import { RequestCoalescer } from '../../util/request-coalescer.js'
import { closerPeerSets, spentKeyBytes, withAddresses, type NodeSpentMarkers } from './spent-markers.js'

/**
 * Claims over the network (docs/protocol.md, "Claims"): a designated checker claims each state a
 * transaction spends at the state's arbiters, the k peers closest to the state's key (the peers
 * that hold its spent marker), over the rpc channel; each node is an arbiter with a durable table
 * of claims. The arbiters are counted from a durable view of the network (every peer this node has
 * been connected to), not from the live routing table only, so a side of a partition still counts
 * the arbiters it cannot reach, and refuses.
 */
export interface StateClaimMethods {
  /** claims states for transactions: one answer per item, in order; `closer` peer ids whose addresses are in `addrs` */
  /** `via`: the transaction a state is claimed for when its spender `txid` is another (a part token's burnt ancestor, spent by its burn block) */
  'claims.claim': UnarySpec<{ items: Array<{ txid: string, quorum: string, stateHash: string, via?: string }> }, { answers: Array<{ granted: boolean, holder?: string, spent?: boolean, closer: string[] }>, addrs: Record<string, string[]> }>
  /** the claimant gives its claim of `txid` up (its vote was released before signing) */
  'claims.release': UnarySpec<{ txid: string, stateHashes: string[] }, { freed: number }>
  /** an arbiter asks a claimant how the claim's transaction ended for its quorum */
  'claims.status': UnarySpec<{ txid: string, quorum: string }, { outcome: 'pending' | 'committed' | 'released' }>
}

/** Most items of one `claims.claim`, and most states of one `claims.release`. */
export const CLAIM_BATCH_MAX = 64
const RELEASE_MAX = 1024
/** A claim whose transaction gave no word for this long has its outcome asked (as a quorum asks a sender). */
export const CLAIM_STALE_MS = 30_000
/** Requests of one claim walk in flight at once. */
const WALK_CONCURRENCY = 8

const STATE_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/
const TXID_RE = /^[0-9a-f]{64}$/

function needItems (req: unknown): asserts req is { items: Array<{ txid: string, quorum: string, stateHash: string, via?: string }> } {
  const items = (req as { items?: unknown } | undefined)?.items
  if (!Array.isArray(items) || items.length === 0 || items.length > CLAIM_BATCH_MAX) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim request: items must list 1 to ${CLAIM_BATCH_MAX} states`)
  for (const it of items as unknown[]) {
    const i = it as { txid?: unknown, quorum?: unknown, stateHash?: unknown, via?: unknown } | undefined
    if (typeof i?.txid !== 'string' || !TXID_RE.test(i.txid) || typeof i.quorum !== 'string' || i.quorum.length > 128 || typeof i.stateHash !== 'string' || !STATE_RE.test(i.stateHash) || (i.via !== undefined && (typeof i.via !== 'string' || !TXID_RE.test(i.via)))) {
      throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed claim request: each item needs a txid, a quorum DID and a state hash')
    }
  }
}

/** What a node keeps of a peer of the network for its arbiter view: when it was last known alive, and its addresses. */
interface SeenPeer { seen: number, addrs: string[] }

/**
 * How long a peer that is not connected stays in the arbiter view (default; `RBTNODE_ARBITER_FORGET_MS`).
 * Meanwhile it counts as an arbiter that is down; a side of a partition that lasts longer than this
 * stops counting the other side's peers (protocol.md, "Claims": what it tolerates).
 */
export const ARBITER_FORGET_MS = 3600_000
/** Most peers the arbiter view keeps (the least recently seen go first). */
export const ARBITER_VIEW_MAX = 10_000
/** How often a peer's entry is written again while it stays connected, and this node's own heartbeat. */
const SEEN_REFRESH_MS = 60_000
/** The view's record of this node's own last heartbeat (not a peer id). */
const SELF_KEY = '~self'

/**
 * Every peer this node has been connected to recently, durable: the network as this node knew it,
 * which the arbiters of a state are counted from even while some of them cannot be reached. A peer
 * is known alive while connected and until `forgetMs` after it was last connected; the time this
 * node itself was down does not count (the view is as old as when the node stopped), so a node
 * that restarts counts the same network as before.
 */
export class ArbiterView {
  private readonly peers = new Map<string, SeenPeer & { key: Uint8Array, written: number }>()
  private timer: NodeJS.Timeout | undefined

  constructor (private readonly col: Collection<SeenPeer>, private readonly self: string, private readonly log: Logger, private readonly connectedNow: () => ReadonlySet<string>, private readonly forgetMs = ARBITER_FORGET_MS) {}

  async load (): Promise<void> {
    const now = Date.now()
    const entries: Array<[string, SeenPeer]> = []
    let lastAlive: number | undefined
    for await (const [id, p] of this.col.entries()) {
      if (typeof p?.seen !== 'number') continue
      if (id === SELF_KEY) lastAlive = p.seen
      else if (id !== this.self) entries.push([id, p])
    }
    // the time this node was down does not age its view
    const offset = lastAlive !== undefined && lastAlive < now ? now - lastAlive : 0
    for (const [id, p] of entries) {
      const seen = p.seen + offset
      if (now - seen > this.forgetMs) { await this.col.del(id).catch(() => {}); continue }
      try { this.peers.set(id, { seen, addrs: Array.isArray(p.addrs) ? p.addrs.slice(0, 16) : [], key: kadPeerKey(id), written: 0 }) } catch { await this.col.del(id).catch(() => {}) }
    }
    await this.heartbeat()
    this.timer = setInterval(() => { void this.heartbeat() }, SEEN_REFRESH_MS)
    this.timer.unref()
  }

  stop (): void { if (this.timer !== undefined) clearInterval(this.timer) }

  /** Writes this node's own heartbeat and the connected peers' entries that are due. */
  private async heartbeat (): Promise<void> {
    const now = Date.now()
    await this.col.put(SELF_KEY, { seen: now, addrs: [] }).catch(() => {})
    const connected = this.connectedNow()
    for (const [id, p] of this.peers) {
      if (connected.has(id)) { p.seen = now; await this.write(id, p, now) }
    }
  }

  private async write (id: string, p: SeenPeer & { written: number }, now: number): Promise<void> {
    if (now - p.written < SEEN_REFRESH_MS) return
    p.written = now
    await this.col.put(id, { seen: p.seen, addrs: p.addrs }).catch((e: unknown) => { this.log.debug(`arbiter view: ${errorMessage(e)}`) })
  }

  /** A peer connected or disconnected (it was alive until now): kept, with its addresses when given. */
  async seen (peerId: string, addrs: string[] = []): Promise<void> {
    if (peerId === this.self || peerId === SELF_KEY) return
    const now = Date.now()
    const had = this.peers.get(peerId)
    let key: Uint8Array
    try { key = had?.key ?? kadPeerKey(peerId) } catch { return }
    const kept = addrs.length > 0 ? addrs.slice(0, 16) : had?.addrs ?? []
    const entry = { seen: now, addrs: kept, key, written: had?.written ?? 0 }
    if (had !== undefined && had.addrs.join() !== kept.join()) entry.written = 0
    this.peers.set(peerId, entry)
    if (this.peers.size > ARBITER_VIEW_MAX) await this.trim()
    await this.write(peerId, entry, now)
  }

  /** A peer that is no arbiter after all (it does not speak rbtnode's protocols: a Kubo peer): dropped. */
  async forget (peerId: string): Promise<void> {
    if (this.peers.delete(peerId)) await this.col.del(peerId).catch(() => {})
  }

  private async trim (): Promise<void> {
    const oldest = [...this.peers].sort((a, b) => a[1].seen - b[1].seen).slice(0, this.peers.size - ARBITER_VIEW_MAX)
    for (const [id] of oldest) { this.peers.delete(id); await this.col.del(id).catch(() => {}) }
  }

  /** The `count` peers of the view closest to `target` (a Kademlia id) that are connected or were within `forgetMs`, with their addresses. */
  closest (target: Uint8Array, count: number): QueryPeer[] {
    const now = Date.now()
    const connected = this.connectedNow()
    return [...this.peers].filter(([id, p]) => connected.has(id) || now - p.seen <= this.forgetMs)
      .sort((a, b) => compareDistance(target, a[1].key, b[1].key)).slice(0, count).map(([peerId, p]) => ({ peerId, multiaddrs: p.addrs }))
  }

  get size (): number { return this.peers.size }
}

/**
 * The arbiter's table on the node's store: open claims in `claims`, those whose transaction
 * committed in `claims-spent` (kept for good, never scanned by the sweep), so the sweep's cost
 * follows the claims in flight, not the node's history.
 */
export function claimStoreOn (store: KvStore): ClaimStore {
  const open = store.collection<ClaimRecord>('claims')
  const spent = store.collection<ClaimRecord>('claims-spent')
  return {
    getMany: async (hashes) => {
      const [o, s] = await Promise.all([open.getMany(hashes), spent.getMany(hashes)])
      return hashes.map((_h, i) => s[i] ?? o[i])
    },
    write: async (puts, dels) => {
      const ops: BatchOp[] = []
      for (const [k, r] of puts) {
        if (r.committed === true) { ops.push({ type: 'put', collection: 'claims-spent', key: k, value: r }, { type: 'del', collection: 'claims', key: k }) } else ops.push({ type: 'put', collection: 'claims', key: k, value: r })
      }
      for (const k of dels) ops.push({ type: 'del', collection: 'claims', key: k })
      await store.batch(ops)
    },
    entries: () => open.entries()
  }
}

export interface NodeStateClaims extends StateClaims {
  serveClaim: (items: Array<{ txid: string, quorum: string, stateHash: string, via?: string }>, asker: string) => Promise<StateClaimMethods['claims.claim']['response']>
  serveRelease: (txid: string, stateHashes: string[], asker: string) => Promise<{ freed: number }>
  /** the arbiter's periodic duty: claims with no word for a while are settled (marker, or their claimants asked) */
  sweep: () => Promise<void>
  table: ClaimTable
}

export function stateClaimRpcHandlers (claims: () => NodeStateClaims | undefined, outcome: () => ((quorum: string, txid: string) => Promise<'pending' | 'committed' | 'released'>) | undefined): RpcHandlers<StateClaimMethods> {
  const svc = (): NodeStateClaims => {
    const c = claims()
    if (c === undefined) throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'claims are not served yet')
    return c
  }
  return {
    'claims.claim': async (req, ctx) => { needItems(req); return await svc().serveClaim(req.items, ctx.peerId) },
    'claims.release': async (req, ctx) => {
      if (typeof req?.txid !== 'string' || !TXID_RE.test(req.txid) || !Array.isArray(req.stateHashes) || req.stateHashes.length > RELEASE_MAX || !req.stateHashes.every((h) => typeof h === 'string' && STATE_RE.test(h))) {
        throw new RbtError(ErrorCode.INVALID_INPUT, `malformed claim release: a txid and up to ${RELEASE_MAX} state hashes`)
      }
      return await svc().serveRelease(req.txid, req.stateHashes, ctx.peerId)
    },
    'claims.status': async (req) => {
      if (typeof req?.txid !== 'string' || !TXID_RE.test(req.txid) || typeof req.quorum !== 'string' || req.quorum.length > 128) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed claim status request')
      const o = outcome()
      if (o === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'consensus is not running')
      return { outcome: await o(req.quorum, req.txid) }
    }
  }
}

export function nodeStateClaims (opts: {
  host: () => P2pHost | undefined
  rpc: () => RpcClient<StateClaimMethods> | undefined
  table: ClaimTable
  view: ArbiterView
  markers: NodeSpentMarkers
  /** how a claim of this node's quorum ended (the arbiters' status question, answered locally for this node's own claims) */
  outcome: (quorum: string, txid: string) => Promise<'pending' | 'committed' | 'released'>
  timeoutMs?: number
  log: Logger
}): NodeStateClaims {
  const { table, view, log } = opts
  const timeoutMs = opts.timeoutMs ?? 3000
  const rpcNow = (): RpcClient<StateClaimMethods> => {
    const rpc = opts.rpc()
    if (rpc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the rpc layer is stopped')
    return rpc
  }
  type Item = { txid: string, quorum: string, stateHash: string, via?: string }
  type Answer = { granted: boolean, holder?: string, spent?: boolean, closer: QueryPeer[] }
  // the walks of one transaction's states ask the same peers: one request per peer and turn
  const claims = new RequestCoalescer<Item, Answer>({
    send: async (peer, items) => withAddresses(await rpcNow().call(peer, 'claims.claim', { items }, { timeoutMs })),
    sendOne: async (peer, item) => withAddresses(await rpcNow().call(peer, 'claims.claim', { items: [item] }, { timeoutMs }))[0]!,
    maxBatch: CLAIM_BATCH_MAX
  })

  /** The arbiter's grants for items of possibly several transactions (a verified spent marker refuses). */
  const grant = async (items: readonly Item[], claimantPeer: string): Promise<ClaimAnswer[]> => {
    const out: ClaimAnswer[] = new Array(items.length)
    const groups = new Map<string, number[]>()
    items.forEach((it, i) => {
      const k = `${it.txid}|${it.quorum}|${it.via ?? ''}`
      const g = groups.get(k)
      if (g === undefined) groups.set(k, [i]); else g.push(i)
    })
    for (const idx of groups.values()) {
      const { txid, quorum, via } = items[idx[0]!]!
      const hashes = idx.map((i) => items[i]!.stateHash)
      const markers = await opts.markers.knownMany(hashes).catch(() => [])
      const answers = await table.claim(txid, hashes, { peer: claimantPeer, quorum, ...(via !== undefined && via !== txid ? { tx: via } : {}) }, markers.map((m) => m?.txid))
      idx.forEach((i, j) => { out[i] = answers[j]! })
    }
    return out
  }

  const claimStates = async (txid: string, quorum: string, stateHashes: readonly string[], burns: ReadonlyArray<{ stateHash: string, spender: string }> = []): Promise<ClaimResult> => {
    const h = opts.host()
    const self = h?.peerId ?? 'self'
    // the transaction's own states, and the burnt ancestors of its parts, each spent by its burn block
    const wanted = new Map<string, Item>()
    for (const stateHash of stateHashes) wanted.set(stateHash, { txid, quorum, stateHash })
    for (const b of burns) if (!wanted.has(b.stateHash)) wanted.set(b.stateHash, { txid: b.spender, quorum, stateHash: b.stateHash, via: txid })
    const items = [...wanted.values()]
    // this node is an arbiter too (when among a state's k closest): its own table first
    const mine = await grant(items, self)
    const tallies = await Promise.all(items.map(async (item, i) => {
      const { stateHash } = item
      const answers = new Map<string, ClaimAnswer>([[self, mine[i]!]])
      const key = spentKeyBytes(stateHash)
      const target = kadKey(key)
      const fromView = view.closest(target, CLAIM_ARBITERS)
      let learned: string[] = []
      if (h !== undefined && opts.rpc() !== undefined) {
        const start = new Map<string, QueryPeer>()
        for (const p of fromView) start.set(p.peerId, p)
        for (const p of h.closestKnownPeers(key, CLAIM_ARBITERS)) if (!start.has(p)) start.set(p, { peerId: p, multiaddrs: [] })
        const res = await closestQuery<ClaimAnswer>({
          target,
          start: [...start.values()],
          self,
          k: CLAIM_ARBITERS,
          concurrency: WALK_CONCURRENCY,
          signal: AbortSignal.timeout(timeoutMs),
          ask: async (peer, signal) => {
            if (peer.multiaddrs.length > 0) await h.learnPeer(peer)
            const a = await raceAbort(claims.request(peer.peerId, item), signal)
            if (typeof a?.granted !== 'boolean') throw new RbtError(ErrorCode.PROTOCOL, 'malformed claim answer')
            answers.set(peer.peerId, a.granted ? { granted: true } : { granted: false, holder: typeof a.holder === 'string' ? a.holder : '', ...(a.spent === true ? { spent: true as const } : {}) })
            return { closer: Array.isArray(a.closer) ? a.closer : [] }
          }
        })
        learned = res.answered
      }
      // the arbiters: the k closest of this node, its view of the network (connected peers and those
      // connected within the forget time) and the peers that answered on the way; one that does not
      // answer counts as a refusal. The routing table is asked, not counted: it keeps peers long
      // gone until it pings them out, and each would count as a refusal.
      const candidates = new Map<string, Uint8Array>()
      const add = (id: string): void => { if (!candidates.has(id)) { try { candidates.set(id, kadPeerKey(id)) } catch {} } }
      if (h !== undefined) add(self)
      for (const p of fromView) add(p.peerId)
      for (const p of learned) add(p)
      const arbiters = h === undefined ? [self] : [...candidates].sort((a, b) => compareDistance(target, a[1], b[1])).slice(0, CLAIM_ARBITERS).map(([id]) => id)
      return tallyState(stateHash, arbiters, answers)
    }))
    const r = claimResult(tallies)
    if (!r.granted) log.debug(`claim of ${txid.slice(0, 12)} refused: ${r.reason}`)
    return r
  }

  const release = async (txid: string, _quorum: string, stateHashes: readonly string[]): Promise<void> => {
    const h = opts.host()
    const self = h?.peerId ?? 'self'
    const unique = [...new Set(stateHashes)]
    await table.release(txid, unique, self)
    if (h === undefined || opts.rpc() === undefined) return
    // every peer that may be an arbiter of one of the states: the view's and the live closest
    const byPeer = new Map<string, string[]>()
    for (const s of unique) {
      const key = spentKeyBytes(s)
      const peers = new Set([...view.closest(kadKey(key), CLAIM_ARBITERS).map((p) => p.peerId), ...h.closestKnownPeers(key, CLAIM_ARBITERS)])
      for (const p of peers) {
        if (p === self) continue
        const l = byPeer.get(p)
        if (l === undefined) byPeer.set(p, [s]); else l.push(s)
      }
    }
    await Promise.all([...byPeer].map(async ([peer, hashes]) => {
      for (let i = 0; i < hashes.length; i += RELEASE_MAX) {
        await rpcNow().call(peer, 'claims.release', { txid, stateHashes: hashes.slice(i, i + RELEASE_MAX) }, { timeoutMs }).catch(() => {})
      }
    }))
  }

  const sweep = async (): Promise<void> => {
    const stale = await table.stale(Date.now() - CLAIM_STALE_MS)
    if (stale.length === 0) return
    // a claim whose transaction's spent marker is here (verified) has done its work
    const markers = await opts.markers.knownMany(stale.map((s) => s.stateHash)).catch(() => [])
    const open: typeof stale = []
    for (const [i, s] of stale.entries()) {
      if (markers[i]?.txid === s.claim.txid) await table.superseded(s.stateHash, s.claim.txid)
      else open.push(s)
    }
    // the others: their claimants are asked how the transaction they claimed for ended, once per
    // claimant and transaction
    const self = opts.host()?.peerId
    const asked = new Map<string, Promise<'pending' | 'committed' | 'released'>>()
    const ask = async (peer: string, quorum: string, tx: string): Promise<'pending' | 'committed' | 'released'> => {
      try {
        if (peer === self || peer === 'self') return await opts.outcome(quorum, tx)
        const o = (await rpcNow().call(peer, 'claims.status', { txid: tx, quorum }, { timeoutMs })).outcome
        return o === 'committed' || o === 'released' ? o : 'pending'
      } catch { return 'pending' }
    }
    for (const s of open) {
      const outcomes = new Map<string, 'pending' | 'committed' | 'released'>()
      for (const c of s.claim.claimants) {
        const key = claimantKey(s.claim, c)
        let p = asked.get(key)
        if (p === undefined) { p = ask(c.peer, c.quorum, claimantTx(s.claim, c)); asked.set(key, p) }
        outcomes.set(key, await p)
      }
      await table.settle(s.stateHash, s.claim.txid, outcomes)
    }
    if (open.length > 0) log.debug(`claims: ${open.length} stale claim(s) asked about`)
  }

  return {
    claim: claimStates,
    release,
    serveClaim: async (items, asker) => {
      const answers = await grant(items, asker)
      const closer = await closerPeerSets(opts.host(), items.map((it) => it.stateHash), asker)
      return { answers: answers.map((a, i) => ({ ...a, closer: closer.ids[i]! })), addrs: closer.addrs }
    },
    serveRelease: async (txid, stateHashes, asker) => ({ freed: await table.release(txid, stateHashes, asker) }),
    sweep,
    table
  }
}
