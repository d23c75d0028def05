import { sha3Hex } from '../../tokenchain/hash.js'
import { utf8 } from '../../wallet/bytes.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { SpentMarker, SpentMarkers, ConsensusSigner } from '../../consensus/ports.js'
import type { Collection } from '../../storage/kv-store.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { P2pHost } from '../../p2p/host.js'
import type { RpcClient, RpcHandlers, UnarySpec } from '../../p2p/rpc.js'
import { closestQuery, kadKey, type QueryPeer } from '../../p2p/closest-query.js'
import { raceAbort } from '../../p2p/deadline.js'
import { KeyedMutex } from '../../consensus/keyed-mutex.js'
import { RequestCoalescer } from '../../util/request-coalescer.js'

/** Key of the network-wide "this token state is spent" record; its Kademlia id places it. */
export const spentKey = (stateHash: string): string => `/rbt/spent/${stateHash}`
/** The record key's bytes, whose Kademlia id places the record. */
export const spentKeyBytes = (stateHash: string): Uint8Array => utf8(spentKey(stateHash))
/** Gossipsub topic on which quorums also spread their spent markers. */
export const SPENT_TOPIC = '/rbt/spent/1.0.0'

interface MarkerRecord extends SpentMarker { sig: string }
/**
 * As stored: `batch` when `sig` signs a whole transaction's batch (such records are not served one
 * by one); `pending` while a record another node sent is not verified yet (see `keepIncoming`).
 */
type StoredMarker = MarkerRecord & { stateHash: string, batch?: true, pending?: true }

/** Kademlia's k: a record lives on the k peers closest to its key, and a lookup ends when those answered. */
export const MARKER_REPLICAS = 20
/** How long a backup publisher waits for the first publisher's marker before storing its own. */
export const BACKUP_DELAY_MS = 3000
/** Requests of one record walk in flight at once. */
const WALK_CONCURRENCY = 8

/**
 * The record protocol (docs/protocol.md, "Spent-marker records"): a Kademlia store and lookup
 * whose requests travel over the rpc channel. Each answer names the 20 peers its sender knows
 * closest to the key, so a walk converges as on the DHT.
 */
export interface SpentMarkerMethods {
  'markers.get': UnarySpec<{ stateHash: string }, { record?: MarkerRecord, closer: QueryPeer[] }>
  'markers.put': UnarySpec<{ stateHash: string, record: MarkerRecord }, { closer: QueryPeer[] }>
  /** several `markers.get` at once: one answer per state, in order; `closer` names peers whose addresses are in `addrs` */
  'markers.getMany': UnarySpec<{ stateHashes: string[] }, { answers: Array<{ record?: MarkerRecord, closer: string[] }>, addrs: Record<string, string[]> }>
  /** several `markers.put` at once, answered like `markers.getMany` */
  'markers.putMany': UnarySpec<{ items: Array<{ stateHash: string, record: MarkerRecord }> }, { answers: Array<{ closer: string[] }>, addrs: Record<string, string[]> }>
}

/** Most states one `markers.getMany` or `markers.putMany` may name. */
export const MARKER_BATCH_MAX = 64
/**
 * Most states one gossiped batch may name: a larger one is dropped unread (before any store read
 * or signature check); a publisher with more states sends several batches. It was 100,000: one
 * message cost every node that many reads before its one signature was even checked.
 */
export const MARKER_BATCH_STATES_MAX = 4096

/** What a quorum signs for one state's marker. */
export const markerDigest = (stateHash: string, m: SpentMarker): string => sha3Hex(utf8(`${stateHash}|${m.txid}|${m.blockId}|${m.quorum}`))

function parse (bytes: Uint8Array): MarkerRecord | undefined {
  try {
    const r = JSON.parse(new TextDecoder().decode(bytes)) as MarkerRecord
    return typeof r.txid === 'string' && typeof r.blockId === 'string' && typeof r.quorum === 'string' && typeof r.sig === 'string' ? r : undefined
  } catch { return undefined }
}

const STATE_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/

/** What a quorum signs for a batch: every (state, new block) of one transaction, sorted by state hash. */
const batchDigest = (quorum: string, txid: string, items: ReadonlyArray<{ stateHash: string, blockId: string }>): string =>
  sha3Hex(utf8(`batch|${txid}|${quorum}|${items.map((it) => `${it.stateHash}:${it.blockId}`).join(',')}`))

