import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { StreamState, YamuxStream } from '@chainsafe/libp2p-yamux/stream'
import type { Peer, PeerData, PeerId, PeerStore } from '@libp2p/interface'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { multiaddr } from '@multiformats/multiaddr'
import { waitFor } from './helpers.js'
import { corkWrites, lazyYamuxWindowUpdates, quietEmptyBuffer, quietLengthPrefixedDecoding, skipRedundantPeerMerges } from '../../src/p2p/stack-tuning.js'
import { LengthPrefixedDecoder } from '@libp2p/utils'
import { createServer, connect as tcpConnect, type Socket } from 'node:net'
import type { MessageStream } from '@libp2p/interface'

const WINDOW = 256 * 1024

interface Frame { flag: number, length: number }

/** A Yamux stream object with only the fields sendWindowUpdate reads, recording the frames it sends. */
function fakeStream (state: StreamState, consumed: number): { stream: YamuxStream, frames: Frame[] } {
  const frames: Frame[] = []
  const stream = Object.create(YamuxStream.prototype) as YamuxStream
  Object.assign(stream, {
    state,
    streamId: 1,
    recvWindow: WINDOW,
    recvWindowCapacity: WINDOW - consumed,
    maxStreamWindowSize: 16 * 1024 * 1024,
    epochStart: Date.now(),
    getRTT: () => -1,
    sendFrame: (f: Frame) => { frames.push(f) }
  })
  return { stream, frames }
}

/** Noise's frame prefix: a 2-byte big-endian length. */
const uint16 = (data: { length: number, get: (i: number) => number }): number => {
  if (data.length < 2) throw new RangeError('Could not decode int16BE')
  return data.get(0) * 256 + data.get(1)
}
const noiseFrame = (body: number[]): number[] => [body.length >> 8, body.length & 255, ...body]

/** A decoder as Noise builds one, counting how often its length reader saw an empty buffer or threw. */
function noiseDecoder (): { decoder: LengthPrefixedDecoder, calls: { empty: number, thrown: number } } {
  const calls = { empty: 0, thrown: 0 }
  const decoder = new LengthPrefixedDecoder({
    lengthDecoder: (data) => {
      const list = data instanceof Uint8Array ? { length: data.length, get: (i: number) => data[i]! } : { length: data.byteLength, get: (i: number) => data.get(i) }
      if (list.length === 0) calls.empty++
      try { return uint16(list) } catch (e) { calls.thrown++; throw e }
    },
    encodingLength: () => 2
  })
  return { decoder, calls }
}

const frames = (d: LengthPrefixedDecoder, chunk: number[]): number[][] => [...d.decode(Uint8Array.from(chunk))].map((f) => [...f.subarray()])

