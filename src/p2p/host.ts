/**
 * The node's libp2p host: one per process. It owns the transport stack (TCP, pnet, Noise, Yamux),
 * identify, ping, the Kad-DHT and gossipsub, and offers a small string-based API on top so that
 * callers above src/p2p never handle libp2p objects. The request/response layer (rpc.ts) uses the
 * stream plumbing at the bottom of the P2pHost interface.
 */
import '../util/polyfill.js'
import { setMaxListeners } from 'node:events'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { gossipsub, type GossipSub, type Message } from '@libp2p/gossipsub'
import { identify, type Identify } from '@libp2p/identify'
import { kadDHT, passthroughMapper, removePrivateAddressesMapper, removePublicAddressesMapper, type KadDHT, type SelectFn, type ValidateFn } from '@libp2p/kad-dht'
import { mdns } from '@libp2p/mdns'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromString } from '@libp2p/peer-id'
import { peerSigner } from './peer-signature.js'
import { ping, type Ping } from '@libp2p/ping'
import { tcp } from '@libp2p/tcp'
import type { Connection, Libp2p, PeerDiscovery, PeerId, PeerInfo, PrivateKey, Stream, StreamHandlerOptions } from '@libp2p/interface'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { CID } from 'multiformats/cid'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { silentLogger, type Logger } from '../util/logger.js'
import type { Startable, StartableStatus } from '../util/startable.js'
import { deadline, raceAbort, withDeadline } from './deadline.js'
import { p2pError } from './errors.js'
import { corkingProtector, lazyYamuxWindowUpdates, quietLengthPrefixedDecoding, skipRedundantPeerMerges } from './stack-tuning.js'
import { pnetProtector } from './pnet-protector.js'
import type { SwarmKey } from './swarm-key.js'
import { compareDistance, kadKey, kadPeerKey, type QueryPeer } from './closest-query.js'
import { DiscoveryDialer, type DiscoveredPeer } from './discovery-dialer.js'
import { KUBO_LAN_SERVICE, KUBO_WAN_SERVICE, kuboDhtServices } from './kubo/kubo-dht.js'
import { announcedAsListened, isPrivateListenAddr } from './listen-address.js'
import { dhtKeyBytes, isNotFound, parseCid, parseMultiaddr, parsePeerId } from './parse.js'
import { createKuboRouting, type KuboRouting } from './kubo/kubo-routing.js'
import { noiseCrypto } from './noise-crypto.js'

export { parseMultiaddr, parsePeerId }

/** DHT protocol id of our private network (kept apart from the public IPFS DHT). */
export const DEFAULT_DHT_PROTOCOL = '/rbt/kad/1.0.0'
/** DHT record namespace reserved for this node software: keys look like `/rbt/<kind>/<id>`. */
export const DHT_NAMESPACE = 'rbt'

export interface GossipOptions {
  /** Milliseconds between mesh heartbeats. libp2p's default is 1000; small test networks like 100. */
  heartbeatIntervalMs?: number
  /** Deliver our own publications to our own subscribers too. Default false. */
  emitSelf?: boolean
  /**
   * Addresses exempt from gossipsub's IP-colocation penalty. Default: the loopback addresses
   * (LOOPBACK_IPS). Gossipsub counts every peer it has seen from an address, departed ones
   * included for an hour, and past ten of them scores each peer down until it is graylisted.
   * Nodes of one machine all come from loopback, so without the exemption a long-running node
   * stops hearing every node that joins later.
   */
  colocationWhitelist?: string[]
}

/** Gossip messages this large or larger are announced to mesh peers with IDONTWANT (gossipsub's default is 512). */
export const IDONTWANT_MIN_BYTES = 16 * 1024

/** Loopback addresses, as gossipsub writes a peer's IP. */
export const LOOPBACK_IPS: readonly string[] = ['127.0.0.1', '::1']

export interface DhtOptions {
  /** Protocol id, default DEFAULT_DHT_PROTOCOL. */
  protocol?: string
  /**
   * Which peer addresses the DHT keeps: 'private' keeps only private/loopback ones (LAN and test
   * networks), 'public' only public ones, 'all' keeps everything. Default: 'private' when every
   * listen address is loopback or private, otherwise 'public'.
   */
  addresses?: 'private' | 'public' | 'all'
  /**
   * Record validators per key namespace. A put or a received record whose namespace has no
   * validator is rejected by the DHT. The `rbt` namespace gets a size-only validator unless one is
   * given here; domain code should supply one that checks signatures.
   */
  validators?: Record<string, ValidateFn>
  selectors?: Record<string, SelectFn>
}

/** Milliseconds between two mDNS queries when no interval is given. */
export const DEFAULT_MDNS_INTERVAL_MS = 10_000