interface BatchMessage { quorum: string, txid: string, items: Array<{ stateHash: string, blockId: string }>, sig: string }

function parseBatch (bytes: Uint8Array): BatchMessage | undefined {
  try {
    const m = (JSON.parse(new TextDecoder().decode(bytes)) as { batch?: BatchMessage }).batch
    if (m === undefined || typeof m.quorum !== 'string' || typeof m.txid !== 'string' || typeof m.sig !== 'string' || !Array.isArray(m.items) || m.items.length > MARKER_BATCH_STATES_MAX) return undefined
    if (!m.items.every((it) => typeof it?.stateHash === 'string' && STATE_RE.test(it.stateHash) && typeof it.blockId === 'string')) return undefined
    for (let i = 1; i < m.items.length; i++) if (!(m.items[i - 1]!.stateHash < m.items[i]!.stateHash)) return undefined
    return { quorum: m.quorum, txid: m.txid, sig: m.sig, items: m.items.map((it) => ({ stateHash: it.stateHash, blockId: it.blockId })) }
  } catch { return undefined }
}

export interface NodeSpentMarkers extends SpentMarkers {
  /** a marker received by gossip: kept like a stored record (`keepIncoming`); batches after their signature verifies */
  receive: (bytes: Uint8Array) => Promise<void>
  /** answers a peer's lookup: the record held here, and the known peers closest to the key (`asker` left out) */
  serveGet: (stateHash: string, asker?: string) => Promise<{ record?: MarkerRecord, closer: QueryPeer[] }>
  /** keeps a record a peer stores here (see `keepIncoming`); answers like `serveGet` */
  servePut: (stateHash: string, record: MarkerRecord, asker?: string) => Promise<{ closer: QueryPeer[] }>
  /** `serveGet` for several states; each peer's addresses once */
  serveGetMany: (stateHashes: string[], asker?: string) => Promise<SpentMarkerMethods['markers.getMany']['response']>
  /** `servePut` for several records; each peer's addresses once */
  servePutMany: (items: Array<{ stateHash: string, record: MarkerRecord }>, asker?: string) => Promise<SpentMarkerMethods['markers.putMany']['response']>
}

function isRecord (r: unknown): r is MarkerRecord {
  const m = r as MarkerRecord | undefined
  return typeof m === 'object' && m !== null && typeof m.txid === 'string' && m.txid.length <= 128 && typeof m.blockId === 'string' && m.blockId.length <= 256 &&
    typeof m.quorum === 'string' && m.quorum.length <= 128 && typeof m.sig === 'string' && m.sig.length <= 1024
}

