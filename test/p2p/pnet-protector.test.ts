import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { connect as tcpConnect, type Socket } from 'node:net'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { noise } from '@chainsafe/libp2p-noise'
import { yamux } from '@chainsafe/libp2p-yamux'
import { xsalsa20 } from '@noble/ciphers/salsa.js'
import type { ConnectionProtector, Libp2p, MessageStream, Stream } from '@libp2p/interface'
import { ping, type Ping } from '@libp2p/ping'
import { preSharedKey } from '@libp2p/pnet'
import { tcp } from '@libp2p/tcp'
import { multiaddrConnectionPair } from '@libp2p/utils'
import { multiaddr } from '@multiformats/multiaddr'
import { createLibp2p } from 'libp2p'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { createP2pHost, type P2pHost } from '../../src/p2p/host.js'
import { PNET_NONCE_BYTES, XSalsa20Keystream, pnetProtector } from '../../src/p2p/pnet-protector.js'
import { jsSalsa20, nativeSalsa20, salsa20Core, type Salsa20Core } from '../../src/p2p/salsa20-core.js'
import { createHash } from 'node:crypto'
import { swarmKeyFromBytes, type SwarmKey } from '../../src/p2p/swarm-key.js'
import { startHosts, stopAll, testSwarmKey, waitFor } from './helpers.js'
import { withEnv } from '../helpers/env.js'
import { bytesOf, concat, echoHandler, echoRoundTrip, receive, sendChunked } from './byte-streams.js'

const MiB = 1024 * 1024
const ECHO = '/rbt-test/pnet-echo/1.0.0'
const SINK = '/rbt-test/pnet-sink/1.0.0'

/** Protects both ends of an in-memory connection pair, `a` on the outbound end, `b` on the inbound one. */
async function protectedPair (a: ConnectionProtector, b: ConnectionProtector): Promise<[MessageStream, MessageStream]> {
  const [outbound, inbound] = multiaddrConnectionPair()
  const [x, y] = await Promise.all([a.protect(outbound), b.protect(inbound)])
  return [x, y]
}

const ours = (key: SwarmKey = testSwarmKey): ConnectionProtector => pnetProtector({ swarmKey: key })()
const theirs = (key: SwarmKey = testSwarmKey): ConnectionProtector =>
  (preSharedKey({ psk: key.psk }) as unknown as () => ConnectionProtector)()

/** A bare libp2p node protected by @libp2p/pnet, serving an echo protocol and libp2p ping. */
async function referenceNode (key: SwarmKey): Promise<Libp2p<{ ping: Ping }>> {
  const node = await createLibp2p({
    addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
    transports: [tcp()],
    connectionEncrypters: [noise()],
    streamMuxers: [yamux()],
    connectionProtector: preSharedKey({ psk: key.psk }),
    services: { ping: ping() }
  })
  await node.handle(ECHO, echoHandler)
  return node
}

/** Reads everything, then answers with the byte count (a float64) and closes its end. */
async function sinkHandler (stream: Stream): Promise<void> {
  try {
    let n = 0
    for await (const chunk of stream) n += chunk.byteLength
    const answer = new Uint8Array(8)
    new DataView(answer.buffer).setFloat64(0, n)
    stream.send(answer)
    await stream.close()
  } catch (e) {
    stream.abort(e as Error)
  }
}

/** Records uncaught exceptions and unhandled rejections while a test runs. */
function trapUncaught (): { errors: unknown[], release: () => void } {
  const errors: unknown[] = []
  const onError = (e: unknown): void => { errors.push(e) }
  process.on('uncaughtException', onError)
  process.on('unhandledRejection', onError)
  return {
    errors,
    release: () => {
      process.off('uncaughtException', onError)
      process.off('unhandledRejection', onError)
    }
  }
}

