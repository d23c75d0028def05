/**
 * Bitswap as Kubo speaks it (`/ipfs/bitswap/1.2.0`, and 1.1.0, 1.0.0 and `/ipfs/bitswap` for
 * older peers), over the node's blockstore (docs/decisions/0025-bitswap.md).
 *
 * Each side sends on a stream of its own: a peer's wants arrive on its stream to us, and the
 * blocks and presences we answer go out on one long-lived stream of ours to it, as boxo does.
 *
 * Serving: every peer has a ledger of what it wants. A want-block of a block held is answered with
 * the block, a want-have with HAVE; a block not held with DONT_HAVE when the peer asked for it,
 * and the want stays in the ledger, so the block goes out when it arrives later.
 *
 * Fetching (`get`): a block not held is asked of the peer that last delivered one (want-block,
 * send-dont-have), or of every candidate peer when none has yet; a DONT_HAVE moves the want to the
 * others, a HAVE from a peer while nobody is asked asks it, and wants without progress are asked
 * again of every candidate each REBROADCAST_MS. A block is taken only when it hashes to a CID we
 * want (the CID is rebuilt from the payload's prefix and its bytes) and is stored before it is
 * handed out; the peers still asked then get a cancel.
 */
import type { Stream } from '@libp2p/interface'
import { lpStream } from '@libp2p/utils'
import type { CID } from 'multiformats/cid'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import { silentLogger, type Logger } from '../../util/logger.js'
import { deadline, onAbort } from '../deadline.js'
import {
  PRESENCE_DONT_HAVE, PRESENCE_HAVE, WANT_BLOCK, WANT_HAVE, decodeMessage, parseCidPrefix,
  type BitswapMessage, type BlockPresence, type WantEntry
} from './bitswap-message.js'
import { DAG_PB, SHA2_256, cidFor, type FsBlockstore } from './blockstore.js'
import { BITSWAP_PROTOCOLS, MAX_MESSAGE_BYTES, PeerSender, keyOf, type BitswapHost, type BitswapStats } from './bitswap-sender.js'

export {
  BITSWAP_120, BITSWAP_110, BITSWAP_100, BITSWAP_LEGACY, BITSWAP_PROTOCOLS, MAX_MESSAGE_BYTES, TARGET_MESSAGE_BYTES,
  type BitswapHost, type BitswapStats
} from './bitswap-sender.js'

/** Wants without an answer are asked again of every candidate peer after this long. */
export const REBROADCAST_MS = 1500
const DEFAULT_GET_TIMEOUT_MS = 60_000
/** Blocks received and being written at once. */
const MAX_WRITES = 16
/** Wants a peer may have with us at once (boxo queues at most 1,024 a peer); more are ignored. */
export const MAX_LEDGER_ENTRIES = 8192

export interface BitswapOptions {
  logger?: Logger
  /**
   * Asked when a peer wants a block the store lacks: it may put the block in (a DID folder the
   * node holds elsewhere, say) and answer true, and the want is answered again from the store.
   */
  onMiss?: (cid: CID) => Promise<boolean>
  /**
   * Where to look for peers holding a block no candidate gave within REBROADCAST_MS (Kubo's
   * provider records; `host.kubo` has it): the providers found are dialled and asked.
   */
  routing?: { findProviders: (cid: CID, opts: { timeoutMs: number, limit?: number, signal?: AbortSignal }) => Promise<Array<{ peerId: string, multiaddrs: string[] }>> }
}

/** A want without progress looks for providers at most this often. */
export const PROVIDER_SEARCH_MS = 5000

export interface GetOptions {
  signal?: AbortSignal
  /** default 60 s */
  timeoutMs?: number
  /** ask only these peers (default: every connected peer) */
  peers?: string[]
}

interface PeerWant { cid: CID, wantType: number, sendDontHave: boolean }

interface Waiter { resolve: (b: Uint8Array) => void, reject: (e: unknown) => void }