function needState (stateHash: unknown): asserts stateHash is string {
  if (typeof stateHash !== 'string' || !STATE_RE.test(stateHash)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed spent-marker request: stateHash')
}

function needBatch (list: unknown, what: string): asserts list is unknown[] {
  if (!Array.isArray(list) || list.length === 0 || list.length > MARKER_BATCH_MAX) throw new RbtError(ErrorCode.INVALID_INPUT, `malformed spent-marker request: ${what} must list 1 to ${MARKER_BATCH_MAX} states`)
}

/** The rpc handlers of the record protocol. */
export function spentMarkerRpcHandlers (markers: () => NodeSpentMarkers | undefined): RpcHandlers<SpentMarkerMethods> {
  const svc = (): NodeSpentMarkers => {
    const m = markers()
    if (m === undefined) throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'spent markers are not served yet')
    return m
  }
  return {
    'markers.get': async (req, ctx) => { needState(req?.stateHash); return await svc().serveGet(req.stateHash, ctx.peerId) },
    'markers.put': async (req, ctx) => {
      needState(req?.stateHash)
      if (!isRecord(req.record)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed spent-marker request: record')
      return await svc().servePut(req.stateHash, req.record, ctx.peerId)
    },
    'markers.getMany': async (req, ctx) => {
      needBatch(req?.stateHashes, 'stateHashes')
      for (const h of req.stateHashes) needState(h)
      return await svc().serveGetMany(req.stateHashes, ctx.peerId)
    },
    'markers.putMany': async (req, ctx) => {
      needBatch(req?.items, 'items')
      for (const it of req.items) {
        needState(it?.stateHash)
        if (!isRecord(it.record)) throw new RbtError(ErrorCode.INVALID_INPUT, 'malformed spent-marker request: record')
      }
      return await svc().servePutMany(req.items, ctx.peerId)
    }
  }
}

/**
 * Spent markers signed by the quorum that publishes them and verified before use, so a forged
 * record cannot block a token. Kept locally (own commits, records other nodes stored here, gossip),
 * stored on the peers closest to their key (for nodes that were offline), and gossiped when that
 * store left a node out. `known` answers from the local set at once; `lookup` walks the network for
 * a bounded time.
 */
export function nodeSpentMarkers (opts: {
  host: () => P2pHost | undefined
  rpc: () => RpcClient<SpentMarkerMethods> | undefined
  verifier: SignatureVerifier
  signerFor: (did: string) => ConsensusSigner | undefined
  local: Collection<StoredMarker>
  dhtTimeoutMs?: number
  /** how long a backup publisher waits for the first publisher's marker (default BACKUP_DELAY_MS) */
  backupDelayMs?: number
  log: Logger
  /** two verified markers naming different transactions for one state: told both (double-spends.ts) */
  onConflict?: (stateHash: string, held: MarkerRecord & { batch?: true }, other: MarkerRecord & { batch?: true }) => void
}): NodeSpentMarkers {
  // A backup publisher waiting on a state: `txid|quorum` it waits for another publisher's marker of
  // (same transaction, another quorum); `seen` once such a marker arrived here and verified.
  const backups = new Map<string, { txid: string, quorum: string, seen: boolean }>()
  const noteArrival = async (stateHash: string, r: MarkerRecord): Promise<void> => {
    const b = backups.get(stateHash)
    if (b === undefined || b.seen || r.txid !== b.txid || r.quorum === b.quorum) return
    if (await verified(stateHash, r)) b.seen = true
  }
  const verified = async (stateHash: string, r: MarkerRecord): Promise<boolean> =>
    await opts.verifier.verify(r.quorum, markerDigest(stateHash, r), r.sig, 'quorum').catch(() => false)
  // one change at a time per state: two records arriving together must not both find the slot empty
  const locks = new KeyedMutex()
  const plain = (stateHash: string, r: MarkerRecord): StoredMarker => ({ txid: r.txid, blockId: r.blockId, quorum: r.quorum, sig: r.sig, stateHash })
  const lookupTimeoutMs = opts.dhtTimeoutMs ?? 2000
  const rpcNow = (): RpcClient<SpentMarkerMethods> => {
    const rpc = opts.rpc()
    if (rpc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'the rpc layer is stopped')
    return rpc
  }
  // The walks of one transaction's states start together and ask the same peers: what one walk
  // asks of a peer in the same turn as the others goes out in one request (protocol.md, "Spent-marker records").
  const gets = new RequestCoalescer<string, { record?: MarkerRecord, closer: QueryPeer[] }>({
    send: async (peer, stateHashes) => withAddresses(await rpcNow().call(peer, 'markers.getMany', { stateHashes }, { timeoutMs: lookupTimeoutMs })),
    sendOne: async (peer, stateHash) => await rpcNow().call(peer, 'markers.get', { stateHash }, { timeoutMs: lookupTimeoutMs }),
    maxBatch: MARKER_BATCH_MAX,
    fallback: notServed
  })
  const puts = new RequestCoalescer<{ stateHash: string, record: MarkerRecord }, { closer: QueryPeer[] }>({
    send: async (peer, items) => withAddresses(await rpcNow().call(peer, 'markers.putMany', { items }, { timeoutMs: 5000 })),
    sendOne: async (peer, item) => await rpcNow().call(peer, 'markers.put', item, { timeoutMs: 5000 }),
    maxBatch: MARKER_BATCH_MAX,
    fallback: notServed
  })
  /**
   * A record another node stored here or gossiped. The only claim for its state is kept without
   * verifying it: almost every state is never looked at again, and whoever uses a record verifies
   * it first (`known` here, the asker of a lookup). A second, different claim makes the first one
   * verify: the first claim that verifies stays, so a forged record sent ahead of the real one
   * cannot shadow it, and a verified record is never replaced.
   */
  const keepIncoming = async (stateHash: string, rec: MarkerRecord): Promise<void> => {
    await noteArrival(stateHash, rec)
    await locks.run(stateHash, async () => {
      const held = await opts.local.get(stateHash)
      if (held === undefined) { await opts.local.put(stateHash, { ...plain(stateHash, rec), pending: true }); return }
      if (held.sig === rec.sig && held.txid === rec.txid && held.blockId === rec.blockId && held.quorum === rec.quorum) return
      const kept = await settle(stateHash, held)
      if (kept !== undefined) { await conflict(stateHash, kept, rec); return }
      if (await verified(stateHash, rec)) await opts.local.put(stateHash, plain(stateHash, rec))
    })
  }
  /** A verified marker held, and another for another transaction: when that one verifies too, both are told. */
  const conflict = async (stateHash: string, held: StoredMarker, rec: MarkerRecord): Promise<void> => {
    if (opts.onConflict === undefined || held.txid === rec.txid || !await verified(stateHash, rec)) return
    const { stateHash: _h, pending: _p, ...kept } = held
    opts.onConflict(stateHash, kept, { txid: rec.txid, blockId: rec.blockId, quorum: rec.quorum, sig: rec.sig })
  }
  /** Verifies a pending record (under the state's lock): kept as verified, or dropped. */
  const settle = async (stateHash: string, held: StoredMarker): Promise<StoredMarker | undefined> => {
    if (held.pending !== true) return held
    if (await verified(stateHash, held)) { await opts.local.put(stateHash, plain(stateHash, held)); return held }
    await opts.local.del(stateHash)
    return undefined
  }
  /** A marker read from the local set: a pending one is verified first (kept or dropped). */
  const answer = async (stateHash: string, read: StoredMarker | undefined): Promise<SpentMarker | undefined> => {
    let mine = read
    if (mine?.pending === true) {
      mine = await locks.run(stateHash, async () => {
        const held = await opts.local.get(stateHash)
        return held === undefined ? undefined : await settle(stateHash, held)
      })
    }
    return mine === undefined ? undefined : { txid: mine.txid, blockId: mine.blockId, quorum: mine.quorum }
  }
  return {
    known: async (stateHash) => await answer(stateHash, await opts.local.get(stateHash)),
    knownMany: async (stateHashes) => {
      const read = stateHashes.length === 0 ? [] : await opts.local.getMany([...stateHashes])
      return await Promise.all(stateHashes.map(async (h, i) => await answer(h, read[i])))
    },
    lookup: async (stateHash) => {
      const h = opts.host()
      const rpc = opts.rpc()
      if (h === undefined || rpc === undefined) return undefined
      const key = spentKeyBytes(stateHash)
      const res = await walk(h, key, {
        ask: async (peer, signal) => await raceAbort(gets.request(peer.peerId, stateHash), signal),
        accept: async (rec) => isRecord(rec) && await verified(stateHash, rec),
        timeoutMs: lookupTimeoutMs
      })
      const rec = res.values[0]?.value
      if (rec === undefined) return undefined
      await opts.local.put(stateHash, plain(stateHash, rec))
      return { txid: rec.txid, blockId: rec.blockId, quorum: rec.quorum }
    },
    publish: async (stateHash, m, o) => {
      const signer = opts.signerFor(m.quorum)
      if (signer === undefined) return
      // A backup signs only once it is to store its own marker: almost always the first
      // publisher's arrives during the wait, and this quorum's own records already hold the state.
      if (o?.backup === true) {
        const held = await opts.local.get(stateHash)
        const b = {
          txid: m.txid,
          quorum: m.quorum,
          seen: held !== undefined && held.batch !== true && held.txid === m.txid && held.quorum !== m.quorum && (held.pending !== true || await verified(stateHash, held))
        }
        if (b.seen) return
        backups.set(stateHash, b)
        try {
          await new Promise((resolve) => { setTimeout(resolve, opts.backupDelayMs ?? BACKUP_DELAY_MS).unref?.() })
        } finally {
          if (backups.get(stateHash) === b) backups.delete(stateHash)
        }
        if (b.seen) return
      }
      const rec: MarkerRecord = { ...m, sig: await signer.pvtSign(markerDigest(stateHash, m)) }
      await opts.local.put(stateHash, { ...rec, stateHash })
      const h = opts.host()
      if (h === undefined) return
      const gossip = (): void => { h.publish(SPENT_TOPIC, utf8(JSON.stringify({ stateHash, ...rec }))).catch(() => {}) }
      const rpc = opts.rpc()
      if (rpc === undefined) { gossip(); return }
      const key = spentKeyBytes(stateHash)
      const res = await walk(h, key, {
        ask: async (peer, signal) => await raceAbort(puts.request(peer.peerId, { stateHash, record: rec }), signal),
        timeoutMs: 15_000
      })
      // Gossip reaches every subscriber, the record only the closest peers: in a network whose
      // every known node stored the record, the gossip would tell no one anything new.
      const stored = new Set(res.answered)
      const left = [...h.closestKnownPeers(key, 4 * MARKER_REPLICAS), ...h.topicPeers(SPENT_TOPIC), ...res.failed, ...res.unasked].filter((p) => !stored.has(p))
      if (left.length > 0) gossip()
    },
    publishBatch: async (quorum, txid, items) => {
      const signer = opts.signerFor(quorum)
      if (signer === undefined || items.length === 0) return
      const all = [...items].sort((a, b) => a.stateHash < b.stateHash ? -1 : a.stateHash > b.stateHash ? 1 : 0)
      for (let at = 0; at < all.length; at += MARKER_BATCH_STATES_MAX) {
        const sorted = all.slice(at, at + MARKER_BATCH_STATES_MAX)
        const sig = await signer.pvtSign(batchDigest(quorum, txid, sorted))
        await Promise.all(sorted.map(async (it) => { await opts.local.put(it.stateHash, { txid, blockId: it.blockId, quorum, sig, stateHash: it.stateHash, batch: true }) }))
        const h = opts.host()
        if (h === undefined) continue
        await h.publish(SPENT_TOPIC, utf8(JSON.stringify({ batch: { quorum, txid, items: sorted, sig } }))).catch(() => {})
      }
    },
    receive: async (bytes) => {
      const b = parseBatch(bytes)
      if (b !== undefined) {
        const have = await opts.local.getMany(b.items.map((it) => it.stateHash))
        const fresh = b.items.filter((_it, i) => have[i] === undefined)
        // states a verified marker of another transaction holds already: both are told once the batch verifies
        const clash = opts.onConflict === undefined ? [] : b.items.flatMap((it, i) => { const h = have[i]; return h !== undefined && h.pending !== true && h.txid !== b.txid ? [[it, h] as const] : [] })
        if (fresh.length === 0 && clash.length === 0) return
        if (!await opts.verifier.verify(b.quorum, batchDigest(b.quorum, b.txid, b.items), b.sig, 'quorum').catch(() => false)) return
        await Promise.all(fresh.map(async (it) => { await opts.local.put(it.stateHash, { txid: b.txid, blockId: it.blockId, quorum: b.quorum, sig: b.sig, stateHash: it.stateHash, batch: true }) }))
        for (const [it, h] of clash) {
          const { stateHash: _h, pending: _p, ...kept } = h
          opts.onConflict?.(it.stateHash, kept, { txid: b.txid, blockId: it.blockId, quorum: b.quorum, sig: b.sig, batch: true })
        }
        return
      }
      const r = parse(bytes) as (MarkerRecord & { stateHash?: unknown }) | undefined
      if (r === undefined || typeof r.stateHash !== 'string' || !/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/.test(r.stateHash)) return
      await keepIncoming(r.stateHash, r)
    },
    serveGet: async (stateHash, asker) => {
      const record = served(await opts.local.get(stateHash))
      const closer = await closerPeers(opts.host(), spentKeyBytes(stateHash), asker)
      return record === undefined ? { closer } : { record, closer }
    },
    servePut: async (stateHash, rec, asker) => {
      const closer = await closerPeers(opts.host(), spentKeyBytes(stateHash), asker)
      await keepIncoming(stateHash, rec)
      return { closer }
    },
    serveGetMany: async (stateHashes, asker) => {
      const held = await opts.local.getMany(stateHashes)
      const closer = await closerPeerSets(opts.host(), stateHashes, asker)
      return {
        answers: stateHashes.map((_h, i) => {
          const record = served(held[i])
          return record === undefined ? { closer: closer.ids[i]! } : { record, closer: closer.ids[i]! }
        }),
        addrs: closer.addrs
      }
    },
    servePutMany: async (items, asker) => {
      const closer = await closerPeerSets(opts.host(), items.map((it) => it.stateHash), asker)
      await Promise.all(items.map(async (it) => { await keepIncoming(it.stateHash, it.record) }))
      return { answers: closer.ids.map((ids) => ({ closer: ids })), addrs: closer.addrs }
    }
  }
}

/** Whether a failed batch request means the peer does not serve batches (a node from before them). */
const notServed = (e: unknown): boolean => (e as { code?: unknown }).code === ErrorCode.PROTOCOL

/** A batch answer as single answers: each `closer` id with the addresses the answer gave for it. */
export function withAddresses<A extends { closer: string[] }> (res: { answers: A[], addrs: Record<string, string[]> }): Array<Omit<A, 'closer'> & { closer: QueryPeer[] }> {
  if (typeof res !== 'object' || res === null || !Array.isArray(res.answers)) throw new RbtError(ErrorCode.PROTOCOL, 'malformed spent-marker batch answer')
  const addrs = typeof res.addrs === 'object' && res.addrs !== null ? res.addrs : {}
  return res.answers.map((a) => {
    const ids = Array.isArray(a?.closer) ? a.closer.filter((id): id is string => typeof id === 'string') : []
    const closer = ids.map((peerId) => ({ peerId, multiaddrs: Object.hasOwn(addrs, peerId) && Array.isArray(addrs[peerId]) ? addrs[peerId]! : [] }))
    return { ...a, closer }
  })
}

/**
 * The k peers this node knows closest to `key`, with their addresses, the asker left out (it knows
 * itself). As Kademlia's FIND_NODE answers: peers farther than this node count too, or a walk
 * could miss one of the k closest that only farther nodes know.
 */
async function closerPeers (h: P2pHost | undefined, key: Uint8Array, asker?: string): Promise<QueryPeer[]> {
  if (h === undefined) return []
  return await Promise.all(closestIds(h, key, asker).map(async (peerId) => ({ peerId, multiaddrs: await h.peerAddresses(peerId) })))
}

/** The ids of the k peers this node knows closest to `key`, the asker left out. */
const closestIds = (h: P2pHost, key: Uint8Array, asker?: string): string[] =>
  h.closestKnownPeers(key, MARKER_REPLICAS + 1).filter((p) => p !== asker).slice(0, MARKER_REPLICAS)

/** What is served of a stored marker: nothing for one known only from a batch (its signature covers the whole batch). */
function served (mine: StoredMarker | undefined): MarkerRecord | undefined {
  return mine === undefined || mine.batch === true ? undefined : { txid: mine.txid, blockId: mine.blockId, quorum: mine.quorum, sig: mine.sig }
}

/** `closerPeers` for several keys: the ids per key, and each peer's addresses once. */
export async function closerPeerSets (h: P2pHost | undefined, stateHashes: string[], asker?: string): Promise<{ ids: string[][], addrs: Record<string, string[]> }> {
  if (h === undefined) return { ids: stateHashes.map(() => []), addrs: {} }
  const ids = stateHashes.map((s) => closestIds(h, spentKeyBytes(s), asker))
  const peers = [...new Set(ids.flat())]
  const addrs: Record<string, string[]> = {}
  await Promise.all(peers.map(async (p) => { addrs[p] = await h.peerAddresses(p) }))
  return { ids, addrs }
}

/** A record walk from this node's closest known peers; peers learned on the way are dialled by the addresses given. */
async function walk<T> (h: P2pHost, key: Uint8Array, o: {
  ask: (peer: QueryPeer, signal: AbortSignal) => Promise<{ record?: T, closer: QueryPeer[] }>
  accept?: (value: T) => Promise<boolean>
  timeoutMs: number
}): Promise<{ values: Array<{ value: T }>, answered: string[], failed: string[], unasked: string[] }> {
  return await closestQuery<T>({
    target: kadKey(key),
    start: h.closestKnownPeers(key, MARKER_REPLICAS).map((peerId) => ({ peerId, multiaddrs: [] })),
    self: h.peerId,
    k: MARKER_REPLICAS,
    concurrency: WALK_CONCURRENCY,
    signal: AbortSignal.timeout(o.timeoutMs),
    ...(o.accept !== undefined ? { accept: o.accept } : {}),
    ask: async (peer, signal) => {
      await h.learnPeer(peer)
      const res = await o.ask(peer, signal)
      return { ...(res.record !== undefined ? { value: res.record } : {}), closer: Array.isArray(res.closer) ? res.closer.filter(isQueryPeer) : [] }
    }
  })
}

const isQueryPeer = (p: unknown): p is QueryPeer => {
  const q = p as QueryPeer | undefined
  return typeof q === 'object' && q !== null && typeof q.peerId === 'string' && q.peerId.length <= 128 && Array.isArray(q.multiaddrs) && q.multiaddrs.every((a) => typeof a === 'string' && a.length <= 512)
}