export interface MdnsOptions {
  /** Milliseconds between two queries (default DEFAULT_MDNS_INTERVAL_MS); a query also goes out at start. */
  intervalMs?: number
}

export interface P2pHostOptions {
  /** Identity key; an ephemeral Ed25519 key is generated when absent (tests, benchmarks). */
  privateKey?: PrivateKey
  /** Private-network key. When null the host joins an open network (development only). */
  swarmKey: SwarmKey | null
  /** Listen multiaddrs, default ['/ip4/127.0.0.1/tcp/0']. */
  listen?: string[]
  /** Addresses to announce instead of the listen addresses (e.g. behind NAT). */
  announce?: string[]
  /** Multiaddrs with /p2p/<id>, dialled in the background after start; failures are only logged. */
  bootstrap?: string[]
  /**
   * LAN discovery by multicast DNS (the service name IPFS daemons use): the host answers queries
   * with its private and loopback addresses and dials every peer that answers; only peers of the
   * same private network get past the protector. Default off: it sends multicast, which tests
   * allow only inside a network namespace of their own. `rbtnode run` turns it on (NodeOptions).
   */
  mdns?: boolean | MdnsOptions
  dht?: DhtOptions
  gossip?: GossipOptions
  /** Per-host inbound connection rate limit; libp2p's default is low enough to reset fast re-dials. */
  inboundConnectionThreshold?: number
  maxConnections?: number
  /** Default deadline for dial, ping and DHT operations, in ms (default 10 000). */
  defaultTimeoutMs?: number
  /** Serve and use Kubo's two DHTs beside ours (src/p2p/kubo, docs/interop.md). Default off. */
  kubo?: boolean
  logger?: Logger
}

export interface TimeoutOptions {
  timeoutMs?: number
  signal?: AbortSignal
}

export interface PubsubMessage {
  topic: string
  data: Uint8Array
  /** Originating peer id when the message is signed (the default policy). */
  from?: string
}
export type PubsubHandler = (msg: PubsubMessage) => void | Promise<void>

export interface ProviderInfo {
  peerId: string
  multiaddrs: string[]
}

export interface FindProvidersOptions extends TimeoutOptions {
  /** Stop after this many providers (default 20). */
  limit?: number
}

export interface ProtocolHandlerOptions {
  maxInboundStreams?: number
  maxOutboundStreams?: number
}
export type ProtocolHandler = (stream: Stream, connection: Connection) => void | Promise<void>

export interface P2pHost extends Startable {
  readonly peerId: string
  readonly status: StartableStatus
  /** Listen/announce addresses, each ending in /p2p/<peerId>. Empty before start. */
  multiaddrs: () => string[]
  /** Connect to a multiaddr (with or without /p2p/) and return the remote peer id. */
  dial: (addr: string, opts?: TimeoutOptions) => Promise<string>
  hangUp: (peerId: string) => Promise<void>
  /** libp2p ping round trip in milliseconds; dials the peer when needed. */
  ping: (peerId: string, opts?: TimeoutOptions) => Promise<number>
  connectedPeers: () => string[]
  /** The peers connected now, as a live set (no copy: read it, do not keep it). */
  connectedPeerSet: () => ReadonlySet<string>
  isConnected: (peerId: string) => boolean
  /** Register a handler; returns a function that removes it. The first handler subscribes the topic. */
  subscribe: (topic: string, handler: PubsubHandler) => () => void
  /** Publish and return how many peers it was sent to (0 is allowed: single-node networks). */
  publish: (topic: string, data: Uint8Array) => Promise<number>
  /** Peers known to subscribe to `topic`. */
  topicPeers: (topic: string) => string[]
  /** Store a record in the DHT. Keys are `/namespace/...` strings or their UTF-8 bytes. */
  putValue: (key: string | Uint8Array, value: Uint8Array, opts?: TimeoutOptions) => Promise<void>
  /** Fetch the best record for a key; NOT_FOUND when nobody has it. */
  getValue: (key: string | Uint8Array, opts?: TimeoutOptions) => Promise<Uint8Array>
  /** Announce that this node provides `cid`. */
  provide: (cid: string | CID, opts?: TimeoutOptions) => Promise<void>
  /** Providers of `cid` found before the deadline (an empty list when none). */
  findProviders: (cid: string | CID, opts?: FindProvidersOptions) => Promise<ProviderInfo[]>
  /** Number of peers in the DHT routing table. */
  dhtPeerCount: () => number
  /**
   * The `count` peers closest to `key` (Kademlia distance) among the local routing table's and the
   * connected peers, closest first. No traffic.
   */
  closestKnownPeers: (key: Uint8Array, count: number) => string[]
  /** Addresses the peer store holds for a peer (empty when none). */
  peerAddresses: (peerId: string) => Promise<string[]>
  /** Keeps the addresses another peer gave for a peer not connected yet (filtered like DHT answers). */
  learnPeer: (peer: QueryPeer) => Promise<void>
  onPeerConnect: (listener: (peerId: string) => void) => () => void
  onPeerDisconnect: (listener: (peerId: string) => void) => () => void