interface Want {
  cid: CID
  waiters: Set<Waiter>
  /** peers only asked for the block (the candidates), when the caller named them */
  peers?: string[]
  /** peers asked for the block and not yet answered DONT_HAVE */
  asked: Set<string>
  dontHave: Set<string>
  priority: number
  lastAsk: number
  /** the block came and is being written */
  landing?: boolean
  /** when providers were last looked for */
  lastSearch?: number
}

export class Bitswap {
  readonly log: Logger
  readonly stats: BitswapStats = { blocksReceived: 0, duplicateBlocks: 0, blocksSent: 0, bytesSent: 0, bytesReceived: 0 }
  private readonly ledgers = new Map<string, Map<string, PeerWant>>()
  private readonly senders = new Map<string, PeerSender>()
  private readonly wants = new Map<string, Want>()
  /** peers that delivered blocks, most recent last */
  private readonly good: string[] = []
  private readonly inbound = new Set<Stream>()
  private readonly writes = new Set<Promise<void>>()
  private readonly controller = new AbortController()
  private readonly unlisten: Array<() => void> = []
  private timer?: NodeJS.Timeout
  private priority = 2 ** 31 - 1
  private started = false

  private readonly onMiss?: (cid: CID) => Promise<boolean>
  private readonly routing?: BitswapOptions['routing']

  constructor (readonly host: BitswapHost, readonly store: FsBlockstore, opts: BitswapOptions = {}) {
    this.log = opts.logger ?? silentLogger
    if (opts.onMiss !== undefined) this.onMiss = opts.onMiss
    if (opts.routing !== undefined) this.routing = opts.routing
  }

  /** Whether the store holds `cid`, after asking onMiss to put it in when it does not. */
  private async holds (cid: CID): Promise<boolean> {
    if (await this.store.has(cid)) return true
    if (this.onMiss === undefined) return false
    try {
      return await this.onMiss(cid) && await this.store.has(cid)
    } catch (e) {
      this.log.debug(`bitswap: could not provide ${cid.toString()}: ${errorMessage(e)}`)
      return false
    }
  }

  get signal (): AbortSignal { return this.controller.signal }

  async start (): Promise<void> {
    if (this.started) return
    this.started = true
    for (const p of BITSWAP_PROTOCOLS) {
      await this.host.handleProtocol(p, (stream, conn) => { this.readStream(stream, conn.remotePeer.toString()) }, { maxInboundStreams: 64, maxOutboundStreams: 64 })
    }
    this.unlisten.push(this.store.onPut((cid) => { this.onNewBlock(cid) }))
    this.unlisten.push(this.host.onPeerConnect((p) => { this.onConnect(p) }))
    this.unlisten.push(this.host.onPeerDisconnect((p) => { this.onDisconnect(p) }))
    this.timer = setInterval(() => { this.rebroadcast() }, REBROADCAST_MS / 3)
    this.timer.unref()
  }

  async stop (): Promise<void> {
    if (!this.started) return
    this.started = false
    clearInterval(this.timer)
    this.controller.abort(new RbtError(ErrorCode.NOT_RUNNING, 'bitswap stopped'))
    for (const u of this.unlisten.splice(0)) u()
    for (const p of BITSWAP_PROTOCOLS) await this.host.unhandleProtocol(p).catch(() => {})
    for (const s of this.senders.values()) s.close()
    this.senders.clear()
    for (const s of this.inbound) if (s.status === 'open') s.abort(new Error('bitswap stopped'))
    this.inbound.clear()
    const stopped = new RbtError(ErrorCode.NOT_RUNNING, 'bitswap stopped')
    for (const w of this.wants.values()) for (const x of w.waiters) x.reject(stopped)
    this.wants.clear()
    this.ledgers.clear()
  }

  // -------------------------------------------------------------------------------------------
  // receiving

  private readStream (stream: Stream, peer: string): void {
    this.inbound.add(stream)
    const lp = lpStream(stream, { maxDataLength: MAX_MESSAGE_BYTES })
    void (async () => {
      try {
        for (;;) {
          const buf = await lp.read({ signal: this.signal })
          const msg = decodeMessage(buf.subarray())
          await this.receive(peer, msg)
        }
      } catch (e) {
        if (!this.signal.aborted && !isEnd(e)) this.log.debug(`bitswap from ${peer}: ${errorMessage(e)}`)
        if (stream.status === 'open') {
          if (isEnd(e)) stream.close().catch(() => {})
          else stream.abort(e instanceof Error ? e : new Error(String(e)))
        }
      } finally {
        this.inbound.delete(stream)
      }
    })()
  }

