/**
 * Bitswap's sending side for one peer: what we send it (our wants, the presences and blocks we
 * answer) is queued here and goes out on one long-lived stream of ours, as boxo sends, message
 * after message. The blocks of the next message are read from the store while one is written; a
 * block goes out only while the peer still wants it.
 */
import type { Connection, Stream } from '@libp2p/interface'
import { lpStream, type LengthPrefixedStream } from '@libp2p/utils'
import type { CID } from 'multiformats/cid'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { deadline } from '../deadline.js'
import { WANT_BLOCK, cidPrefix, emptyMessage, encodeMessage, type BitswapMessage, type BlockPresence, type WantEntry } from './bitswap-message.js'
import type { FsBlockstore } from './blockstore.js'

export const BITSWAP_120 = '/ipfs/bitswap/1.2.0'
export const BITSWAP_110 = '/ipfs/bitswap/1.1.0'
export const BITSWAP_100 = '/ipfs/bitswap/1.0.0'
export const BITSWAP_LEGACY = '/ipfs/bitswap'
/** The protocols served, newest first (the order a dial tries them in). */
export const BITSWAP_PROTOCOLS = [BITSWAP_120, BITSWAP_110, BITSWAP_100, BITSWAP_LEGACY] as const

/** Largest message read (go-libp2p's network.MessageSizeMax, which boxo reads with). */
export const MAX_MESSAGE_BYTES = 4 * 1024 * 1024
/** Blocks put into one message until it holds this many bytes (at least one block a message). */
export const TARGET_MESSAGE_BYTES = 1024 * 1024

/** What bitswap needs of the host (P2pHost has it). */
export interface BitswapHost {
  readonly peerId: string
  handleProtocol: (protocol: string, handler: (stream: Stream, connection: Connection) => void | Promise<void>, opts?: { maxInboundStreams?: number, maxOutboundStreams?: number }) => Promise<void>
  unhandleProtocol: (protocol: string) => Promise<void>
  openStream: (peerId: string, protocol: string, opts: { signal: AbortSignal }) => Promise<Stream>
  connectedPeers: () => string[]
  onPeerConnect: (listener: (peerId: string) => void) => () => void
  onPeerDisconnect: (listener: (peerId: string) => void) => () => void
  /** connects to a multiaddr (with /p2p/); needed only with `routing` */
  dial?: (addr: string, opts?: { timeoutMs?: number, signal?: AbortSignal }) => Promise<string>
}

export interface BitswapStats {
  blocksReceived: number
  duplicateBlocks: number
  blocksSent: number
  bytesSent: number
  bytesReceived: number
}

/** Blocks are keyed by their multihash: a CIDv0 and a CIDv1 of the same bytes are one block. */
export const keyOf = (cid: CID): string => Buffer.from(cid.multihash.bytes).toString('base64')

/** What a sender needs of the bitswap it belongs to. */
export interface SenderOwner {
  readonly log: Logger
  readonly stats: BitswapStats
  readonly store: FsBlockstore
  readonly host: BitswapHost
  readonly signal: AbortSignal
  /** whether `peer` still wants `cid` as a block */
  peerWants: (peer: string, cid: CID, type: number) => boolean
  /** a block went out to `peer` */
  served: (peer: string, cid: CID) => void
}

interface Outgoing {
  entries: Map<string, WantEntry>
  presences: Map<string, BlockPresence>
  blocks: Map<string, CID>
}

/** One peer's sending side: a queue and the one stream its messages go out on. */
export class PeerSender {
  private readonly out: Outgoing = { entries: new Map(), presences: new Map(), blocks: new Map() }
  private running = false
  private stream?: Stream
  private lp?: LengthPrefixedStream<Stream>
  private protocol = BITSWAP_120
  closed = false

  constructor (private readonly bs: SenderOwner, readonly peer: string) {}

  want (e: WantEntry): void { this.out.entries.set(keyOf(e.cid), e); this.kick() }
  presence (p: BlockPresence): void { this.out.presences.set(keyOf(p.cid), p); this.kick() }
  block (cid: CID): void { this.out.blocks.set(keyOf(cid), cid); this.kick() }

