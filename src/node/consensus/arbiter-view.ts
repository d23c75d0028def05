import type { Collection } from '../../storage/kv-store.js'
import { errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { compareDistance, kadPeerKey, type QueryPeer } from '../../p2p/closest-query.js'

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

