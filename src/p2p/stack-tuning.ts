/**
 * Adjustments to the libp2p stack that cut per-message work without changing what goes over
 * the wire. Each was measured on the transfer benchmark or the p2p one (see docs/architecture.md, "p2p").
 *
 * - Yamux window updates. The stock stream answers every data frame it receives with a window
 *   update frame, so each message costs a second frame (Noise encryption and a socket write on
 *   one side, decryption and parsing on the other). Here an established stream grants more window
 *   only once half of it has been used, as go-yamux does. Opening (SYN), acknowledging (ACK) and
 *   resuming a paused stream behave as before. The sender still has at least half a window
 *   (128 KiB at first) when an update is held back, so no stream can stall.
 * - Peer-store merges. libp2p merges the negotiated protocol into the peer store on every new
 *   stream, and the DHT merges the addresses of every peer it hears of. Each merge decodes,
 *   rebuilds and re-encodes the peer's record even when nothing changes. A merge that only brings
 *   protocols and addresses the record already has is skipped for up to a minute after the last
 *   real write, which still refreshes the record's timestamps well inside its expiry.
 * - Socket writes. Every frame (Noise message) was its own write system call, and handling one
 *   message often writes several frames to one peer (a stream's opening and its first data, an
 *   answer and the closing of the stream). Writes to a TCP connection are gathered for the rest
 *   of the current tick (the socket is corked and uncorked on the next tick), so they leave in
 *   one system call; nothing waits for a timer.
 * - Peer-store reads. The DHT answers every request with the closest peers it knows, reading and
 *   decoding each one's record from the peer store. Those answers (`getInfo`) are kept for up to
 *   two seconds and dropped at any write for that peer.
 * - Length-prefixed decoding. Noise reads its frames with a length-prefixed decoder that, after
 *   the last whole frame of a chunk, asks its length reader for the next length on an empty
 *   buffer; the reader throws a RangeError that the decoder catches to end the loop. Nearly every
 *   chunk ends that way, so each received frame built an error and its stack trace (5-7 µs, about
 *   ten times the decoding itself). The length reader is now not asked about an empty buffer.
 */
import { Socket } from 'node:net'
import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import type { ConnectionProtector, MessageStream, Peer, PeerData, PeerId, PeerInfo, PeerStore } from '@libp2p/interface'

/**
 * Yamux windows stay at the protocol's 256 KiB start (go-yamux v4 and this Yamux both start there
 * and may grow to 16 MiB). A larger `initialStreamWindowSize` is not an option with this Yamux: it
 * also takes it as the peer's window for its own sends, so a peer at 256 KiB (an older node, Kubo)
 * gets more than it granted and resets the stream (decisions/0023).
 */
interface WindowFields {
  state: StreamState
  recvWindow: number
  recvWindowCapacity: number
}

const INSTALLED = Symbol.for('rbtnode.yamux.lazyWindowUpdates')

/** True when an established stream has used less than half its receive window. */
export function windowUpdateDeferred (s: WindowFields): boolean {
  return s.state === StreamState.Established && s.recvWindowCapacity * 2 > s.recvWindow
}

/** Makes every Yamux stream of this process grant window in halves (idempotent). */
export function lazyYamuxWindowUpdates (): void {
  const proto = YamuxStream.prototype as unknown as Record<PropertyKey, unknown> & { sendWindowUpdate: (this: WindowFields) => void }
  if (proto[INSTALLED] === true) return
  const stock = proto.sendWindowUpdate
  proto.sendWindowUpdate = function (this: WindowFields): void {
    if (windowUpdateDeferred(this)) return
    stock.call(this)
  }
  proto[INSTALLED] = true
}

type LpChunk = Parameters<LengthPrefixedDecoder['decode']>[0]
type LpFrames = ReturnType<LengthPrefixedDecoder['decode']>
/** The length reader's argument: the decoder's buffer. */
type LpBuffer = Parameters<NonNullable<NonNullable<ConstructorParameters<typeof LengthPrefixedDecoder>[0]>['lengthDecoder']>>[0]

interface DecoderFields {
  lengthDecoder: (data: LpBuffer) => number
  encodingLength: (length: number) => number
  [QUIET_DECODER]?: true
}

const QUIET_DECODER = Symbol.for('rbtnode.lp.quietEmptyBuffer')
const LP_INSTALLED = Symbol.for('rbtnode.lp.quietDecoding')

/**
 * Makes `decoder` skip its length reader while its buffer is empty. The decoder then sees a
 * frame of length 0 that needs at least one more byte than it has and stops, as it did on the
 * RangeError. A decoder whose prefix of a zero length takes no bytes is left as it is (it would
 * loop forever).
 */
export function quietEmptyBuffer (decoder: DecoderFields): void {
  if (decoder[QUIET_DECODER] === true) return
  decoder[QUIET_DECODER] = true
  if (!(decoder.encodingLength(0) > 0)) return
  const read = decoder.lengthDecoder
  decoder.lengthDecoder = (data) => data.byteLength === 0 ? 0 : read(data)
}