  // Stream plumbing for the request/response layer (src/p2p only).
  handleProtocol: (protocol: string, handler: ProtocolHandler, opts?: ProtocolHandlerOptions) => Promise<void>
  unhandleProtocol: (protocol: string) => Promise<void>
  /** Open a stream on an existing or new connection. Errors are RbtErrors naming the peer. */
  openStream: (peerId: string, protocol: string, opts: { signal: AbortSignal }) => Promise<Stream>
  /** The underlying node, for code inside src/p2p only. */
  readonly libp2p: Libp2p<HostServices>
  /** Kubo's two DHTs, when the host was made with `kubo: true`. */
  readonly kubo: KuboRouting | undefined
  /**
   * True once identify showed a connected peer not to speak rbtnode's DHT (a Kubo peer; only with
   * `kubo: true`, where such peers connect). Such peers are never among `closestKnownPeers`.
   */
  isForeignPeer: (peerId: string) => boolean
  /** Called when a peer turns out foreign (see isForeignPeer); returns a function that removes the listener. */
  onForeignPeer: (listener: (peerId: string) => void) => () => void
  /** Signs `data` with this peer's identity key: anyone checks it from the peer id alone (verifyPeerSignature). */
  signAsPeer: (data: Uint8Array) => Promise<Uint8Array>
}

export { verifyPeerSignature } from './peer-signature.js'

export interface HostServices extends Record<string, unknown> {
  identify: Identify
  ping: Ping
  dht: KadDHT
  pubsub: GossipSub
}

const MAX_RBT_RECORD_BYTES = 64 * 1024
/** What the host reads of the Kad-DHT routing table. */
interface RoutingTableView { size?: number, closestPeers?: (kadId: Uint8Array, o: { count: number }) => PeerId[] }
/**
 * How long `peerAddresses` answers from memory: the peer store's own changes ('peer:update') drop
 * an entry sooner. A miss reads the store under its lock and decodes the whole record, and a
 * marker lookup's answer names the addresses of up to nine peers.
 */
const ADDR_CACHE_MS = 300_000

const defaultRbtValidator: ValidateFn = (_key, value) => {
  if (value.byteLength > MAX_RBT_RECORD_BYTES) throw new Error(`record larger than ${MAX_RBT_RECORD_BYTES} bytes`)
}
const firstRecordSelector: SelectFn = () => 0

/** Gossip de-duplication key: topic, origin and sequence number of a received message. */
export function gossipFastId (msg: { from?: Uint8Array, seqno?: Uint8Array, topic: string }): string {
  const b64 = (b?: Uint8Array): string => b === undefined ? '' : Buffer.from(b.buffer, b.byteOffset, b.byteLength).toString('base64')
  return `${msg.topic}\n${b64(msg.from)}\n${b64(msg.seqno)}`
}

/**
 * The signal of one DHT operation, handed to kad-dht: it adds one abort listener per parallel
 * query path and removes them when the operation ends, so a put to 20 peers held 20 at once and
 * Node warned of a leak. The signal belongs to this one operation (its deadline), never to the
 * node, so lifting its listener limit hides nothing that outlives the call.
 */
function fanOut (signal: AbortSignal): AbortSignal {
  setMaxListeners(Infinity, signal)
  return signal
}

