/**
 * What the host does with a peer that LAN discovery (mDNS) reports: dial it unless it is connected
 * already, a dial to it is running, or an earlier dial failed recently. A peer of another private
 * network answers mDNS like any other but fails the pnet handshake; such a peer is retried with a
 * growing pause and logged once, so a busy LAN costs neither connections nor log lines.
 */
import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'

export interface DiscoveredPeer {
  peerId: string
  multiaddrs: string[]
}

export interface DiscoveryDialerDeps {
  /** our own peer id (a discovery service may report it) */
  self: string
  isConnected: (peerId: string) => boolean
  /** Connects to the peer at one of its addresses under its own deadline; rejects when no connection comes up. */
  dial: (peer: DiscoveredPeer, signal: AbortSignal) => Promise<void>
  log: Logger
  /** pause after the first failed dial, doubled per further failure (default 15 s) */
  retryBaseMs?: number
  /** longest pause between dials of a failing peer (default 5 min) */
  retryMaxMs?: number
  now?: () => number
}

interface PeerState {
  failures: number
  /** no dial before this time */
  notBefore: number
  /** a failure was logged at info level already */
  reported: boolean
}

/** Peers remembered at most; past it the table starts afresh (a LAN does not have that many). */
const MAX_TRACKED = 1024

export class DiscoveryDialer {
  private readonly peers = new Map<string, PeerState>()
  private readonly dialling = new Set<string>()
  /** answers that came before start (the first query goes out while the host is still starting) */
  private readonly early = new Map<string, DiscoveredPeer>()
  private stopped = false
  private abort: AbortController | undefined
  private readonly now: () => number

  constructor (private readonly deps: DiscoveryDialerDeps) {
    this.now = deps.now ?? Date.now
  }

  /** Starts dialling, beginning with the peers that answered before. */
  start (): void {
    this.stopped = false
    this.abort ??= new AbortController()
    const early = [...this.early.values()]
    this.early.clear()
    for (const p of early) this.onPeer(p)?.catch(() => {})
  }

  stop (): void {
    this.stopped = true
    this.abort?.abort()
    this.abort = undefined
    this.dialling.clear()
    this.early.clear()
  }

  /** Dials still running (tests). */
  get pending (): number { return this.dialling.size }

  /** Called for every discovery answer; returns the dial when one was started (tests await it). */
  onPeer (peer: DiscoveredPeer): Promise<void> | undefined {
    const abort = this.abort
    const id = peer.peerId
    if (id === this.deps.self || peer.multiaddrs.length === 0) return undefined
    if (abort === undefined) {
      if (!this.stopped && this.early.size < 64) this.early.set(id, peer)
      return undefined
    }
    if (this.dialling.has(id) || this.deps.isConnected(id)) return undefined
    let state = this.peers.get(id)
    const now = this.now()
    if (state !== undefined && now < state.notBefore) return undefined
    if (state === undefined) {
      if (this.peers.size >= MAX_TRACKED) this.peers.clear()
      state = { failures: 0, notBefore: 0, reported: false }
      this.peers.set(id, state)
      this.deps.log.debug(`found ${id} at ${peer.multiaddrs.join(', ')}`)
    }
    const s = state
    this.dialling.add(id)
    return this.deps.dial(peer, abort.signal).then(() => {
      if (s.failures > 0 || !s.reported) this.deps.log.info(`connected to ${id}, found on the local network`)
      s.failures = 0
      s.notBefore = 0
      s.reported = true
    }, (e: unknown) => {
      if (abort.signal.aborted) return
      s.failures++
      const base = this.deps.retryBaseMs ?? 15_000
      const max = this.deps.retryMaxMs ?? 300_000
      s.notBefore = this.now() + Math.min(max, base * 2 ** Math.min(s.failures - 1, 20))
      const line = `not connected to ${id}, found on the local network: ${errorMessage(e)} (another network or swarm key?)`
      if (s.reported && s.failures > 1) this.deps.log.debug(line)
      else { this.deps.log.info(line); s.reported = true }
    }).finally(() => { this.dialling.delete(id) })
  }
}