  /** Handles one message from `peer` (exported for tests through the class). */
  async receive (peer: string, msg: BitswapMessage): Promise<void> {
    for (const p of msg.payload) {
      let cid: CID
      try {
        const pre = parseCidPrefix(p.prefix)
        cid = cidFor(pre.version === 0 ? 0 : 1, pre.codec, pre.hashCode, p.data)
        if (cid.multihash.size !== pre.digestLength) continue
      } catch {
        continue
      }
      await this.track(this.receiveBlock(peer, cid, p.data))
    }
    for (const b of msg.blocks) await this.track(this.receiveBlock(peer, cidFor(0, DAG_PB, SHA2_256, b), b))
    for (const pr of msg.blockPresences) this.receivePresence(peer, pr)
    if (msg.wantlist.entries.length > 0 || msg.wantlist.full) await this.receiveWants(peer, msg.wantlist.entries, msg.wantlist.full)
  }

  /**
   * Blocks received are written while the next messages are read, at most MAX_WRITES at once:
   * past that the reading waits for one to finish.
   */
  private async track (p: Promise<void>): Promise<void> {
    const w = this.writes
    w.add(p)
    void p.finally(() => { w.delete(p) })
    if (w.size >= MAX_WRITES) await Promise.race(w)
  }

  private async receiveBlock (peer: string, cid: CID, data: Uint8Array): Promise<void> {
    this.stats.bytesReceived += data.length
    const k = keyOf(cid)
    const w = this.wants.get(k)
    if (w === undefined || w.landing === true) { this.stats.duplicateBlocks++; return }
    this.stats.blocksReceived++
    this.markGood(peer)
    // kept while it is written (a get of it meanwhile waits for it); another copy is a duplicate
    w.landing = true
    for (const p of w.asked) if (p !== peer) this.cancel(p, w.cid)
    try {
      // `cid` was made from these bytes: they are what `w.cid` names
      await this.store.put(cid, data, { verified: true })
    } catch (e) {
      for (const x of w.waiters) x.reject(e)
      return
    } finally {
      if (this.wants.get(k) === w) this.wants.delete(k)
    }
    for (const x of w.waiters) x.resolve(data)
  }

  private receivePresence (peer: string, pr: BlockPresence): void {
    const w = this.wants.get(keyOf(pr.cid))
    if (w === undefined || w.landing === true) return
    if (pr.type === PRESENCE_DONT_HAVE) {
      w.dontHave.add(peer)
      w.asked.delete(peer)
      if (w.asked.size === 0) this.ask(w, this.candidates(w).filter((p) => !w.dontHave.has(p)))
    } else if (w.asked.size === 0 && (w.peers === undefined || w.peers.includes(peer))) {
      this.ask(w, [peer])
    }
  }

  private async receiveWants (peer: string, entries: WantEntry[], full: boolean): Promise<void> {
    let ledger = this.ledgers.get(peer)
    if (ledger === undefined || full) {
      ledger = new Map()
      this.ledgers.set(peer, ledger)
    }
    const sender = this.sender(peer)
    for (const e of entries) {
      const k = keyOf(e.cid)
      if (e.cancel) { ledger.delete(k); continue }
      // a want-have does not lower a want-block already held
      const prev = ledger.get(k)
      if (prev === undefined && ledger.size >= MAX_LEDGER_ENTRIES) continue
      if (prev === undefined || prev.wantType !== WANT_BLOCK) ledger.set(k, { cid: e.cid, wantType: e.wantType, sendDontHave: e.sendDontHave })
      if (await this.holds(e.cid)) {
        if (ledger.get(k)?.wantType === WANT_BLOCK) sender.block(e.cid)
        else { sender.presence({ cid: e.cid, type: PRESENCE_HAVE }); ledger.delete(k) }
      } else if (e.sendDontHave) {
        sender.presence({ cid: e.cid, type: PRESENCE_DONT_HAVE })
      }
    }
  }