/** Build a host (not yet started; peerId is already known). */
export async function createP2pHost (opts: P2pHostOptions): Promise<P2pHost> {
  const log = opts.logger ?? silentLogger
  const listen = opts.listen ?? ['/ip4/127.0.0.1/tcp/0']
  for (const a of [...listen, ...(opts.announce ?? []), ...(opts.bootstrap ?? [])]) parseMultiaddr(a)
  const privateKey = opts.privateKey ?? await generateKeyPair('Ed25519')
  const defaultTimeoutMs = opts.defaultTimeoutMs ?? 10_000
  const addrScope = opts.dht?.addresses ?? (listen.every(isPrivateListenAddr) ? 'private' : 'public')
  const peerInfoMapper = addrScope === 'private'
    ? removePublicAddressesMapper
    : addrScope === 'public' ? removePrivateAddressesMapper : passthroughMapper

  if (opts.swarmKey === null) log.warn('no swarm key: joining an open (non-private) network')

  lazyYamuxWindowUpdates()
  quietLengthPrefixedDecoding()
  const mdnsOpts = opts.mdns === true ? {} : opts.mdns === false || opts.mdns === undefined ? undefined : opts.mdns
  let discovery: PeerDiscovery | undefined
  const node = await createLibp2p<HostServices>({
    start: false,
    privateKey,
    addresses: {
      listen,
      ...(opts.announce !== undefined ? { announce: opts.announce } : { appendAnnounce: listen.filter(announcedAsListened) })
    },
    transports: [tcp()],
    // libp2p keeps what discovery reports in its peer store; the host dials it (DiscoveryDialer)
    ...(mdnsOpts !== undefined
      ? {
          peerDiscovery: [(components: Parameters<ReturnType<typeof mdns>>[0]) => {
            discovery = mdns({ interval: mdnsOpts.intervalMs ?? DEFAULT_MDNS_INTERVAL_MS })(components)
            return discovery
          }]
        }
      : {}),
    connectionEncrypters: [noise({ crypto: noiseCrypto() })],
    streamMuxers: [yamux()],
    ...(opts.swarmKey !== null ? { connectionProtector: corkingProtector(pnetProtector({ swarmKey: opts.swarmKey })) } : {}),
    // libp2p pings every connection to spot dead ones; every 10 s (its default) that was a stream,
    // and a peer-store update, per connection end several times per transfer. A closed socket is
    // noticed at once anyway; the pings only catch silent half-open links.
    connectionMonitor: { pingInterval: 30_000 },
    connectionManager: {
      inboundConnectionThreshold: opts.inboundConnectionThreshold ?? 1000,
      ...(opts.maxConnections !== undefined ? { maxConnections: opts.maxConnections } : {})
    },
    services: {
      identify: identify(),
      // libp2p's connection monitor pings too: allow ours to run alongside it on one connection
      ping: ping({ maxOutboundStreams: 16, maxInboundStreams: 16 }),
      dht: kadDHT({
        protocol: opts.dht?.protocol ?? DEFAULT_DHT_PROTOCOL,
        clientMode: false,
        // a node alone on the network (development) answers from its own store instead of
        // waiting for peers until the deadline
        allowQueryWithZeroPeers: true,
        peerInfoMapper,
        validators: { [DHT_NAMESPACE]: defaultRbtValidator, ...opts.dht?.validators },
        selectors: { [DHT_NAMESPACE]: firstRecordSelector, ...opts.dht?.selectors }
      }),
      ...(opts.kubo === true ? kuboDhtServices() : {}),
      pubsub: gossipsub({
        // Each message reaches a node from several mesh peers. Copies after the first are dropped
        // on this id before their signature is checked again (that check cost about a fifth of a
        // quorum's CPU in the transfer benchmark). The id is what gossipsub already de-duplicates
        // on (origin and sequence number), and it is cached only once a copy passed validation,
        // so a forged copy cannot shadow the real message.
        fastMsgIdFn: gossipFastId,
        // IDONTWANT (gossipsub 1.2) costs a control frame to every mesh peer for each message it
        // receives, to save the copies that peer would still forward. On messages of a few KB (a
        // transaction announcement is about 1 KB) the copies it saves cost less than the frames it
        // sends; between nodes a few ms apart most copies are on their way before it arrives. It
        // is kept for large messages (a 300-part transfer's announcement is about 50 KB).
        idontwantMinDataSize: IDONTWANT_MIN_BYTES,
        heartbeatInterval: opts.gossip?.heartbeatIntervalMs ?? 1000,
        emitSelf: opts.gossip?.emitSelf ?? false,
        allowPublishToZeroTopicPeers: true,
        // what go-libp2p-pubsub does by default, and so Kubo: every message signed by its origin
        // and checked on receipt, and one's own messages sent to every peer of the topic
        globalSignaturePolicy: 'StrictSign',
        floodPublish: true,
        scoreParams: { IPColocationFactorWhitelist: new Set(opts.gossip?.colocationWhitelist ?? LOOPBACK_IPS) }
      })
    }
  })

  skipRedundantPeerMerges(node.peerStore)
  return new Host(node, log, defaultTimeoutMs, opts.bootstrap ?? [], peerInfoMapper, discovery, opts.dht?.protocol ?? DEFAULT_DHT_PROTOCOL, privateKey)
}