/** Applies `quietEmptyBuffer` to every length-prefixed decoder of this process (idempotent). */
export function quietLengthPrefixedDecoding (): void {
  const proto = LengthPrefixedDecoder.prototype as unknown as Record<PropertyKey, unknown> & { decode: (this: DecoderFields, buf: LpChunk) => LpFrames }
  if (proto[LP_INSTALLED] === true) return
  const stock = proto.decode
  proto.decode = function (this: DecoderFields, buf: LpChunk): LpFrames {
    quietEmptyBuffer(this)
    return stock.call(this, buf)
  }
  proto[LP_INSTALLED] = true
}

interface Known { peer: Peer, protocols: Set<string>, addrs: Set<string>, at: number }

export interface MergeDedupOptions {
  /** How long a record may go without a real write while merges are skipped. Default 60 s. */
  refreshMs?: number
  /** How long a `getInfo` answer is reused. Default 2 s. */
  infoMs?: number
  now?: () => number
}

/**
 * Wraps `store` in place so that merges adding nothing new are skipped. Every other write
 * (save, patch, delete, a merge with metadata, tags, keys or a record) goes through and refreshes
 * or drops what is known of that peer, so a skipped merge never hides a change.
 */
export function skipRedundantPeerMerges (store: PeerStore, opts: MergeDedupOptions = {}): PeerStore {
  const refreshMs = opts.refreshMs ?? 60_000
  const infoMs = opts.infoMs ?? 2_000
  const now = opts.now ?? Date.now
  const known = new Map<string, Known>()
  const infos = new Map<string, { info: PeerInfo, at: number }>()
  const remember = (id: PeerId, peer: Peer): Peer => {
    infos.delete(id.toString())
    known.set(id.toString(), {
      peer,
      protocols: new Set(peer.protocols),
      addrs: new Set(peer.addresses.map((a) => a.multiaddr.toString())),
      at: now()
    })
    return peer
  }
  const adds = (k: Known, data: PeerData): boolean => {
    for (const key of Object.keys(data) as Array<keyof PeerData>) {
      if (data[key] === undefined) continue
      if (key !== 'protocols' && key !== 'multiaddrs' && key !== 'addresses') return true
    }
    if (data.protocols?.some((p) => !k.protocols.has(p)) === true) return true
    if (data.multiaddrs?.some((m) => !k.addrs.has(m.toString())) === true) return true
    if (data.addresses?.some((a) => a.isCertified === true || !k.addrs.has(a.multiaddr.toString())) === true) return true
    return false
  }
  const merge = store.merge.bind(store)
  const patch = store.patch.bind(store)
  const save = store.save.bind(store)
  const del = store.delete.bind(store)
  const consume = store.consumePeerRecord.bind(store)
  const getInfo = store.getInfo.bind(store)
  store.getInfo = async (id, options) => {
    const key = id.toString()
    const hit = infos.get(key)
    if (hit !== undefined && now() - hit.at < infoMs) return { id: hit.info.id, multiaddrs: [...hit.info.multiaddrs] }
    const info = await getInfo(id, options)
    if (infos.size >= 4096) infos.clear()
    infos.set(key, { info: { id: info.id, multiaddrs: [...info.multiaddrs] }, at: now() })
    return info
  }
  store.merge = async (id, data, options) => {
    const k = known.get(id.toString())
    if (k !== undefined && now() - k.at < refreshMs && !adds(k, data)) return k.peer
    return remember(id, await merge(id, data, options))
  }
  store.patch = async (id, data, options) => remember(id, await patch(id, data, options))
  store.save = async (id, data, options) => remember(id, await save(id, data, options))
  store.delete = async (id, options) => { known.delete(id.toString()); infos.delete(id.toString()); await del(id, options); infos.delete(id.toString()) }
  store.consumePeerRecord = (async (...args: Parameters<PeerStore['consumePeerRecord']>) => {
    known.clear()
    infos.clear()
    return await (consume as (...a: unknown[]) => Promise<boolean>)(...args)
  }) as PeerStore['consumePeerRecord']
  return store
}

interface SocketConnection { socket?: unknown, sendData?: (data: unknown) => unknown }

/**
 * Gathers the writes one tick makes to a TCP connection into one system call. `conn` is the raw
 * connection a connection protector receives; anything that is not a TCP socket connection is
 * left as it is.
 */
export function corkWrites (conn: MessageStream): void {
  const c = conn as unknown as SocketConnection
  const socket = c.socket
  const send = c.sendData
  if (!(socket instanceof Socket) || typeof send !== 'function') return
  let corked = false
  c.sendData = function (this: unknown, data: unknown) {
    if (!corked && !socket.destroyed) {
      corked = true
      socket.cork()
      process.nextTick(() => { corked = false; socket.uncork() })
    }
    return send.call(this, data)
  }
}

/** A connection protector factory whose connections gather their writes (see corkWrites). */
export function corkingProtector<C> (inner: (components: C) => ConnectionProtector): (components: C) => ConnectionProtector {
  return (components) => {
    const p = inner(components)
    return {
      protect: async (connection, options) => {
        corkWrites(connection)
        return await p.protect(connection, options)
      }
    }
  }
}