  /** Whether `peer` still wants `cid` (of at least this kind). */
  peerWants (peer: string, cid: CID, type: number): boolean {
    const w = this.ledgers.get(peer)?.get(keyOf(cid))
    return w !== undefined && (type === WANT_HAVE || w.wantType === WANT_BLOCK)
  }

  /** A block went out to `peer`: its want is met. */
  served (peer: string, cid: CID): void {
    this.ledgers.get(peer)?.delete(keyOf(cid))
  }

  private onNewBlock (cid: CID): void {
    const k = keyOf(cid)
    for (const [peer, ledger] of this.ledgers) {
      const w = ledger.get(k)
      if (w === undefined) continue
      if (w.wantType === WANT_BLOCK) this.sender(peer).block(cid)
      else { this.sender(peer).presence({ cid, type: PRESENCE_HAVE }); ledger.delete(k) }
    }
  }

  private sender (peer: string): PeerSender {
    let s = this.senders.get(peer)
    if (s === undefined || s.closed) {
      s = new PeerSender(this, peer)
      this.senders.set(peer, s)
    }
    return s
  }

  private onConnect (peer: string): void {
    // a new peer hears what we are waiting for (as a want-have, so it costs a block nobody)
    for (const w of this.wants.values()) {
      if (w.peers !== undefined && !w.peers.includes(peer)) continue
      this.sender(peer).want({ cid: w.cid, priority: w.priority, cancel: false, wantType: WANT_HAVE, sendDontHave: false })
    }
  }

  private onDisconnect (peer: string): void {
    this.ledgers.delete(peer)
    this.senders.get(peer)?.close()
    this.senders.delete(peer)
    const i = this.good.indexOf(peer)
    if (i >= 0) this.good.splice(i, 1)
    for (const w of this.wants.values()) {
      if (w.asked.delete(peer) && w.asked.size === 0) this.ask(w, this.candidates(w).filter((p) => p !== peer && !w.dontHave.has(p)))
    }
  }

  // -------------------------------------------------------------------------------------------
  // fetching

  /** The block of `cid`: from the store, or fetched from peers, checked and stored. */
  async get (cidIn: CID, opts: GetOptions = {}): Promise<Uint8Array> {
    const held = await this.store.get(cidIn)
    if (held !== undefined) return held
    if (!this.started) throw new RbtError(ErrorCode.NOT_RUNNING, 'bitswap is not running')
    const timeoutMs = opts.timeoutMs ?? DEFAULT_GET_TIMEOUT_MS
    const d = deadline(timeoutMs, opts.signal)
    const k = keyOf(cidIn)
    let w = this.wants.get(k)
    const fresh = w === undefined
    if (w === undefined) {
      w = { cid: cidIn, waiters: new Set(), asked: new Set(), dontHave: new Set(), priority: this.priority--, lastAsk: 0, ...(opts.peers !== undefined ? { peers: opts.peers } : {}) }
      if (this.priority < 1) this.priority = 2 ** 31 - 1
      this.wants.set(k, w)
    }
    const want = w
    try {
      return await new Promise<Uint8Array>((resolve, reject) => {
        const waiter: Waiter = { resolve, reject }
        want.waiters.add(waiter)
        const unlink = onAbort(d.signal, () => {
          want.waiters.delete(waiter)
          if (want.waiters.size === 0 && this.wants.get(k) === want) {
            this.wants.delete(k)
            for (const p of want.asked) this.cancel(p, want.cid)
          }
          reject(d.timedOut()
            ? new RbtError(ErrorCode.TIMEOUT, `no peer gave block ${cidIn.toString()} within ${timeoutMs} ms`)
            : d.signal.reason)
        })
        waiter.resolve = (b) => { unlink(); resolve(b) }
        waiter.reject = (e) => { unlink(); reject(e) }
        if (fresh) this.ask(want, this.firstPeers(want))
      })
    } finally {
      d.clear()
    }
  }