class Host implements P2pHost {
  readonly peerId: string
  private _status: StartableStatus = 'stopped'
  private readonly topics = new Map<string, Set<PubsubHandler>>()
  private readonly bootstrapAbort = new AbortController()
  /** peers with an open connection, kept from libp2p's events (its own list is rebuilt on every call) */
  private readonly connected = new Set<string>()
  /** dials what LAN discovery reports; absent when discovery is off */
  private readonly discoveryDialer?: DiscoveryDialer
  readonly kubo: KuboRouting | undefined
  /** peers identify showed not to speak our DHT (Kubo peers, -kubo only): never among the closest known */
  private readonly foreign = new Set<string>()
  private readonly foreignListeners = new Set<(peerId: string) => void>()

  constructor (
    readonly libp2p: Libp2p<HostServices>,
    private readonly log: Logger,
    private readonly defaultTimeoutMs: number,
    private readonly bootstrap: string[],
    private readonly peerInfoMapper: typeof passthroughMapper = passthroughMapper,
    discovery?: PeerDiscovery,
    dhtProtocol = DEFAULT_DHT_PROTOCOL,
    private readonly privateKey?: PrivateKey
  ) {
    this.peerId = libp2p.peerId.toString()
    const services = libp2p.services as Record<string, unknown>
    this.kubo = services[KUBO_WAN_SERVICE] !== undefined
      ? createKuboRouting({ wan: services[KUBO_WAN_SERVICE] as KadDHT, lan: services[KUBO_LAN_SERVICE] as KadDHT })
      : undefined
    libp2p.services.pubsub.addEventListener('message', this.onPubsubMessage)
    // with Kubo's wire on, Kubo peers connect too: identify tells them from rbtnode peers
    if (this.kubo !== undefined) {
      libp2p.addEventListener('peer:identify', (e) => {
        const id = e.detail.peerId.toString()
        if (e.detail.protocols.includes(dhtProtocol)) { this.foreign.delete(id); return }
        if (this.foreign.has(id)) return
        this.foreign.add(id)
        for (const l of this.foreignListeners) l(id)
      })
    }
    libp2p.addEventListener('peer:connect', (e) => { this.connected.add(e.detail.toString()) })
    libp2p.addEventListener('peer:disconnect', (e) => { this.connected.delete(e.detail.toString()) })
    libp2p.addEventListener('peer:update', (e) => { this.addrCache.delete(e.detail.peer.id.toString()) })
    if (discovery !== undefined) {
      const dialer = new DiscoveryDialer({
        self: this.peerId,
        isConnected: (p) => this.connected.has(p),
        dial: async (peer, signal) => { await this.dialDiscovered(peer, signal) },
        log: log.child('mdns')
      })
      this.discoveryDialer = dialer
      // every answer, not only libp2p's `peer:discovery` (that fires once per peer-store entry):
      // a peer that went away and came back is dialled again
      discovery.addEventListener('peer', (e: CustomEvent<PeerInfo>) => {
        dialer.onPeer({ peerId: e.detail.id.toString(), multiaddrs: e.detail.multiaddrs.map((a) => a.toString()) })?.catch(() => {})
      })
    }
  }

  /** Keeps a discovered peer's addresses in the peer store (the rpc layer dials by peer id) and connects. */
  private async dialDiscovered (peer: DiscoveredPeer, signal: AbortSignal): Promise<void> {
    const id = peerIdFromString(peer.peerId)
    await this.libp2p.peerStore.merge(id, { multiaddrs: peer.multiaddrs.map((a) => multiaddr(a)) })
    await withDeadline(this.defaultTimeoutMs, signal, async (d) => {
      try {
        await raceAbort(this.libp2p.dial(id, { signal: d.signal }), d.signal)
      } catch (e) {
        throw p2pError(e, { peer: peer.peerId, op: 'dial', deadline: d })
      }
    })
  }

  get status (): StartableStatus { return this._status }

  async start (): Promise<void> {
    if (this._status !== 'stopped') throw new RbtError(ErrorCode.CONFLICT, `p2p host is ${this._status}`)
    this._status = 'starting'
    try {
      await this.libp2p.start()
    } catch (e) {
      this._status = 'stopped'
      await Promise.resolve().then(async () => { await this.libp2p.stop() }).catch(() => {})
      throw new RbtError(ErrorCode.CONFIG, `cannot start p2p host: ${errorMessage(e)}`, { cause: e })
    }
    this._status = 'started'
    this.log.info(`p2p host ${this.peerId} listening on ${this.multiaddrs().join(', ')}`)
    if (this.discoveryDialer !== undefined) {
      this.discoveryDialer.start()
      this.log.info('looking for peers on the local network (mDNS)')
    }
    for (const addr of this.bootstrap) {
      this.dial(addr, { signal: this.bootstrapAbort.signal })
        .then(p => { this.log.info(`connected to bootstrap peer ${p}`) })
        .catch(e => { if (this._status === 'started') this.log.warn(`bootstrap dial ${addr} failed: ${errorMessage(e)}`) })
    }
  }