/** A full garbage collection: global.gc under --expose-gc, else one turned on for this process. */
function collector (): (() => void) | undefined {
  const g = (globalThis as { gc?: () => void }).gc
  if (typeof g === 'function') return g
  try {
    setFlagsFromString('--expose-gc')
    const fn = runInNewContext('gc') as unknown
    return typeof fn === 'function' ? fn as () => void : undefined
  } catch {
    return undefined
  }
}

const otherKey = swarmKeyFromBytes(new Uint8Array(32).fill(0x5a))

describe('p2p/pnet-protector', function () {
  this.timeout(20_000)

  describe('keystream', () => {
    const key = randomBytes(32)
    const nonce = randomBytes(24)

    it('gives the same bytes over any chunking as one pass over the whole', () => {
      const data = randomBytes(3 * MiB + 1000)
      const whole = xsalsa20(key, nonce, data)
      const plans = [
        [1], [63], [64], [65], [MiB], [1, 63, 64, 65, MiB],
        [65, 1, MiB, 63, 64, 7], [MiB + 1, 3, 61, 128, 4095]
      ]
      for (const plan of plans) {
        const ks = new XSalsa20Keystream(key, nonce)
        const parts: Uint8Array[] = []
        // the 1-byte and small plans would take minutes over megabytes: cover their first 64 KiB
        const limit = Math.max(...plan) < 1024 ? 64 * 1024 : data.byteLength
        for (let at = 0, i = 0; at < limit; i++) {
          const end = Math.min(limit, at + plan[i % plan.length])
          parts.push(ks.apply(data.subarray(at, end), end - at))
          at = end
        }
        expect(Buffer.compare(concat(parts), whole.subarray(0, limit)), `chunks ${plan.join(',')}`).to.equal(0)
        expect(ks.position).to.equal(limit)
      }
    })

    it('gives the same bytes over random chunk sizes and misaligned inputs', () => {
      const data = randomBytes(2 * MiB)
      const whole = xsalsa20(key, nonce, data)
      for (let round = 0; round < 5; round++) {
        const ks = new XSalsa20Keystream(key, nonce)
        const parts: Uint8Array[] = []
        for (let at = 0; at < data.byteLength;) {
          const pick = Math.random()
          const size = pick < 0.3 ? 1 + Math.floor(Math.random() * 130) : pick < 0.9 ? 1 + Math.floor(Math.random() * 70_000) : MiB
          const end = Math.min(data.byteLength, at + size)
          // a list of segments, as the send queue hands them over, starting at odd offsets
          const cut = at + Math.floor((end - at) / 3)
          parts.push(ks.apply([data.subarray(at, cut), data.subarray(cut, end)], end - at))
          at = end
        }
        expect(Buffer.compare(concat(parts), whole)).to.equal(0)
      }
    })

    it('ends with a clear error where the 32-bit block counter would run out', () => {
      const ks = new XSalsa20Keystream(key, nonce)
      ;(ks as unknown as { block: number }).block = 2 ** 32 - 2
      expect(ks.apply(new Uint8Array(64), 64).byteLength).to.equal(64)
      expect(() => ks.apply(new Uint8Array(1), 1)).to.throw(/keystream exhausted/)
    })

    it('refuses keys and nonces of the wrong size', () => {
      expect(() => new XSalsa20Keystream(new Uint8Array(31), nonce)).to.throw(/32 bytes/)
      expect(() => new XSalsa20Keystream(key, new Uint8Array(8))).to.throw(/24 bytes/)
      expect(() => pnetProtector({ swarmKey: { key: new Uint8Array(16) } })).to.throw(/32 bytes/)
    })
  })

  describe('native and JavaScript Salsa20 cores', () => {
    const native = nativeSalsa20()
    before(function () {
      // the add-on ships binaries for the usual platforms; where it has none the fallback runs alone
      if (native === null) this.skip()
    })
    const cores = (): Array<[string, Salsa20Core]> => [['js', jsSalsa20], ['native', native!]]

    it('the default core is the native one, and RBTNODE_PNET_CIPHER=js keeps the JavaScript one', async () => {
      expect(salsa20Core().name).to.equal('native')
      await withEnv({ RBTNODE_PNET_CIPHER: 'js' }, () => {
        expect(salsa20Core().name).to.equal('js')
        expect(salsa20Core('native').name).to.equal('native')
      })
    })

    it('both give the known XSalsa20 keystream (NaCl\'s 4 MiB stream test: its SHA-256)', () => {
      const key = Buffer.from('1b27556473e985d462cd51197a9a46c76009549eac6474f206c4ee0844f68389', 'hex')
      const nonce = Buffer.from('69696ee955b62b73cd62bda875fc73d68219e0036b7a0b37', 'hex')
      for (const [name, core] of cores()) {
        const ks = new XSalsa20Keystream(key, nonce, core)
        expect(ks.coreName).to.equal(name)
        const out = ks.apply(new Uint8Array(4 * MiB), 4 * MiB)
        expect(createHash('sha256').update(out).digest('hex'), name)
          .to.equal('662b9d0e3463029156069b12f918691a98f7dfb2ca0393c96bbfc6b1fbd630a2')
      }
    })

    it('both give identical output for random keys, nonces, chunkings and odd offsets', () => {
      for (let round = 0; round < 8; round++) {
        const key = randomBytes(32)
        const nonce = randomBytes(24)
        const data = randomBytes(256 * 1024 + Math.floor(Math.random() * 4096))
        const whole = xsalsa20(key, nonce, data)
        for (const [name, core] of cores()) {
          const ks = new XSalsa20Keystream(key, nonce, core)
          const parts: Uint8Array[] = []
          for (let at = 0; at < data.byteLength;) {
            const pick = Math.random()
            const size = pick < 0.4 ? 1 + Math.floor(Math.random() * 130) : 1 + Math.floor(Math.random() * 40_000)
            const end = Math.min(data.byteLength, at + size)
            if (Math.random() < 0.5) {
              // in place, on a copy that starts at an odd byte of its buffer
              const mem = new Uint8Array(end - at + 3)
              const chunk = mem.subarray(1 + (at % 2), 1 + (at % 2) + end - at)
              chunk.set(data.subarray(at, end))
              ks.xor(chunk)
              parts.push(chunk.slice())
            } else {
              const cut = at + Math.floor((end - at) / 2)
              parts.push(ks.apply([data.subarray(at, cut), data.subarray(cut, end)], end - at))
            }
            at = end
          }
          expect(Buffer.compare(concat(parts), whole), `${name}, round ${round}`).to.equal(0)
        }
      }
    })

    it('agree at block counters past 2^31 (the counter crosses 32-bit signed range)', () => {
      const key = randomBytes(32)
      const nonce = randomBytes(8)
      const src = randomBytes(64 * 5 + 17)
      for (const counter of [2 ** 31 - 2, 2 ** 32 - 8]) {
        const a = new Uint8Array(src.byteLength)
        const b = new Uint8Array(src.byteLength)
        jsSalsa20.xor(key, nonce, src, a, counter)
        native!.xor(key, nonce, src, b, counter)
        expect(Buffer.compare(a, b), `counter ${counter}`).to.equal(0)
      }
    })

    it('a protected pair with the JavaScript core on one end and the native one on the other', async () => {
      const js = pnetProtector({ swarmKey: testSwarmKey, cipher: 'js' })()
      const nat = pnetProtector({ swarmKey: testSwarmKey, cipher: 'native' })()
      for (const [a, b] of [[js, nat], [nat, js]]) {
        const [x, y] = await protectedPair(a, b)
        const there = randomBytes(MiB + 333)
        const back = randomBytes(100_003)
        const gotThere = receive(y, there.byteLength)
        const gotBack = receive(x, back.byteLength)
        await Promise.all([sendChunked(x, there, [1, 63, 64, 65, 70_001]), sendChunked(y, back, [7, 99_999])])
        expect(Buffer.compare(await gotThere, there)).to.equal(0)
        expect(Buffer.compare(await gotBack, back)).to.equal(0)
        x.abort(new Error('done'))
      }
    })

    it('libp2p nodes over TCP, Noise and Yamux: one on the JavaScript core talks to one on the native core', async () => {
      const make = async (cipher: 'js' | 'native'): Promise<Libp2p<{ ping: Ping }>> => {
        const node = await createLibp2p({
          addresses: { listen: ['/ip4/127.0.0.1/tcp/0'] },
          transports: [tcp()],
          connectionEncrypters: [noise()],
          streamMuxers: [yamux()],
          connectionProtector: pnetProtector({ swarmKey: testSwarmKey, cipher }),
          services: { ping: ping() }
        })
        await node.handle(ECHO, echoHandler)
        return node
      }
      const js = await make('js')
      const nat = await make('native')
      try {
        for (const [from, to] of [[js, nat], [nat, js]]) {
          const stream = await from.dialProtocol(to.getMultiaddrs()[0], ECHO, { signal: AbortSignal.timeout(10_000) })
          const data = randomBytes(2 * MiB + 5)
          expect(Buffer.compare(await echoRoundTrip(stream, data, [65_536, 1, 300_000]), data)).to.equal(0)
          expect(await from.services.ping.ping(to.peerId)).to.be.a('number')
        }
      } finally {
        await js.stop()
        await nat.stop()
      }
    })
  })

  describe('wire compatibility with @libp2p/pnet', () => {
    for (const [name, a, b] of [
      ['ours dialling theirs', ours, theirs],
      ['theirs dialling ours', theirs, ours],
      ['ours on both ends', ours, ours]
    ] as const) {
      it(`${name}: bytes round-trip both ways`, async () => {
        const [x, y] = await protectedPair(a(), b())
        const there = randomBytes(MiB + 777)
        const back = randomBytes(300_001)
        const gotThere = receive(y, there.byteLength)
        const gotBack = receive(x, back.byteLength)
        await Promise.all([
          sendChunked(x, there, [1, 63, 64, 65, 4096, 70_001]),
          sendChunked(y, back, [65, 1, 99_999])
        ])
        expect(Buffer.compare(await gotThere, there)).to.equal(0)
        expect(Buffer.compare(await gotBack, back)).to.equal(0)
        // one end closes, the other sees its transport close
        await x.close()
        await waitFor('the far end to close', () => y.status === 'closed')
      })
    }

    it('puts the nonce, then XSalsa20 of the data under that nonce, on the wire', async () => {
      const [outbound, inbound] = multiaddrConnectionPair()
      const wire: Uint8Array[] = []
      inbound.addEventListener('message', (evt) => { wire.push(bytesOf(evt.data).slice()) })
      const protecting = ours().protect(outbound)
      // answer with a nonce of our own so that the protector finishes
      inbound.send(randomBytes(PNET_NONCE_BYTES))
      const conn = await protecting
      const data = randomBytes(1000)
      conn.send(data.subarray(0, 10))
      conn.send(data.subarray(10))
      await waitFor('all bytes on the wire', () => wire.reduce((n, w) => n + w.byteLength, 0) >= PNET_NONCE_BYTES + 1000)
      const all = concat(wire)
      const nonce = all.subarray(0, PNET_NONCE_BYTES)
      expect(Buffer.compare(all.subarray(PNET_NONCE_BYTES), xsalsa20(testSwarmKey.key, nonce, data))).to.equal(0)
      conn.abort(new Error('done'))
    })

    it('with different swarm keys the bytes arrive garbled', async () => {
      const [x, y] = await protectedPair(ours(), theirs(otherKey))
      const data = randomBytes(4096)
      const got = receive(y, data.byteLength)
      x.send(data)
      expect(Buffer.compare(await got, data)).to.not.equal(0)
      x.abort(new Error('done'))
    })
  })

  describe('hosts against a node using @libp2p/pnet', () => {
    let host: P2pHost
    let ref: Libp2p<{ ping: Ping }>
    let stranger: Libp2p<{ ping: Ping }>
    before(async () => {
      [host] = await startHosts(1)
      await host.handleProtocol(ECHO, echoHandler)
      ref = await referenceNode(testSwarmKey)
      stranger = await referenceNode(otherKey)
    })
    after(async () => {
      await stopAll([host])
      await ref?.stop()
      await stranger?.stop()
    })

    it('our host dials the reference node; 1 MiB echoes back intact', async () => {
      const remote = await host.dial(ref.getMultiaddrs()[0].toString())
      expect(remote).to.equal(ref.peerId.toString())
      const stream = await host.openStream(remote, ECHO, { signal: AbortSignal.timeout(10_000) })
      const data = randomBytes(MiB)
      expect(Buffer.compare(await echoRoundTrip(stream, data), data)).to.equal(0)
      expect(await host.ping(remote)).to.be.a('number')
    })

    it('the reference node dials our host; 1 MiB echoes back intact', async () => {
      await host.hangUp(ref.peerId.toString())
      await waitFor('the reference node to see the hang-up', () => ref.getConnections(host.libp2p.peerId).length === 0)
      const addr = multiaddr(host.multiaddrs()[0])
      const stream = await ref.dialProtocol(addr, ECHO, { signal: AbortSignal.timeout(10_000) })
      const data = randomBytes(MiB)
      expect(Buffer.compare(await echoRoundTrip(stream, data), data)).to.equal(0)
      expect(await ref.services.ping.ping(addr)).to.be.a('number')
    })

    it('a node with another swarm key cannot connect either way, and nothing crashes', async () => {
      const trap = trapUncaught()
      try {
        try {
          await host.dial(stranger.getMultiaddrs()[0].toString(), { timeoutMs: 2000 })
          expect.fail('dial across swarm keys must fail')
        } catch (e) {
          expect(e).to.be.instanceOf(RbtError)
          expect([ErrorCode.PEER_UNREACHABLE, ErrorCode.TIMEOUT]).to.include((e as RbtError).code)
        }
        let refused = false
        await stranger.dial(multiaddr(host.multiaddrs()[0]), { signal: AbortSignal.timeout(2000) }).catch(() => { refused = true })
        expect(refused).to.equal(true)
        expect(host.isConnected(stranger.peerId.toString())).to.equal(false)
        // both still serve their own network
        expect(await host.ping(ref.peerId.toString())).to.be.a('number')
        expect(trap.errors).to.deep.equal([])
      } finally {
        trap.release()
      }
    })
  })

  describe('errors stay on their connection', () => {
    let a: P2pHost, b: P2pHost
    before(async () => { [a, b] = await startHosts(2) })
    after(async () => { await stopAll([a, b]) })

    const port = (h: P2pHost): number => Number(/\/tcp\/(\d+)\//.exec(h.multiaddrs()[0])![1])

    /**
     * Opens a raw TCP socket to `h` and writes `bytes`, then ends the socket, resets it or leaves it
     * open; resolves once the socket is closed (by the host, when left open).
     */
    async function rawSession (h: P2pHost, bytes: Uint8Array, then: 'end' | 'reset' | 'leave'): Promise<{ closedMs: number }> {
      const t0 = Date.now()
      return await new Promise((resolve, reject) => {
        const s: Socket = tcpConnect(port(h), '127.0.0.1')
        const timer = setTimeout(() => { s.destroy(); reject(new Error('host kept the connection open')) }, 12_000)
        s.on('error', () => {}) // a reset is one of the expected outcomes
        s.on('data', () => {})
        s.on('close', () => { clearTimeout(timer); resolve({ closedMs: Date.now() - t0 }) })
        s.on('connect', () => {
          s.write(bytes, () => {
            if (then === 'end') s.end()
            if (then === 'reset') s.resetAndDestroy()
          })
        })
      })
    }

    it('a truncated nonce, an empty connection, garbage after a nonce and a reset mid-nonce each close only their connection', async () => {
      const trap = trapUncaught()
      try {
        const sessions = await Promise.all([
          rawSession(b, randomBytes(10), 'end'),
          rawSession(b, randomBytes(PNET_NONCE_BYTES + 64 * 1024), 'leave'),
          rawSession(b, new Uint8Array(0), 'end'),
          rawSession(b, randomBytes(10), 'reset'),
          rawSession(b, randomBytes(PNET_NONCE_BYTES + 3), 'end')
        ])
        for (const s of sessions) expect(s.closedMs).to.be.below(12_000)
        // a socket that sends nothing is dropped after the nonce deadline
        const silent = await new Promise<number>((resolve) => {
          const t0 = Date.now()
          const s = tcpConnect(port(b), '127.0.0.1')
          s.on('error', () => {})
          s.on('close', () => { resolve(Date.now() - t0) })
        })
        expect(silent).to.be.below(11_000)
        await a.dial(b.multiaddrs()[0])
        expect(await a.ping(b.peerId)).to.be.a('number')
        expect(trap.errors).to.deep.equal([])
      } finally {
        trap.release()
      }
    })

    it('a decryption that throws aborts that connection and nothing else', async () => {
      const trap = trapUncaught()
      try {
        const [x, y] = await protectedPair(ours(), ours())
        const [x2, y2] = await protectedPair(ours(), ours())
        const inbound = (y as unknown as { inbound: XSalsa20Keystream }).inbound
        inbound.apply = () => { throw new RangeError('injected cipher failure') }
        const closed = new Promise<Error | undefined>((resolve) => { y.addEventListener('close', (evt) => { resolve(evt.error) }) })
        const xClosed = new Promise<void>((resolve) => { x.addEventListener('close', () => { resolve() }) })
        x.send(randomBytes(100))
        const err = await closed
        expect(err?.message).to.equal('injected cipher failure')
        expect(y.status).to.equal('aborted')
        await xClosed
        // the other pair is untouched
        const data = randomBytes(5000)
        const got = receive(y2, data.byteLength)
        x2.send(data)
        expect(Buffer.compare(await got, data)).to.equal(0)
        await new Promise((resolve) => setTimeout(resolve, 20))
        expect(trap.errors).to.deep.equal([])
        x2.abort(new Error('done'))
      } finally {
        trap.release()
      }
    })

    it('an encryption that throws aborts that connection instead of throwing from send()', async () => {
      const trap = trapUncaught()
      try {
        const [x, y] = await protectedPair(ours(), ours())
        const outbound = (x as unknown as { outbound: XSalsa20Keystream }).outbound
        outbound.apply = () => { throw new RangeError('injected cipher failure') }
        const closed = new Promise<Error | undefined>((resolve) => { x.addEventListener('close', (evt) => { resolve(evt.error) }) })
        expect(() => x.send(randomBytes(100))).to.not.throw()
        expect((await closed)?.message).to.equal('injected cipher failure')
        await new Promise((resolve) => setTimeout(resolve, 20))
        expect(y.status).to.not.equal('open')
        expect(trap.errors).to.deep.equal([])
      } finally {
        trap.release()
      }
    })

    it('a nonce that never comes fails protect() within its deadline and aborts the connection', async () => {
      const [outbound] = multiaddrConnectionPair()
      const t0 = Date.now()
      try {
        await pnetProtector({ swarmKey: testSwarmKey, nonceTimeoutMs: 200 })().protect(outbound)
        expect.fail('protect must fail')
      } catch (e) {
        expect((e as Error).message).to.match(/no pnet nonce from the remote within 200 ms/)
      }
      expect(Date.now() - t0).to.be.below(2000)
      expect(outbound.status).to.equal('aborted')
    })

    it('the caller\'s signal ends the nonce wait too', async () => {
      const [outbound] = multiaddrConnectionPair()
      const ctrl = new AbortController()
      setTimeout(() => { ctrl.abort(new Error('caller gave up')) }, 50)
      try {
        await ours().protect(outbound, { signal: ctrl.signal })
        expect.fail('protect must fail')
      } catch (e) {
        expect((e as Error).message).to.contain('caller gave up')
      }
    })
  })

  describe('churn with large messages (regression: WebAssembly memory exhaustion)', function () {
    this.timeout(90_000)
    const CLIENTS = 4
    const CYCLES = 50 // per client: 200 connections opened and closed in all
    const STEADY_MESSAGES = 60

    /** Writes `count` messages on a stream to the sink, then checks the byte count it answers. */
    async function sinkSession (stream: Stream, message: Uint8Array, count: number, pauseMs = 0, more = () => true): Promise<number> {
      const reply: Uint8Array[] = []
      const reading = (async () => { for await (const r of stream) reply.push(bytesOf(r).slice()) })()
      let sent = 0
      while (sent < count && more()) {
        if (!stream.send(message)) await stream.onDrain()
        sent++
        if (pauseMs > 0) await new Promise((resolve) => setTimeout(resolve, pauseMs))
      }
      await stream.close()
      await reading
      expect(new DataView(concat(reply).buffer).getFloat64(0)).to.equal(sent * message.byteLength)
      return sent
    }

    it('200 connections opened and closed while 1 MiB messages flow: no uncaught error, bounded memory', async () => {
      const trap = trapUncaught()
      const gc = collector()
      const hosts: P2pHost[] = []
      try {
        for (let i = 0; i < CLIENTS + 2; i++) {
          const h = await createP2pHost({ swarmKey: testSwarmKey })
          await h.start()
          hosts.push(h)
        }
        const [server, steady, ...clients] = hosts
        await server.handleProtocol(SINK, sinkHandler)
        const message = randomBytes(MiB)
        const target = server.multiaddrs()[0]
        const signal = AbortSignal.timeout(80_000)

        // One long-lived connection carries a 1 MiB message every 100 ms on one stream. Its
        // window grows, and its frames reach the protector in chunks of about 1 MiB: with the
        // old cipher that first grew the shared WebAssembly memory, after which every other
        // connection's cipher (its view of the memory gone stale) grew it again on its next
        // chunk until it hit its ceiling.
        await steady.dial(target)
        let churning = true
        const steadyRun = sinkSession(await steady.openStream(server.peerId, SINK, { signal }), message, STEADY_MESSAGES, 100, () => churning)

        let baseline = 0
        let done = 0
        const cycle = async (c: P2pHost): Promise<void> => {
          await c.dial(target)
          await sinkSession(await c.openStream(server.peerId, SINK, { signal }), message, 1)
          await c.hangUp(server.peerId)
          done++
          if (done === CLIENTS * 5) {
            gc?.()
            baseline = process.memoryUsage().rss
          }
        }
        const t0 = Date.now()
        try {
          await Promise.all(clients.map(async (c) => { for (let i = 0; i < CYCLES; i++) await cycle(c) }))
        } finally {
          churning = false
        }
        const steadySent = await steadyRun
        const seconds = (Date.now() - t0) / 1000
        gc?.()
        const growthMb = (process.memoryUsage().rss - baseline) / MiB
        expect(done).to.equal(CLIENTS * CYCLES)
        expect(steadySent).to.be.greaterThan(1)
        expect(trap.errors).to.deep.equal([])
        // without a collector the heap may simply not have been swept yet
        expect(growthMb, `RSS grew ${growthMb.toFixed(1)} MB in ${seconds.toFixed(1)} s`).to.be.below(gc !== undefined ? 150 : 400)
      } finally {
        trap.release()
        await stopAll(hosts)
      }
    })
  })
})