describe('p2p/stack-tuning', () => {
  describe('length-prefixed decoding', () => {
    it('reads the same frames without asking the length reader about an empty buffer', () => {
      const { decoder, calls } = noiseDecoder()
      quietEmptyBuffer(decoder as never)
      // two frames in one chunk, then a frame cut inside its prefix and inside its body
      expect(frames(decoder, [...noiseFrame([1, 2, 3]), ...noiseFrame([4])])).to.deep.equal([[1, 2, 3], [4]])
      const third = noiseFrame([5, 6, 7, 8])
      expect(frames(decoder, third.slice(0, 1))).to.deep.equal([])
      expect(frames(decoder, third.slice(1, 4))).to.deep.equal([])
      expect(frames(decoder, third.slice(4))).to.deep.equal([[5, 6, 7, 8]])
      expect(calls.empty, 'length reads of an empty buffer').to.equal(0)
      // only the one-byte prefix still ends the loop with an error, as before
      expect(calls.thrown).to.equal(1)
    })

    it('the stock decoder threw once per chunk that ended on a frame boundary', () => {
      const { decoder, calls } = noiseDecoder()
      // a host may have installed the change already: mark this decoder as done without changing it
      Object.assign(decoder, { [Symbol.for('rbtnode.lp.quietEmptyBuffer')]: true })
      for (let i = 0; i < 5; i++) expect(frames(decoder, noiseFrame([i]))).to.deep.equal([[i]])
      expect(calls.thrown).to.equal(5)
    })

    it('leaves alone a decoder whose zero-length prefix takes no bytes', () => {
      const read = (): number => 0
      const decoder = { lengthDecoder: read, encodingLength: () => 0 }
      quietEmptyBuffer(decoder)
      expect(decoder.lengthDecoder).to.equal(read)
    })

    it('is installed for every decoder of the process', () => {
      quietLengthPrefixedDecoding()
      quietLengthPrefixedDecoding()
      const { decoder, calls } = noiseDecoder()
      for (let i = 0; i < 5; i++) expect(frames(decoder, noiseFrame([i, i]))).to.deep.equal([[i, i]])
      expect(calls).to.deep.equal({ empty: 0, thrown: 0 })
    })
  })

  describe('Yamux window updates', () => {
    before(() => { lazyYamuxWindowUpdates() })

    it('an established stream that used less than half its window sends no update', () => {
      const { stream, frames } = fakeStream(StreamState.Established, 100)
      stream.sendWindowUpdate()
      expect(frames).to.deep.equal([])
    })

    it('once half the window is used it grants all of it back', () => {
      const { stream, frames } = fakeStream(StreamState.Established, WINDOW / 2)
      stream.sendWindowUpdate()
      expect(frames.map((f) => f.length)).to.deep.equal([WINDOW / 2])
      expect((stream as unknown as { recvWindowCapacity: number }).recvWindowCapacity).to.equal(WINDOW)
    })

    it('opening (SYN) and acknowledging (ACK) a stream still send their frame at once', () => {
      const opening = fakeStream(StreamState.Init, 0)
      opening.stream.sendWindowUpdate()
      expect(opening.frames).to.have.length(1)
      expect(opening.stream.state).to.equal(StreamState.SYNSent)
      const answering = fakeStream(StreamState.SYNReceived, 100)
      answering.stream.sendWindowUpdate()
      expect(answering.frames).to.have.length(1)
      expect(answering.stream.state).to.equal(StreamState.Established)
    })

    it('installing twice changes nothing', () => {
      const before = YamuxStream.prototype.sendWindowUpdate
      lazyYamuxWindowUpdates()
      expect(YamuxStream.prototype.sendWindowUpdate).to.equal(before)
    })
  })

  describe('socket writes', () => {
    it('writes made in one tick leave together, in order, once the tick is over', async () => {
      const received: Buffer[] = []
      let serverSide: Socket | undefined
      const server = createServer((s) => { serverSide = s; s.on('data', (d) => { received.push(d) }) })
      await new Promise<void>((resolve) => { server.listen(0, '127.0.0.1', resolve) })
      const port = (server.address() as { port: number }).port
      const socket = tcpConnect(port, '127.0.0.1')
      await new Promise<void>((resolve) => { socket.once('connect', () => { resolve() }) })
      try {
        const conn = { socket, sendData (data: Uint8Array[]) { for (const b of data) socket.write(b); return { sentBytes: 0, canSendMore: true } } }
        corkWrites(conn as unknown as MessageStream)
        conn.sendData([Buffer.from('ab')])
        expect(socket.writableCorked).to.equal(1)
        conn.sendData([Buffer.from('cd'), Buffer.from('ef')])
        expect(socket.writableCorked).to.equal(1)
        await new Promise((resolve) => setImmediate(resolve))
        expect(socket.writableCorked).to.equal(0)
        await waitFor('the bytes', () => Buffer.concat(received).toString() === 'abcdef', 3000)
        // a later tick gathers again
        conn.sendData([Buffer.from('gh')])
        expect(socket.writableCorked).to.equal(1)
        await waitFor('the next bytes', () => Buffer.concat(received).toString() === 'abcdefgh', 3000)
      } finally {
        socket.destroy()
        serverSide?.destroy()
        await new Promise((resolve) => server.close(resolve))
      }
    })

    it('leaves connections without a TCP socket alone', () => {
      const send = (): string => 'sent'
      const conn = { sendData: send }
      corkWrites(conn as unknown as MessageStream)
      expect(conn.sendData).to.equal(send)
    })
  })

  describe('peer-store merges', () => {
    /** A peer store keeping protocols and addresses, counting the calls that reach it. */
    function countingStore (): { store: PeerStore, writes: string[] } {
      const writes: string[] = []
      const peers = new Map<string, Peer>()
      const apply = (id: PeerId, data: PeerData, replace: boolean): Peer => {
        const old = peers.get(id.toString())
        const protocols = new Set(replace ? [] : old?.protocols ?? [])
        for (const p of data.protocols ?? []) protocols.add(p)
        const addrs = new Map((replace ? [] : old?.addresses ?? []).map((a) => [a.multiaddr.toString(), a]))
        for (const m of data.multiaddrs ?? []) addrs.set(m.toString(), { multiaddr: m, isCertified: false })
        for (const a of data.addresses ?? []) addrs.set(a.multiaddr.toString(), { multiaddr: a.multiaddr, isCertified: a.isCertified ?? false })
        const peer = { id, protocols: [...protocols], addresses: [...addrs.values()], metadata: new Map(), tags: new Map() } as unknown as Peer
        peers.set(id.toString(), peer)
        return peer
      }
      const store = {
        merge: async (id: PeerId, data: PeerData) => { writes.push('merge'); return apply(id, data, false) },
        patch: async (id: PeerId, data: PeerData) => { writes.push('patch'); return apply(id, data, true) },
        save: async (id: PeerId, data: PeerData) => { writes.push('save'); return apply(id, data, true) },
        delete: async (id: PeerId) => { writes.push('delete'); peers.delete(id.toString()) },
        consumePeerRecord: async () => { writes.push('record'); return true },
        getInfo: async (id: PeerId) => {
          writes.push('info')
          const p = peers.get(id.toString())
          if (p === undefined) throw Object.assign(new Error('not found'), { name: 'NotFoundError' })
          return { id, multiaddrs: p.addresses.map((a) => a.multiaddr) }
        }
      } as unknown as PeerStore
      return { store, writes }
    }

    let peer: PeerId
    before(async () => { peer = peerIdFromPrivateKey(await generateKeyPair('Ed25519')) })

    it('a merge bringing only known protocols and addresses does not write', async () => {
      const { store, writes } = countingStore()
      skipRedundantPeerMerges(store)
      const addr = multiaddr('/ip4/127.0.0.1/tcp/4001')
      await store.merge(peer, { protocols: ['/rbt/kad/1.0.0'], multiaddrs: [addr] })
      for (let i = 0; i < 10; i++) await store.merge(peer, { protocols: ['/rbt/kad/1.0.0'] })
      const back = await store.merge(peer, { multiaddrs: [multiaddr('/ip4/127.0.0.1/tcp/4001')] })
      expect(writes).to.deep.equal(['merge'])
      expect(back.protocols).to.deep.equal(['/rbt/kad/1.0.0'])
    })

    it('anything new, other fields, or an old record goes through', async () => {
      let t = 0
      const { store, writes } = countingStore()
      skipRedundantPeerMerges(store, { now: () => t, refreshMs: 1000 })
      await store.merge(peer, { protocols: ['/a/1.0.0'] })
      await store.merge(peer, { protocols: ['/b/1.0.0'] })
      await store.merge(peer, { multiaddrs: [multiaddr('/ip4/127.0.0.1/tcp/1')] })
      await store.merge(peer, { protocols: ['/a/1.0.0'], metadata: { k: new Uint8Array([1]) } })
      await store.merge(peer, { addresses: [{ multiaddr: multiaddr('/ip4/127.0.0.1/tcp/1'), isCertified: true }] })
      t = 1000
      await store.merge(peer, { protocols: ['/a/1.0.0'] })
      expect(writes).to.have.length(6)
    })

    it('getInfo answers are reused briefly and dropped at a write for that peer', async () => {
      let t = 0
      const { store, writes } = countingStore()
      skipRedundantPeerMerges(store, { now: () => t })
      await store.merge(peer, { multiaddrs: [multiaddr('/ip4/127.0.0.1/tcp/1')] })
      for (let i = 0; i < 5; i++) expect((await store.getInfo(peer)).multiaddrs.map(String)).to.deep.equal(['/ip4/127.0.0.1/tcp/1'])
      expect(writes.filter((w) => w === 'info')).to.have.length(1)
      await store.merge(peer, { multiaddrs: [multiaddr('/ip4/127.0.0.1/tcp/2')] })
      expect((await store.getInfo(peer)).multiaddrs.map(String)).to.have.members(['/ip4/127.0.0.1/tcp/1', '/ip4/127.0.0.1/tcp/2'])
      t += 2_000
      await store.getInfo(peer)
      expect(writes.filter((w) => w === 'info')).to.have.length(3)
    })

    it('after a patch that drops a protocol, merging it again writes it back', async () => {
      const { store, writes } = countingStore()
      skipRedundantPeerMerges(store)
      await store.merge(peer, { protocols: ['/a/1.0.0', '/b/1.0.0'] })
      await store.patch(peer, { protocols: ['/b/1.0.0'] })
      const p = await store.merge(peer, { protocols: ['/a/1.0.0'] })
      expect(writes).to.deep.equal(['merge', 'patch', 'merge'])
      expect(p.protocols).to.include('/a/1.0.0')
      await store.delete(peer)
      await store.merge(peer, { protocols: ['/b/1.0.0'] })
      expect(writes.slice(3)).to.deep.equal(['delete', 'merge'])
    })
  })
})