  async stop (): Promise<void> {
    if (this._status === 'stopped' || this._status === 'stopping') return
    this._status = 'stopping'
    this.bootstrapAbort.abort()
    this.discoveryDialer?.stop()
    try {
      this.libp2p.services.pubsub.removeEventListener('message', this.onPubsubMessage)
      await this.libp2p.stop()
    } finally {
      this.topics.clear()
      this._status = 'stopped'
    }
  }

  private assertStarted (): void {
    if (this._status !== 'started') throw new RbtError(ErrorCode.NOT_RUNNING, `p2p host is ${this._status}`)
  }

  multiaddrs (): string[] {
    const suffix = `/p2p/${this.peerId}`
    return this.libp2p.getMultiaddrs().map(ma => {
      const s = ma.toString()
      return s.endsWith(suffix) ? s : s + suffix
    })
  }

  async dial (addr: string, opts: TimeoutOptions = {}): Promise<string> {
    this.assertStarted()
    const ma = parseMultiaddr(addr)
    // the address of a named peer is kept even when this dial fails (the peer is down, or slow to
    // answer): the rpc layer dials by peer id, and a peer given by its address (a bootstrap peer)
    // would otherwise stay "no known address" until something else taught it
    const named = ma.getComponents().findLast((c) => c.name === 'p2p')?.value
    if (named !== undefined && named !== this.peerId) {
      await this.libp2p.peerStore.merge(peerIdFromString(named), { multiaddrs: [ma.decapsulateCode(421)] }).catch(() => {})
      this.addrCache.delete(named)
    }
    return await withDeadline(opts.timeoutMs ?? this.defaultTimeoutMs, opts.signal, async d => {
      try {
        const conn = await raceAbort(this.libp2p.dial(ma, { signal: d.signal }), d.signal)
        return conn.remotePeer.toString()
      } catch (e) {
        const err = p2pError(e, { peer: addr, op: 'dial', deadline: d })
        if (err.code === ErrorCode.PEER_UNREACHABLE || err.code === ErrorCode.TIMEOUT) {
          // A peer on another private network fails the handshake in exactly this way.
          throw new RbtError(err.code, `${err.message} (is it up, and does it use the same swarm key?)`, { cause: e, details: err.details })
        }
        throw err
      }
    })
  }

  async hangUp (peerId: string): Promise<void> {
    this.assertStarted()
    await this.libp2p.hangUp(parsePeerId(peerId))
  }

  async ping (peerId: string, opts: TimeoutOptions = {}): Promise<number> {
    this.assertStarted()
    const id = parsePeerId(peerId)
    if (id.equals(this.libp2p.peerId)) throw new RbtError(ErrorCode.INVALID_INPUT, 'cannot ping our own peer id')
    return await withDeadline(opts.timeoutMs ?? this.defaultTimeoutMs, opts.signal, async d => {
      try {
        return await raceAbort(this.libp2p.services.ping.ping(id, { signal: d.signal }), d.signal)
      } catch (e) {
        throw p2pError(e, { peer: peerId, op: 'ping', deadline: d })
      }
    })
  }

  connectedPeers (): string[] {
    return this.libp2p.getPeers().map(p => p.toString())
  }

  connectedPeerSet (): ReadonlySet<string> { return this.connected }

  isConnected (peerId: string): boolean {
    const id = parsePeerId(peerId)
    return this.libp2p.getConnections(id).some(c => c.status === 'open')
  }

  private readonly onPubsubMessage = (evt: CustomEvent<Message>): void => {
    const msg = evt.detail
    const handlers = this.topics.get(msg.topic)
    if (handlers === undefined) return
    const out: PubsubMessage = { topic: msg.topic, data: msg.data, ...(msg.type === 'signed' ? { from: msg.from.toString() } : {}) }
    for (const h of handlers) {
      try {
        const r: unknown = h(out)
        if (r instanceof Promise) r.catch((e: unknown) => { this.log.warn(`pubsub handler for ${msg.topic} failed: ${errorMessage(e)}`) })
      } catch (e) {
        this.log.warn(`pubsub handler for ${msg.topic} failed: ${errorMessage(e)}`)
      }
    }
  }

  subscribe (topic: string, handler: PubsubHandler): () => void {
    this.assertStarted()
    if (topic === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'topic must not be empty')
    let set = this.topics.get(topic)
    if (set === undefined) {
      set = new Set()
      this.topics.set(topic, set)
      this.libp2p.services.pubsub.subscribe(topic)
    }
    set.add(handler)
    return () => {
      const s = this.topics.get(topic)
      if (s === undefined || !s.delete(handler) || s.size > 0) return
      this.topics.delete(topic)
      if (this._status === 'started') this.libp2p.services.pubsub.unsubscribe(topic)
    }
  }

