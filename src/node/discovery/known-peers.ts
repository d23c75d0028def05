import type { Collection } from '../../storage/kv-store.js'
import { errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'

/** What KnownPeers needs of the p2p host. */
export interface KnownPeersHost {
  peerAddresses: (peerId: string) => Promise<string[]>
  learnPeer: (peer: { peerId: string, multiaddrs: string[] }) => Promise<void>
  onPeerConnect: (listener: (peerId: string) => void) => () => void
}

export interface KnownPeer { addrs: string[], seen: number }

export interface KnownPeersOptions {
  /** peers kept, the most recently connected (default 256) */
  max?: number
  /** after a connection, how long before its addresses are read (identify tells them; default 1 s) */
  readDelayMs?: number
  now?: () => number
}

/**
 * The addresses of the peers this node was connected to, kept in its store across restarts. libp2p's
 * peer store lives in memory: after a restart a node knew only its bootstrap peers, and when every
 * node of a network restarted at once (a power cut) one that came up before its bootstrap peer knew
 * no address at all, so its transfers failed with "no known address" for their quorums until
 * something taught it. At start the kept addresses are handed back to the peer store (nothing is
 * dialled: the rpc layer dials a peer by its id when it needs it); each new connection's
 * addresses, once identify has told them, are written back (one record per peer).
 */
export class KnownPeers {
  private readonly max: number
  private readonly readDelayMs: number
  private readonly now: () => number
  private off?: () => void
  private readonly timers = new Set<NodeJS.Timeout>()
  private count = 0

  constructor (private readonly collection: Collection<KnownPeer>, private readonly log: Logger, opts: KnownPeersOptions = {}) {
    this.max = opts.max ?? 256
    this.readDelayMs = opts.readDelayMs ?? 1000
    this.now = opts.now ?? Date.now
  }

  /** Hands the kept addresses to the host and starts keeping those of new connections; returns how many peers it knew. */
  async start (host: KnownPeersHost): Promise<number> {
    this.off = host.onPeerConnect((peerId) => { this.noteConnected(host, peerId) })
    let n = 0
    for await (const [peerId, p] of this.collection.entries()) {
      n++
      if (p.addrs.length > 0) await host.learnPeer({ peerId, multiaddrs: p.addrs }).catch(() => {})
    }
    this.count = n
    return n
  }

  stop (): void {
    this.off?.()
    this.off = undefined
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
  }

  /** Reads the peer's addresses after the delay; none yet (identify not done), again after twice the wait, five times at most. */
  private noteConnected (host: KnownPeersHost, peerId: string, attempt = 0): void {
    const t = setTimeout(() => {
      this.timers.delete(t)
      this.keep(host, peerId)
        .then((kept) => { if (!kept && attempt < 4 && this.off !== undefined) this.noteConnected(host, peerId, attempt + 1) })
        .catch((e) => { this.log.debug(`known peers: ${peerId}: ${errorMessage(e)}`) })
    }, this.readDelayMs * 2 ** attempt)
    t.unref()
    this.timers.add(t)
  }

  /** Whether the peer's addresses were known (and are kept now). */
  private async keep (host: KnownPeersHost, peerId: string): Promise<boolean> {
    const addrs = (await host.peerAddresses(peerId)).slice(0, 16)
    if (addrs.length === 0) return false
    const had = await this.collection.get(peerId)
    // the same addresses seen again within the hour: no write
    if (had !== undefined && sameSet(had.addrs, addrs) && this.now() - had.seen < 3_600_000) return true
    await this.collection.put(peerId, { addrs, seen: this.now() })
    if (had === undefined && ++this.count > this.max) await this.trim()
    return true
  }

  /** Drops the least recently seen peers past the bound. */
  private async trim (): Promise<void> {
    const all: Array<[string, number]> = []
    for await (const [id, p] of this.collection.entries()) all.push([id, p.seen])
    all.sort((a, b) => a[1] - b[1])
    for (const [id] of all.slice(0, Math.max(0, all.length - this.max))) await this.collection.del(id)
    this.count = Math.min(all.length, this.max)
  }
}

function sameSet (a: string[], b: string[]): boolean {
  if (a.length !== b.length) return false
  const s = new Set(a)
  return b.every((x) => s.has(x))
}