  private kick (): void {
    if (this.running || this.closed) return
    this.running = true
    this.loop().catch((e: unknown) => {
      // the peer cannot be written to: what was queued is dropped (our wants are asked again on
      // the rebroadcast, and the peer asks again for what it still wants)
      this.bs.log.debug(`bitswap to ${this.peer}: ${errorMessage(e)}`)
      this.out.entries.clear()
      this.out.presences.clear()
      this.out.blocks.clear()
    }).finally(() => {
      this.running = false
      // work queued between the loop's last look and now
      if (!this.idle) this.kick()
    })
  }

  private get idle (): boolean {
    return this.out.entries.size === 0 && this.out.presences.size === 0 && this.out.blocks.size === 0
  }

  /** Sends message after message; the next one's blocks are read from disk while one is written. */
  private async loop (): Promise<void> {
    let pending = this.next()
    while (!this.closed) {
      const msg = await pending
      if (msg === undefined) {
        // work queued while the last message was written (kick saw the loop running)
        if (this.idle) return
        pending = this.next()
        continue
      }
      const sending = this.send(encodeMessage(msg))
      pending = this.next()
      pending.catch(() => {})
      await sending
      for (const p of msg.payload) { this.bs.stats.blocksSent++; this.bs.stats.bytesSent += p.data.length }
      for (const b of msg.blocks) { this.bs.stats.blocksSent++; this.bs.stats.bytesSent += b.length }
    }
  }

  /** The next message: every want and presence queued, and blocks up to TARGET_MESSAGE_BYTES. */
  private async next (): Promise<BitswapMessage | undefined> {
    const o = this.out
    if (this.idle) return undefined
    const msg = emptyMessage()
    const legacy = this.protocol === BITSWAP_100 || this.protocol === BITSWAP_LEGACY
    msg.wantlist.entries = [...o.entries.values()].filter((e) => !legacy || e.wantType === WANT_BLOCK)
    o.entries.clear()
    if (!legacy) msg.blockPresences = [...o.presences.values()]
    o.presences.clear()
    let bytes = 0
    for (const [k, cid] of o.blocks) {
      if (bytes >= TARGET_MESSAGE_BYTES) break
      o.blocks.delete(k)
      // sent only while the peer still wants it (a cancel may have come since)
      if (!this.bs.peerWants(this.peer, cid, WANT_BLOCK)) continue
      const data = await this.bs.store.get(cid)
      if (data === undefined) continue
      this.bs.served(this.peer, cid)
      if (legacy) msg.blocks.push(data)
      else msg.payload.push({ prefix: cidPrefix(cid), data })
      bytes += data.length
    }
    return msg
  }

  private async send (bytes: Uint8Array): Promise<void> {
    for (let attempt = 0; attempt < 2 && !this.closed; attempt++) {
      // boxo's send timeout: a minute, plus the message at 100 kbit/s
      const d = deadline(60_000 + Math.ceil(bytes.length / 12.5), this.bs.signal)
      try {
        const lp = this.lp ?? await this.open(d.signal)
        await lp.write(bytes, { signal: d.signal })
        return
      } catch (e) {
        this.reset(e)
        if (attempt === 1) throw e
      } finally {
        d.clear()
      }
    }
  }

  private async open (signal: AbortSignal): Promise<LengthPrefixedStream<Stream>> {
    let last: unknown
    for (const protocol of BITSWAP_PROTOCOLS) {
      try {
        const s = await this.bs.host.openStream(this.peer, protocol, { signal })
        this.stream = s
        this.protocol = protocol
        this.lp = lpStream(s, { maxDataLength: MAX_MESSAGE_BYTES })
        // nothing comes back on our stream; the peer answers on its own
        return this.lp
      } catch (e) {
        last = e
        if (!(e instanceof RbtError && e.code === ErrorCode.PROTOCOL) && !(e instanceof Error && e.name === 'UnsupportedProtocolError')) throw e
      }
    }
    throw last
  }

  private reset (e: unknown): void {
    if (this.stream !== undefined && this.stream.status === 'open') this.stream.abort(e instanceof Error ? e : new Error(String(e)))
    this.stream = undefined
    this.lp = undefined
  }

  close (): void {
    this.closed = true
    const s = this.stream
    this.stream = undefined
    this.lp = undefined
    if (s !== undefined && s.status === 'open') s.close().catch(() => { s.abort(new Error('bitswap stopped')) })
  }
}