  async publish (topic: string, data: Uint8Array): Promise<number> {
    this.assertStarted()
    try {
      const res = await withDeadline(this.defaultTimeoutMs, undefined, async (d) => await raceAbort(this.libp2p.services.pubsub.publish(topic, data), d.signal))
      return res.recipients.length
    } catch (e) {
      throw new RbtError(ErrorCode.PROTOCOL, `publish on ${topic} failed: ${errorMessage(e)}`, { cause: e })
    }
  }

  topicPeers (topic: string): string[] {
    return this.libp2p.services.pubsub.getSubscribers(topic).map(p => p.toString())
  }

  async putValue (key: string | Uint8Array, value: Uint8Array, opts: TimeoutOptions = {}): Promise<void> {
    this.assertStarted()
    const k = dhtKeyBytes(key)
    await withDeadline(opts.timeoutMs ?? this.defaultTimeoutMs, opts.signal, async d => {
      try {
        await raceAbort(this.libp2p.contentRouting.put(k, value, { signal: fanOut(d.signal) }), d.signal)
      } catch (e) {
        throw this.dhtError(e, 'DHT put', d)
      }
    })
  }

  async getValue (key: string | Uint8Array, opts: TimeoutOptions = {}): Promise<Uint8Array> {
    this.assertStarted()
    const k = dhtKeyBytes(key)
    return await withDeadline(opts.timeoutMs ?? this.defaultTimeoutMs, opts.signal, async d => {
      try {
        return await raceAbort(this.libp2p.contentRouting.get(k, { signal: fanOut(d.signal) }), d.signal)
      } catch (e) {
        if (isNotFound(e)) {
          throw new RbtError(ErrorCode.NOT_FOUND, `DHT record ${new TextDecoder().decode(k)} not found`, { cause: e })
        }
        throw this.dhtError(e, 'DHT get', d)
      }
    })
  }

  async provide (cid: string | CID, opts: TimeoutOptions = {}): Promise<void> {
    this.assertStarted()
    const c = parseCid(cid)
    await withDeadline(opts.timeoutMs ?? this.defaultTimeoutMs, opts.signal, async d => {
      try {
        await raceAbort(this.libp2p.contentRouting.provide(c, { signal: fanOut(d.signal) }), d.signal)
      } catch (e) {
        throw this.dhtError(e, `DHT provide ${c.toString()}`, d)
      }
    })
  }

  async findProviders (cid: string | CID, opts: FindProvidersOptions = {}): Promise<ProviderInfo[]> {
    this.assertStarted()
    const c = parseCid(cid)
    const limit = opts.limit ?? 20
    const found = new Map<string, ProviderInfo>()
    const d = deadline(opts.timeoutMs ?? this.defaultTimeoutMs, opts.signal)
    const it = this.libp2p.contentRouting.findProviders(c, { signal: fanOut(d.signal) })[Symbol.asyncIterator]()
    try {
      for (let n = await raceAbort(it.next(), d.signal); n.done !== true; n = await raceAbort(it.next(), d.signal)) {
        const p = n.value
        const id = p.id.toString()
        const prev = found.get(id)
        const addrs = p.multiaddrs.map(m => m.toString())
        found.set(id, { peerId: id, multiaddrs: [...new Set([...(prev?.multiaddrs ?? []), ...addrs])] })
        if (found.size >= limit) break
      }
    } catch (e) {
      // Running out of time is normal for a search: return what was found so far.
      if (!d.timedOut()) throw this.dhtError(e, `DHT findProviders ${c.toString()}`, d)
    } finally {
      d.clear()
      it.return?.().catch(() => {}) // not awaited: a search stuck in next() would never settle
    }
    return [...found.values()]
  }

  private dhtError (e: unknown, op: string, d: { timedOut: () => boolean, ms: number }): RbtError {
    if (e instanceof RbtError) return e
    if (d.timedOut()) return new RbtError(ErrorCode.TIMEOUT, `${op}: no result within ${d.ms} ms`, { cause: e })
    return new RbtError(ErrorCode.PEER_UNREACHABLE, `${op} failed: ${errorMessage(e)}`, { cause: e })
  }

  closestKnownPeers (key: Uint8Array, count: number): string[] {
    const target = kadKey(key)
    // The routing table's closest and every connected peer, ordered together: a connected peer the
    // table does not hold (yet) may be closer than the ones it names.
    const known = new Map<string, Uint8Array>()
    for (const p of this.routingTable?.closestPeers?.(target, { count }) ?? []) known.set(p.toString(), kadPeerKey(p.toString()))
    for (const p of this.connected) if (!known.has(p) && !this.foreign.has(p)) known.set(p, kadPeerKey(p))
    return [...known].sort((a, b) => compareDistance(target, a[1], b[1])).slice(0, count).map(([p]) => p)
  }