  /** The peers a want may be asked of. */
  private candidates (w: Want): string[] {
    const connected = this.host.connectedPeers()
    return w.peers === undefined ? connected : w.peers.filter((p) => connected.includes(p))
  }

  /** The peer that last delivered, when it is a candidate; else every candidate. */
  private firstPeers (w: Want): string[] {
    const c = this.candidates(w)
    for (let i = this.good.length - 1; i >= 0; i--) if (c.includes(this.good[i])) return [this.good[i]]
    return c
  }

  private ask (w: Want, peers: string[]): void {
    w.lastAsk = Date.now()
    for (const p of peers) {
      if (w.asked.has(p)) continue
      w.asked.add(p)
      this.sender(p).want({ cid: w.cid, priority: w.priority, cancel: false, wantType: WANT_BLOCK, sendDontHave: true })
    }
  }

  private cancel (peer: string, cid: CID): void {
    this.senders.get(peer)?.want({ cid, priority: 0, cancel: true, wantType: WANT_BLOCK, sendDontHave: false })
  }

  private markGood (peer: string): void {
    if (this.good[this.good.length - 1] === peer) return
    const i = this.good.indexOf(peer)
    if (i >= 0) this.good.splice(i, 1)
    this.good.push(peer)
    if (this.good.length > 16) this.good.shift()
  }

  /** Wants without progress for REBROADCAST_MS are asked again of every candidate. */
  private rebroadcast (): void {
    const now = Date.now()
    for (const w of this.wants.values()) {
      if (now - w.lastAsk < REBROADCAST_MS || w.landing === true) continue
      w.dontHave.clear()
      w.lastAsk = now
      if (w.peers === undefined && this.routing !== undefined && now - (w.lastSearch ?? 0) >= PROVIDER_SEARCH_MS) {
        w.lastSearch = now
        void this.searchProviders(w)
      }
      for (const p of this.candidates(w)) {
        w.asked.add(p)
        this.sender(p).want({ cid: w.cid, priority: w.priority, cancel: false, wantType: WANT_BLOCK, sendDontHave: true })
      }
    }
  }

  /** Looks for providers of a want no candidate gave, connects to them and asks them. */
  private async searchProviders (w: Want): Promise<void> {
    const routing = this.routing
    const dial = this.host.dial
    if (routing === undefined || dial === undefined) return
    try {
      const found = await routing.findProviders(w.cid, { timeoutMs: 10_000, limit: 8, signal: this.signal })
      const connected = new Set(this.host.connectedPeers())
      for (const p of found) {
        if (p.peerId === this.host.peerId || this.wants.get(keyOf(w.cid)) !== w || w.landing === true) continue
        if (!connected.has(p.peerId)) {
          const addrs = p.multiaddrs.map((a) => a.includes('/p2p/') ? a : `${a}/p2p/${p.peerId}`)
          let ok = false
          for (const a of addrs) {
            try { await dial.call(this.host, a, { timeoutMs: 10_000, signal: this.signal }); ok = true; break } catch {}
          }
          if (!ok) continue
        }
        w.asked.delete(p.peerId)
        w.dontHave.delete(p.peerId)
        this.ask(w, [p.peerId])
      }
    } catch (e) {
      if (!this.signal.aborted) this.log.debug(`bitswap: provider search for ${w.cid.toString()}: ${errorMessage(e)}`)
    }
  }

  /** Number of blocks this node waits for (tests). */
  get pendingWants (): number { return this.wants.size }
}

function isEnd (e: unknown): boolean {
  const name = e instanceof Error ? e.name : ''
  return name === 'UnexpectedEOFError' || name === 'StreamClosedError' || name === 'StreamStateError' || name === 'StreamResetError'
}

/** Starts bitswap on a host over a blockstore (the compat mode's wiring calls this). */
export async function registerBitswap (host: BitswapHost, store: FsBlockstore, opts: BitswapOptions = {}): Promise<Bitswap> {
  const bs = new Bitswap(host, store, opts)
  await bs.start()
  return bs
}
