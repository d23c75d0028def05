import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { CID } from 'multiformats/cid'
import { sha256 } from 'multiformats/hashes/sha2'
import * as raw from 'multiformats/codecs/raw'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey, peerIdFromString } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { IDONTWANT_MIN_BYTES, createP2pHost, gossipFastId, type P2pHost } from '../../src/p2p/host.js'
import { defaultSwarmKeyPath, loadSwarmKeySync } from '../../src/p2p/swarm-key.js'
import { compareDistance, kadKey, kadPeerKey } from '../../src/p2p/closest-query.js'
import { freePort } from '../helpers/ports.js'
import { connect, startHosts, stopAll, waitFor, expectRbtError, testSwarmKey } from './helpers.js'


describe('p2p/host', function () {
  this.timeout(15_000)

  describe('two hosts, same swarm key', () => {
    let a: P2pHost, b: P2pHost
    before(async () => { [a, b] = await startHosts(2) })
    after(async () => { await stopAll([a, b]) })

    it('reports full multiaddrs ending in /p2p/<id>', () => {
      const addrs = a.multiaddrs()
      expect(addrs.length).to.be.greaterThan(0)
      for (const m of addrs) expect(m).to.match(new RegExp(`^/ip4/127\\.0\\.0\\.1/tcp/\\d+/p2p/${a.peerId}$`))
    })

    it('connects, fires onPeerConnect and lists the peer', async () => {
      const seen: string[] = []
      const off = b.onPeerConnect(p => { seen.push(p) })
      const remote = await a.dial(b.multiaddrs()[0])
      expect(remote).to.equal(b.peerId)
      await waitFor('b to see a connect', () => seen.includes(a.peerId))
      off()
      expect(a.connectedPeers()).to.include(b.peerId)
      expect(b.isConnected(a.peerId)).to.equal(true)
    })

    it('pings over libp2p and returns a round-trip time', async () => {
      const rtt = await a.ping(b.peerId)
      expect(rtt).to.be.a('number')
      expect(rtt).to.be.at.least(0).and.below(5000)
      expect(await b.ping(a.peerId)).to.be.a('number')
    })

    it('names an unknown peer in a clear error', async () => {
      const stranger = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
      const err = await expectRbtError(a.ping(stranger, { timeoutMs: 2000 }), ErrorCode.PEER_UNREACHABLE)
      expect(err.message).to.contain(stranger)
      await expectRbtError(a.ping('not-a-peer-id'), ErrorCode.INVALID_PEER_ID)
      await expectRbtError(a.dial('/not/a/multiaddr'), ErrorCode.INVALID_MULTIADDR)
    })

    it('a peer dialled by its address while it was down is reached by peer id once it is up', async () => {
      // as a bootstrap peer that was restarting when the node started: the dial fails, and later
      // requests by peer id said "no known address" (nothing else had taught the address)
      const key = await generateKeyPair('Ed25519')
      const id = peerIdFromPrivateKey(key).toString()
      const port = await freePort()
      await expectRbtError(a.dial(`/ip4/127.0.0.1/tcp/${port}/p2p/${id}`, { timeoutMs: 2000 }), ErrorCode.PEER_UNREACHABLE)
      const late = await createP2pHost({ swarmKey: testSwarmKey, privateKey: key, listen: [`/ip4/127.0.0.1/tcp/${port}`] })
      await late.start()
      try {
        expect(await a.ping(id, { timeoutMs: 5000 })).to.be.a('number')
      } finally { await late.stop() }
    })

    it('a closed port is PEER_UNREACHABLE within the deadline', async () => {
      const stranger = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
      const t0 = Date.now()
      await expectRbtError(a.dial(`/ip4/127.0.0.1/tcp/1/p2p/${stranger}`, { timeoutMs: 2000 }), ErrorCode.PEER_UNREACHABLE)
      expect(Date.now() - t0).to.be.below(2500)
    })

    it('delivers gossipsub messages from A to B', async () => {
      const topic = 'rbt-test-topic'
      const got: Array<{ data: string, from?: string }> = []
      const off = b.subscribe(topic, m => { got.push({ data: new TextDecoder().decode(m.data), ...(m.from !== undefined ? { from: m.from } : {}) }) })
      a.subscribe(topic, () => {})
      await waitFor('A to see B subscribed', () => a.topicPeers(topic).includes(b.peerId))
      // the mesh forms on the next heartbeat; publish until one arrives rather than sleeping
      await waitFor('message at B', async () => {
        await a.publish(topic, new TextEncoder().encode('hello'))
        return got.length > 0
      }, 5000, 150)
      expect(got[0].data).to.equal('hello')
      expect(got[0].from).to.equal(a.peerId)
      off()
    })

    it('publishing with no subscribers is allowed (single-node networks)', async () => {
      expect(await a.publish('nobody-listens', new Uint8Array([1]))).to.equal(0)
    })
  })

  describe('private network', () => {
    let a: P2pHost, outsider: P2pHost
    before(async () => {
      [a] = await startHosts(1)
      outsider = await createP2pHost({ swarmKey: loadSwarmKeySync(defaultSwarmKeyPath(false)) })
      await outsider.start()
    })
    after(async () => { await stopAll([a, outsider]) })

    it('a host with a different swarm key cannot connect', async () => {
      // Depending on where the garbled handshake stalls, the dialler sees a reset or its deadline.
      const t0 = Date.now()
      for (const [from, to] of [[outsider, a], [a, outsider]]) {
        try {
          await from.dial(to.multiaddrs()[0], { timeoutMs: 2000 })
          expect.fail('dial across swarm keys must fail')
        } catch (e) {
          expect(e).to.be.instanceOf(RbtError)
          expect([ErrorCode.PEER_UNREACHABLE, ErrorCode.TIMEOUT]).to.include((e as RbtError).code)
          expect((e as RbtError).message).to.contain(to.peerId).and.contain('swarm key')
        }
      }
      expect(Date.now() - t0).to.be.below(4600)
      expect(a.connectedPeers()).to.not.include(outsider.peerId)
      expect(outsider.connectedPeers()).to.not.include(a.peerId)
    })
  })

  describe('DHT over a line A - B - C', () => {
    let a: P2pHost, b: P2pHost, c: P2pHost
    before(async () => {
      [a, b, c] = await startHosts(3)
      await connect(a, b)
      await connect(b, c)
      await waitFor('routing tables', () => a.dhtPeerCount() >= 1 && b.dhtPeerCount() >= 2 && c.dhtPeerCount() >= 1)
    })
    after(async () => { await stopAll([a, b, c]) })

    it('a value put on A is found from C', async () => {
      expect(a.isConnected(c.peerId)).to.equal(false)
      const value = new TextEncoder().encode(JSON.stringify({ did: 'bafy-test', peer: a.peerId }))
      await a.putValue('/rbt/did/bafy-test', value, { timeoutMs: 5000 })
      const got = await c.getValue('/rbt/did/bafy-test', { timeoutMs: 5000 })
      expect(new TextDecoder().decode(got)).to.equal(new TextDecoder().decode(value))
    })

    it('a missing record is NOT_FOUND, a key without namespace is INVALID_INPUT', async () => {
      await expectRbtError(c.getValue('/rbt/did/nobody', { timeoutMs: 5000 }), ErrorCode.NOT_FOUND)
      await expectRbtError(c.getValue('no-namespace'), ErrorCode.INVALID_INPUT)
    })

    it('provide on A, findProviders from C', async () => {
      const cid = CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode('token-state-1')))
      await a.provide(cid, { timeoutMs: 5000 })
      const providers = await c.findProviders(cid.toString(), { timeoutMs: 5000, limit: 1 })
      expect(providers.map(p => p.peerId)).to.include(a.peerId)
      const none = await c.findProviders(CID.createV1(raw.code, await sha256.digest(new Uint8Array([9]))), { timeoutMs: 1500 })
      expect(none).to.deep.equal([])
    })
  })

  it('still hears a late joiner after many peers on the same machine came and went (gossip scores no longer count loopback peers as one colocated Sybil group)', async function () {
    this.timeout(60_000)
    const topic = 'rbt-colocation-topic'
    const [hub] = await startHosts(1)
    const extra: P2pHost[] = []
    try {
      const got: string[] = []
      hub.subscribe(topic, m => { got.push(new TextDecoder().decode(m.data)) })
      // gossipsub keeps the score of a departed peer (and its IP) for an hour: 14 short-lived
      // peers from 127.0.0.1 are enough to push every further one below the graylist threshold
      for (let i = 0; i < 14; i++) {
        const [p] = await startHosts(1)
        extra.push(p)
        p.subscribe(topic, () => {})
        await connect(p, hub)
        await waitFor('hub to see the peer subscribed', () => hub.topicPeers(topic).includes(p.peerId))
        await p.stop()
      }
      const [late] = await startHosts(1)
      extra.push(late)
      late.subscribe(topic, () => {})
      await connect(late, hub)
      await waitFor('a message from the late joiner at the hub', async () => {
        await late.publish(topic, new TextEncoder().encode('late'))
        return got.includes('late')
      }, 8000, 200)
    } finally {
      await stopAll([hub, ...extra])
    }
  })

  it('tells mesh peers IDONTWANT only for large gossip messages', async () => {
    const topic = 'rbt-idontwant-topic'
    const hosts = await startHosts(3)
    try {
      await connect(hosts[0]!, hosts[1]!)
      await connect(hosts[1]!, hosts[2]!)
      await connect(hosts[0]!, hosts[2]!)
      const got = hosts.map(() => [] as number[])
      hosts.forEach((h, i) => h.subscribe(topic, (m) => { got[i]!.push(m.data.length) }))
      await waitFor('meshes', () => hosts.every((h) => h.topicPeers(topic).length === 2), 10_000)
      // counted where gossipsub decides to send them
      let told = 0
      for (const h of hosts) {
        const gs = h.libp2p.services.pubsub as unknown as { sendIDontWants: (...a: unknown[]) => unknown }
        const send = gs.sendIDontWants.bind(gs)
        gs.sendIDontWants = (...a: unknown[]) => { told++; return send(...a) }
      }
      // an announcement-sized message (the library's default threshold is 512 bytes)
      await hosts[0]!.publish(topic, new Uint8Array(2048).fill(1))
      await waitFor('the small message', () => got[1]!.length === 1 && got[2]!.length === 1, 10_000)
      expect(told, 'no IDONTWANT for 2 KB').to.equal(0)
      await hosts[0]!.publish(topic, new Uint8Array(IDONTWANT_MIN_BYTES).fill(2))
      await waitFor('the large message', () => got[1]!.length === 2 && got[2]!.length === 2, 10_000)
      expect(told, 'IDONTWANT from each receiver of a large message').to.be.at.least(2)
    } finally {
      await stopAll(hosts)
    }
  })

  it('the gossip de-duplication key separates origin, sequence number and topic', () => {
    const m = { from: new Uint8Array([1, 2, 3]), seqno: new Uint8Array([0, 0, 0, 7]), topic: 't' }
    expect(gossipFastId(m)).to.equal(gossipFastId({ ...m, from: new Uint8Array([1, 2, 3]) }))
    expect(gossipFastId({ ...m, seqno: new Uint8Array([0, 0, 0, 8]) })).to.not.equal(gossipFastId(m))
    expect(gossipFastId({ ...m, from: new Uint8Array([1, 2, 4]) })).to.not.equal(gossipFastId(m))
    expect(gossipFastId({ ...m, topic: 'u' })).to.not.equal(gossipFastId(m))
    // a view into a larger buffer is keyed by its own bytes only
    const big = new Uint8Array([9, 1, 2, 3, 9])
    expect(gossipFastId({ ...m, from: big.subarray(1, 4) })).to.equal(gossipFastId(m))
  })

  it('names the known peers closest to a key, their addresses, and keeps addresses learned for a stranger', async () => {
    const hs = await startHosts(4)
    try {
      for (const h of hs.slice(1)) await connect(hs[0]!, h)
      const key = new TextEncoder().encode('/rbt/spent/QmKey')
      const target = kadKey(key)
      const got = hs[0]!.closestKnownPeers(key, 20)
      expect([...got].sort()).to.deep.equal(hs.slice(1).map((h) => h.peerId).sort())
      for (let i = 1; i < got.length; i++) expect(compareDistance(target, kadPeerKey(got[i - 1]!), kadPeerKey(got[i]!))).to.be.below(0)
      expect(hs[0]!.closestKnownPeers(key, 2)).to.deep.equal(got.slice(0, 2))
      expect(await hs[0]!.peerAddresses(hs[1]!.peerId)).to.include(hs[1]!.multiaddrs()[0]!.replace(`/p2p/${hs[1]!.peerId}`, ''))
      // hs[1] is not connected to hs[3]: told its addresses, it dials it by peer id
      await hs[1]!.learnPeer({ peerId: hs[3]!.peerId, multiaddrs: hs[3]!.multiaddrs() })
      expect(await hs[1]!.ping(hs[3]!.peerId, { timeoutMs: 5000 })).to.be.a('number')
      await hs[1]!.learnPeer({ peerId: 'not-a-peer', multiaddrs: ['/not/an/addr'] })
      // the addresses are answered from memory, and a change in the peer store shows at once
      const before = await hs[0]!.peerAddresses(hs[2]!.peerId)
      const extra = '/ip4/127.0.0.2/tcp/4999'
      expect(before).to.not.include(extra)
      await hs[0]!.libp2p.peerStore.merge(peerIdFromString(hs[2]!.peerId), { multiaddrs: [multiaddr(extra)] })
      await waitFor('the new address', async () => (await hs[0]!.peerAddresses(hs[2]!.peerId)).includes(extra))
    } finally {
      await stopAll(hs)
    }
  })

  it('orders the routing table\'s peers and the connected ones together by distance', async () => {
    const hs = await startHosts(4)
    try {
      for (const h of hs.slice(1)) await connect(hs[0]!, h)
      await waitFor('routing table', () => hs[0]!.dhtPeerCount() === 3, 10_000)
      const key = new TextEncoder().encode('/rbt/spent/QmOrder')
      const target = kadKey(key)
      const byDistance = hs.slice(1).map((h) => h.peerId).sort((a, b) => compareDistance(target, kadPeerKey(a), kadPeerKey(b)))
      // the table keeps only the farthest peer; the two closer ones are connected but not in it
      const table = (hs[0]!.libp2p.services.dht as unknown as { routingTable: { remove: (p: unknown) => Promise<void> } }).routingTable
      for (const h of hs.slice(1)) if (h.peerId !== byDistance[2]) await table.remove(h.libp2p.peerId)
      expect(hs[0]!.dhtPeerCount()).to.equal(1)
      expect(hs[0]!.closestKnownPeers(key, 2)).to.deep.equal(byDistance.slice(0, 2))
      expect(hs[0]!.closestKnownPeers(key, 20)).to.deep.equal(byDistance)
    } finally {
      await stopAll(hs)
    }
  })

  it('a lone host answers DHT operations from its own store without waiting for peers', async () => {
    const [h] = await startHosts(1)
    try {
      const t0 = Date.now()
      await h.putValue('/rbt/did/alone', new Uint8Array([7]))
      expect([...await h.getValue('/rbt/did/alone')]).to.deep.equal([7])
      await expectRbtError(h.getValue('/rbt/did/nobody'), ErrorCode.NOT_FOUND)
      const cid = CID.createV1(raw.code, await sha256.digest(new Uint8Array([1, 2, 3])))
      await h.provide(cid)
      expect((await h.findProviders(cid)).map(p => p.peerId)).to.deep.equal([h.peerId])
      expect(Date.now() - t0).to.be.below(2000)
    } finally {
      await h.stop()
    }
  })

  it('start/stop are guarded and stop is idempotent', async () => {
    const [h] = await startHosts(1)
    await expectRbtError(h.start(), ErrorCode.CONFLICT)
    await h.stop()
    await h.stop()
    expect(h.status).to.equal('stopped')
    await expectRbtError(h.ping(h.peerId), ErrorCode.NOT_RUNNING)
  })
  it('keeps its deadlines when libp2p ignores the abort signal (a stalled dial, DHT get or search no longer hangs the caller)', async () => {
    const [h] = await startHosts(1)
    const never = (): Promise<never> => new Promise(() => {})
    const lib = h.libp2p as unknown as Record<string, unknown> & { contentRouting: Record<string, unknown> }
    const saved = { dialProtocol: lib.dialProtocol, get: lib.contentRouting.get, findProviders: lib.contentRouting.findProviders }
    try {
      lib.dialProtocol = never
      lib.contentRouting.get = never
      lib.contentRouting.findProviders = () => ({ [Symbol.asyncIterator]: () => ({ next: never }) })
      const other = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
      const t0 = Date.now()
      let failed = false
      await h.openStream(other, '/rbt/test/1.0.0', { signal: AbortSignal.timeout(300) }).catch(() => { failed = true })
      expect(failed, 'openStream must fail at its deadline').to.equal(true)
      await expectRbtError(h.getValue('/rbt/did/stalled', { timeoutMs: 300 }), ErrorCode.TIMEOUT)
      const cid = CID.createV1(raw.code, await sha256.digest(new Uint8Array([4, 5, 6])))
      expect(await h.findProviders(cid, { timeoutMs: 300 })).to.deep.equal([])
      expect(Date.now() - t0).to.be.below(5000)
    } finally {
      Object.assign(lib, { dialProtocol: saved.dialProtocol })
      Object.assign(lib.contentRouting, { get: saved.get, findProviders: saved.findProviders })
      await h.stop()
    }
  })
})

describe('p2p host: DHT operations fan out without a listener warning', function () {
  this.timeout(60_000)

  it('a put to a dozen peers adds one abort listener per query path to its own signal and warns of nothing', async () => {
    const hs = await startHosts(14)
    const warnings: string[] = []
    const onWarning = (w: Error): void => { if (w.name === 'MaxListenersExceededWarning') warnings.push(w.message) }
    process.on('warning', onWarning)
    try {
      for (const h of hs.slice(1)) await connect(hs[0]!, h)
      for (const h of hs.slice(2)) await connect(hs[1]!, h)
      for (let i = 0; i < 3; i++) await hs[0]!.putValue(`/rbt/did/fan-${i}`, new Uint8Array([i]), { timeoutMs: 20_000 })
      await new Promise((resolve) => setImmediate(resolve))
      expect(warnings).to.deep.equal([])
    } finally {
      process.off('warning', onWarning)
      await stopAll(hs)
    }
  })
})