  /** Peer-store reads decode the whole record; record walks ask for the same few peers' addresses many times a second. */
  private readonly addrCache = new Map<string, { addrs: string[], until: number }>()

  async peerAddresses (peerId: string): Promise<string[]> {
    const now = Date.now()
    const hit = this.addrCache.get(peerId)
    if (hit !== undefined && hit.until > now) return hit.addrs
    let addrs: string[] = []
    try {
      const peer = await this.libp2p.peerStore.get(peerIdFromString(peerId))
      addrs = peer.addresses.map((a) => a.multiaddr.toString())
    } catch {}
    if (this.addrCache.size >= 4096) this.addrCache.clear()
    this.addrCache.set(peerId, { addrs, until: now + ADDR_CACHE_MS })
    return addrs
  }

  async learnPeer (peer: QueryPeer): Promise<void> {
    if (peer.peerId === this.peerId || peer.multiaddrs.length === 0 || this.connected.has(peer.peerId)) return
    let id: PeerId
    const addrs: Multiaddr[] = []
    try {
      id = peerIdFromString(peer.peerId)
      for (const a of peer.multiaddrs.slice(0, 16)) addrs.push(multiaddr(a))
    } catch { return }
    const kept = this.peerInfoMapper({ id, multiaddrs: addrs }).multiaddrs
    if (kept.length > 0) await this.libp2p.peerStore.merge(id, { multiaddrs: kept }).catch(() => {})
  }

  dhtPeerCount (): number {
    return this.routingTable?.size ?? 0
  }

  /** The DHT's routing table (a public field of the Kad-DHT service, not part of its typed interface). */
  private get routingTable (): RoutingTableView | undefined {
    return (this.libp2p.services.dht as unknown as { routingTable?: RoutingTableView }).routingTable
  }

  private peerSign: ((data: Uint8Array) => Promise<Uint8Array>) | undefined

  async signAsPeer (data: Uint8Array): Promise<Uint8Array> {
    if (this.privateKey === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'this host has no identity key to sign with')
    this.peerSign ??= peerSigner(this.privateKey)
    return await this.peerSign(data)
  }

  isForeignPeer (peerId: string): boolean {
    return this.foreign.has(peerId)
  }

  onForeignPeer (listener: (peerId: string) => void): () => void {
    this.foreignListeners.add(listener)
    return () => { this.foreignListeners.delete(listener) }
  }

  onPeerConnect (listener: (peerId: string) => void): () => void {
    const fn = (evt: CustomEvent<PeerId>): void => { listener(evt.detail.toString()) }
    this.libp2p.addEventListener('peer:connect', fn)
    return () => { this.libp2p.removeEventListener('peer:connect', fn) }
  }

  onPeerDisconnect (listener: (peerId: string) => void): () => void {
    const fn = (evt: CustomEvent<PeerId>): void => { listener(evt.detail.toString()) }
    this.libp2p.addEventListener('peer:disconnect', fn)
    return () => { this.libp2p.removeEventListener('peer:disconnect', fn) }
  }

  async handleProtocol (protocol: string, handler: ProtocolHandler, opts: ProtocolHandlerOptions = {}): Promise<void> {
    const o: StreamHandlerOptions = {}
    if (opts.maxInboundStreams !== undefined) o.maxInboundStreams = opts.maxInboundStreams
    if (opts.maxOutboundStreams !== undefined) o.maxOutboundStreams = opts.maxOutboundStreams
    await this.libp2p.handle(protocol, handler, o)
  }

  async unhandleProtocol (protocol: string): Promise<void> {
    await this.libp2p.unhandle(protocol)
  }

  async openStream (peerId: string, protocol: string, opts: { signal: AbortSignal }): Promise<Stream> {
    this.assertStarted()
    const id = parsePeerId(peerId)
    if (id.equals(this.libp2p.peerId)) throw new RbtError(ErrorCode.INVALID_INPUT, `cannot open ${protocol} to ourselves`)
    // raced as well: a dial that ignores its signal must not hold the caller past the deadline
    const opening = this.libp2p.dialProtocol(id, protocol, { signal: opts.signal })
    try {
      return await raceAbort(opening, opts.signal)
    } catch (e) {
      if (opts.signal.aborted) opening.then((late) => { late.abort(new Error('opened after its deadline')) }, () => {})
      throw e
    }
  }
}
