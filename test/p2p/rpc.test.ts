import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import type { P2pHost } from '../../src/p2p/host.js'
import { CHANNEL_METHOD, createRpc, PING_MESSAGE, type PagedSpec, type Rpc, type BuiltinMethods, type UnarySpec, type RpcContext } from '../../src/p2p/rpc.js'
import { parseRpcProtocolId, rpcProtocolId } from '../../src/p2p/protocol-id.js'
import { BINARY_FRAME_MARK, decodeFrame, decodeJson, encodeBinary, encodeJson, joinBinary } from '../../src/p2p/codec.js'
import { lpStream } from '@libp2p/utils'
import type { Stream } from '@libp2p/interface'
import { connect, startHosts, stopAll, waitFor, expectRbtError } from './helpers.js'

interface TestMethods {
  'test.echo': UnarySpec<{ text: string, bytes?: Uint8Array, repeat?: number }, { text: string, bytes?: Uint8Array, from: string, requestId: string }>
  'test.fail': UnarySpec<{ code: string, message: string }, never>
  'test.crash': UnarySpec<Record<string, never>, never>
  'test.hang': UnarySpec<Record<string, never>, never>
  'test.chunks': PagedSpec<{ totalBytes: number, pageBytes: number }, { seq: number, data: Uint8Array }>
  'test.pages-then-fail': PagedSpec<{ pages: number }, { n: number }>
  'test.endless': PagedSpec<Record<string, never>, { n: number }>
}

/** Deterministic content: byte i of the whole transfer is (i * 31 + 7) & 0xff. */
function chunk (offset: number, len: number): Uint8Array {
  const out = new Uint8Array(len)
  for (let i = 0; i < len; i++) out[i] = ((offset + i) * 31 + 7) & 0xff
  return out
}

function sha (parts: Uint8Array[]): string {
  const h = createHash('sha256')
  for (const p of parts) h.update(p)
  return h.digest('hex')
}


describe('p2p/protocol-id and codec', () => {
  it('builds and parses versioned protocol ids in one place', () => {
    expect(rpcProtocolId('did.resolve')).to.equal('/rbt/did.resolve/1.0.0')
    expect(rpcProtocolId('consensus.prepare', '2.1.0')).to.equal('/rbt/consensus.prepare/2.1.0')
    expect(parseRpcProtocolId('/rbt/did.resolve/1.0.0')).to.deep.equal({ method: 'did.resolve', version: '1.0.0' })
    expect(parseRpcProtocolId('/ipfs/ping/1.0.0')).to.equal(undefined)
    expect(parseRpcProtocolId('/rbt/kad/1.0.0')).to.equal(undefined)
    for (const bad of ['', 'a/b', 'kad', '.x', 'x.', 'has space']) expect(() => rpcProtocolId(bad)).to.throw(RbtError)
    expect(() => rpcProtocolId('ok', '1.0')).to.throw(RbtError)
  })

  it('carries bytes as base64 and restores them, including Buffers and nested arrays', () => {
    const v = { a: new Uint8Array([0, 1, 255]), b: [Buffer.from('hi')], c: { d: 'x', n: 3 } }
    const text = new TextDecoder().decode(encodeJson(v))
    expect(text).to.equal('{"a":{"$b64":"AAH/"},"b":[{"$b64":"aGk="}],"c":{"d":"x","n":3}}')
    const back = decodeJson(encodeJson(v)) as { a: Uint8Array, b: Uint8Array[] }
    expect(back.a).to.be.instanceOf(Uint8Array)
    expect([...back.a]).to.deep.equal([0, 1, 255])
    expect(new TextDecoder().decode(back.b[0])).to.equal('hi')
    expect(() => decodeJson(new TextEncoder().encode('{nope'))).to.throw(RbtError)
  })
})

describe('p2p/codec: binary frames', () => {
  it('carries byte strings raw after a JSON header and gives them back as views of the frame', () => {
    const big = chunk(0, 300_000)
    const v = { t: 'page', id: 'x', seq: 2, body: { cid: 'Qm', block: big, more: [Buffer.from('hi'), new Uint8Array(0)] } }
    const f = encodeBinary(v)
    // the byte strings are the very buffers given (not copies)
    expect(f.parts[1]).to.equal(big)
    expect(f.byteLength).to.equal(f.parts.reduce((n, p) => n + p.byteLength, 0))
    const bytes = joinBinary(f)
    expect(bytes[0]).to.equal(BINARY_FRAME_MARK)
    const back = decodeFrame(bytes) as typeof v
    expect(back.body.block).to.be.instanceOf(Uint8Array)
    expect(back.body.block.buffer).to.equal(bytes.buffer)
    expect(Buffer.compare(back.body.block, big)).to.equal(0)
    expect(new TextDecoder().decode(back.body.more[0])).to.equal('hi')
    // a small byte string is a copy of its own, not a view that would keep the frame alive
    expect(back.body.more[0].buffer).to.not.equal(bytes.buffer)
    expect(back.body.more[0].buffer.byteLength).to.equal(2)
    // from a Buffer too (what the stream hands over): plain Uint8Arrays, copies where small
    const fromBuffer = decodeFrame(Buffer.from(bytes)) as typeof v
    expect(Buffer.isBuffer(fromBuffer.body.block)).to.equal(false)
    expect(Buffer.isBuffer(fromBuffer.body.more[0])).to.equal(false)
    expect(fromBuffer.body.more[0].buffer.byteLength).to.equal(2)
    expect(back.body.more[1].byteLength).to.equal(0)
    expect(back.seq).to.equal(2)
    // a JSON frame still decodes through the same entry
    expect(decodeFrame(encodeJson({ a: new Uint8Array([1]) }))).to.deep.equal({ a: new Uint8Array([1]) })
  })

  it('a body with no byte string decodes the same in both forms, a string that names the keys included', () => {
    const v = { t: 'res', n: 1, body: { note: '{"$bin":[0,1]} and {"$b64":"AA=="}', list: [1, 'x', null, { bin: '$bin' }], deep: { a: { b: [true] } } } }
    expect(decodeJson(encodeJson(v))).to.deep.equal(v)
    expect(decodeFrame(joinBinary(encodeBinary(v)))).to.deep.equal(v)
    // with a byte string beside them: only the reference becomes bytes
    const w = { ...v, bytes: new Uint8Array([9, 8]) }
    expect(decodeJson(encodeJson(w))).to.deep.equal(w)
    expect(decodeFrame(joinBinary(encodeBinary(w)))).to.deep.equal(w)
  })

  it('encode the same bytes as JSON.stringify with a replacer would, and decode the same values as a reviver would, for random bodies', () => {
    // the codec as it was written first (a replacer and a reviver), kept here as the reference
    const refJson = (v: unknown): string => JSON.stringify(v, function (this: Record<string, unknown>, k: string, x: unknown) {
      const o = this[k]
      return o instanceof Uint8Array ? { $b64: Buffer.from(o).toString('base64') } : x
    })
    const refBinary = (v: unknown): string => {
      let at = 0
      return JSON.stringify(v, function (this: Record<string, unknown>, k: string, x: unknown) {
        const o = this[k]
        if (!(o instanceof Uint8Array)) return x
        const ref = { $bin: [at, o.byteLength] }
        at += o.byteLength
        return ref
      })
    }
    let seed = 7
    const rnd = (n: number): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed % n }
    const gen = (depth: number): unknown => {
      switch (rnd(depth > 3 ? 6 : 9)) {
        case 0: return rnd(1000) - 500
        case 1: return ['a', '$bin', '$b64', '{"$bin":[0,1]}', '', 'é✓'][rnd(6)]
        case 2: return [true, false, null][rnd(3)]
        case 3: return new Uint8Array(rnd(40)).map(() => rnd(256))
        case 4: return Buffer.from([rnd(256), rnd(256)])
        case 5: return new Date(rnd(1e9) * 1000)
        case 6: return Array.from({ length: rnd(4) }, () => gen(depth + 1))
        default: return Object.fromEntries(Array.from({ length: rnd(4) }, (_, i) => [['k', '__proto__', '$bin', 'x'][rnd(4)] + (i > 0 ? String(i) : ''), gen(depth + 1)]))
      }
    }
    for (let i = 0; i < 300; i++) {
      const v = { t: 'res', n: i, body: gen(0) }
      const json = encodeJson(v)
      expect(new TextDecoder().decode(json)).to.equal(refJson(v))
      const f = encodeBinary(v)
      expect(new TextDecoder().decode(f.parts[0].subarray(5))).to.equal(refBinary(v))
      // decoded: what a reviver gave (bytes where they were, a Date as its text)
      const back = JSON.parse(refJson(v), (_k, x: unknown) => x !== null && typeof x === 'object' && Object.keys(x).length === 1 && typeof (x as { $b64?: unknown }).$b64 === 'string' ? new Uint8Array(Buffer.from((x as { $b64: string }).$b64, 'base64')) : x) as unknown
      expect(decodeJson(json)).to.deep.equal(back)
      expect(decodeFrame(joinBinary(f))).to.deep.equal(back)
    }
  })

  it('a key named __proto__ stays an own property, and a bigint is refused as before', () => {
    const v = JSON.parse('{"__proto__":{"x":1},"b":2}') as Record<string, unknown>
    const w = { ...v, bytes: new Uint8Array([1]) }
    for (const back of [decodeJson(encodeJson(w)), decodeFrame(joinBinary(encodeBinary(w)))] as Array<Record<string, unknown>>) {
      expect(Object.getPrototypeOf(back)).to.equal(Object.prototype)
      expect(Object.keys(back)).to.include('__proto__')
    }
    // bytes under such a key: swapped on the way out and back without touching any prototype
    const under = JSON.parse('{"__proto__":{"a":1}}') as { __proto__: { a: unknown } }
    under.__proto__.a = new Uint8Array([5, 6])
    for (const back of [decodeJson(encodeJson(under)), decodeFrame(joinBinary(encodeBinary(under)))] as Array<{ __proto__: { a: unknown } }>) {
      expect(Object.getPrototypeOf(back)).to.equal(Object.prototype)
      expect(Object.prototype.hasOwnProperty.call(back, '__proto__')).to.equal(true)
      expect(back.__proto__.a).to.deep.equal(new Uint8Array([5, 6]))
    }
    expect(() => encodeJson({ a: [1, 2n] })).to.throw(RbtError, /bigint at "1"/)
    expect(() => encodeBinary({ a: 2n })).to.throw(RbtError, /bigint at "a"/)
  })

  it('refuses references outside the frame and truncated headers', () => {
    const bytes = joinBinary(encodeBinary({ b: new Uint8Array(10) }))
    expect(() => decodeFrame(bytes.subarray(0, bytes.byteLength - 1))).to.throw(RbtError, /out of the frame/)
    expect(() => decodeFrame(bytes.subarray(0, 3))).to.throw(RbtError)
    const head = new Uint8Array(bytes)
    new DataView(head.buffer).setUint32(1, 1_000_000)
    expect(() => decodeFrame(head)).to.throw(RbtError, /header/)
  })
})

describe('p2p/rpc', function () {
  this.timeout(15_000)
  let a: P2pHost, b: P2pHost, c: P2pHost
  let ra: Rpc<TestMethods & BuiltinMethods>, rb: Rpc<TestMethods & BuiltinMethods>
  let rc: Rpc<{ 'test.only-c': UnarySpec<Record<string, never>, { ok: boolean }> } & BuiltinMethods>
  let hangAborted = 0
  let endlessStopped = 0

  const handlers = {
    'test.echo': (req: { text: string, bytes?: Uint8Array, repeat?: number }, ctx: RpcContext) =>
      ({ ...req, text: req.text.repeat(req.repeat ?? 1), from: ctx.peerId, requestId: ctx.requestId }),
    'test.fail': (req: { code: string, message: string }): never => { throw new RbtError(req.code as ErrorCode, req.message) },
    'test.crash': (): never => { throw new Error('secret internal detail') },
    'test.hang': async (_req: Record<string, never>, ctx: RpcContext): Promise<never> => {
      return await new Promise<never>((_resolve, reject) => {
        ctx.signal.addEventListener('abort', () => { hangAborted++; reject(ctx.signal.reason) }, { once: true })
      })
    },
    'test.chunks': async function * (req: { totalBytes: number, pageBytes: number }) {
      let seq = 0
      for (let off = 0; off < req.totalBytes; off += req.pageBytes) {
        yield { seq: seq++, data: chunk(off, Math.min(req.pageBytes, req.totalBytes - off)) }
      }
    },
    'test.pages-then-fail': async function * (req: { pages: number }) {
      for (let n = 0; n < req.pages; n++) yield { n }
      throw new RbtError(ErrorCode.CHAIN_INVALID, 'block 3 does not link to block 2')
    },
    'test.endless': async function * () {
      try {
        for (let n = 0; ; n++) yield { n }
      } finally {
        endlessStopped++
      }
    }
  }

  before(async () => {
    [a, b, c] = await startHosts(3)
    ra = createRpc<TestMethods>({ host: a, handlers })
    rb = createRpc<TestMethods>({ host: b, handlers, maxFrameBytes: 512 * 1024 })
    rc = createRpc<{ 'test.only-c': UnarySpec<Record<string, never>, { ok: boolean }> }>({ host: c, handlers: { 'test.only-c': () => ({ ok: true }) } })
    await ra.start(); await rb.start(); await rc.start()
    await connect(a, b)
  })
  after(async () => { await stopAll([ra, rb, rc, a, b, c]) })

  it('answers the built-in rbt.ping', async () => {
    expect(await ra.call(b.peerId, 'rbt.ping', {})).to.deep.equal({ message: PING_MESSAGE })
    expect(ra.protocolId('rbt.ping')).to.equal('/rbt/rbt.ping/1.0.0')
    expect(ra.methods).to.include.members(['rbt.ping', 'test.echo', 'test.chunks'])
  })

  it('round-trips a request with bytes, the caller peer id and the request id', async () => {
    const res = await ra.call(b.peerId, 'test.echo', { text: 'hi', bytes: new Uint8Array([1, 2, 3]) }, { requestId: 'retry-42' })
    expect(res.text).to.equal('hi')
    expect(res.bytes).to.be.instanceOf(Uint8Array)
    expect([...(res.bytes ?? [])]).to.deep.equal([1, 2, 3])
    expect(res.from).to.equal(a.peerId)
    expect(res.requestId).to.equal('retry-42')
  })

  it('re-throws a handler RbtError with its code on the caller', async () => {
    const err = await expectRbtError(ra.call(b.peerId, 'test.fail', { code: ErrorCode.INSUFFICIENT_BALANCE, message: 'need 5 RBT' }), ErrorCode.INSUFFICIENT_BALANCE)
    expect(err.message).to.equal('need 5 RBT')
    expect(err.details).to.deep.include({ peer: b.peerId, method: 'test.fail', remote: true })
  })

  it('turns an unexpected handler exception into INTERNAL without leaking its message', async () => {
    const err = await expectRbtError(ra.call(b.peerId, 'test.crash', {}), ErrorCode.INTERNAL)
    expect(err.message).to.not.contain('secret')
  })

  it('a handler that never answers gives TIMEOUT within the deadline, and the handler is told', async () => {
    const before = hangAborted
    const t0 = Date.now()
    const err = await expectRbtError(ra.call(b.peerId, 'test.hang', {}, { timeoutMs: 300 }), ErrorCode.TIMEOUT)
    const took = Date.now() - t0
    expect(took).to.be.at.least(250).and.below(1500)
    expect(err.message).to.contain(b.peerId).and.contain('300 ms')
    await waitFor('server handler to see the abort', () => hangAborted > before, 3000)
  })

  it('an unknown peer gives PEER_UNREACHABLE naming it; a bad id gives INVALID_PEER_ID', async () => {
    const stranger = peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
    const err = await expectRbtError(ra.call(stranger, 'rbt.ping', {}, { timeoutMs: 2000 }), ErrorCode.PEER_UNREACHABLE)
    expect(err.message).to.contain(stranger)
    await expectRbtError(ra.call('garbage', 'rbt.ping', {}), ErrorCode.INVALID_PEER_ID)
  })

  it('a method the peer does not serve gives PROTOCOL', async () => {
    await connect(c, a)
    const err = await expectRbtError(rc.call(a.peerId, 'test.only-c', {}), ErrorCode.PROTOCOL)
    expect(err.message).to.contain(a.peerId)
    expect(await rc.call(a.peerId, 'rbt.ping', {})).to.deep.equal({ message: PING_MESSAGE })
  })

  it('frames over the limit are PAYLOAD_TOO_LARGE: response (suggesting pages), request at the server, request at the caller', async () => {
    const res = await expectRbtError(ra.call(b.peerId, 'test.echo', { text: 'x', repeat: 600 * 1024 }), ErrorCode.PAYLOAD_TOO_LARGE)
    expect(res.message).to.contain('pages')
    const big = 'x'.repeat(600 * 1024)
    const atServer = await expectRbtError(ra.call(b.peerId, 'test.echo', { text: big }), ErrorCode.PAYLOAD_TOO_LARGE)
    expect(atServer.message).to.contain(b.peerId)
    await expectRbtError(rb.call(a.peerId, 'test.echo', { text: big }), ErrorCode.PAYLOAD_TOO_LARGE)
    expect((await ra.call(b.peerId, 'test.echo', { text: 'still fine' })).text).to.equal('still fine')
  })

  it('streams 5 MB in pages over one stream, complete and in order', async () => {
    const total = 5 * 1024 * 1024
    const pageBytes = 256 * 1024
    const got: Uint8Array[] = []
    let expectSeq = 0
    for await (const page of ra.callPaged(b.peerId, 'test.chunks', { totalBytes: total, pageBytes })) {
      expect(page.seq).to.equal(expectSeq++)
      got.push(page.data)
    }
    expect(expectSeq).to.equal(total / pageBytes)
    expect(got.reduce((n, p) => n + p.length, 0)).to.equal(total)
    expect(sha(got)).to.equal(sha([chunk(0, total)]))
  })

  it('pages that arrive in pieces are joined into the buffers the caller gives (pageInto), the same bytes; small frames are not', async () => {
    const total = 2 * 1024 * 1024
    const pageBytes = 256 * 1024
    const given = new Set<ArrayBufferLike>()
    const asked: number[] = []
    const got: Uint8Array[] = []
    const into = (bytes: number): Uint8Array => { asked.push(bytes); const u = new Uint8Array(bytes + 8).subarray(4, 4 + bytes); given.add(u.buffer); return u }
    for await (const page of ra.callPaged(b.peerId, 'test.chunks', { totalBytes: total, pageBytes }, { pageInto: into })) {
      expect(given.has(page.data.buffer), `page ${page.seq} not in a given buffer`).to.equal(true)
      got.push(page.data.slice())
    }
    expect(asked.length).to.equal(total / pageBytes)
    expect(asked.every((n) => n > pageBytes && n < pageBytes + 1024)).to.equal(true)
    expect(sha(got)).to.equal(sha([chunk(0, total)]))
    // a short answer (one piece) is taken as it is
    asked.length = 0
    for await (const _ of ra.callPaged(b.peerId, 'test.chunks', { totalBytes: 100, pageBytes: 100 }, { pageInto: into })) { /* one small page */ }
    expect(asked).to.deep.equal([])
  })

  it('a slow consumer does not overflow buffers (credit flow control)', async () => {
    let n = 0
    for await (const page of rb.callPaged(a.peerId, 'test.chunks', { totalBytes: 3 * 300 * 1024, pageBytes: 300 * 1024 })) {
      expect(page.seq).to.equal(n++)
      await new Promise(resolve => setTimeout(resolve, 30))
    }
    expect(n).to.equal(3)
  })

  it('an empty paged answer ends cleanly', async () => {
    const pages: unknown[] = []
    for await (const p of ra.callPaged(b.peerId, 'test.chunks', { totalBytes: 0, pageBytes: 10 })) pages.push(p)
    expect(pages).to.deep.equal([])
  })

  it('an error after some pages arrives after those pages, with its code', async () => {
    const seen: number[] = []
    try {
      for await (const p of ra.callPaged(b.peerId, 'test.pages-then-fail', { pages: 3 })) seen.push(p.n)
      expect.fail('should throw')
    } catch (e) {
      expect((e as RbtError).code).to.equal(ErrorCode.CHAIN_INVALID)
    }
    expect(seen).to.deep.equal([0, 1, 2])
  })

  it('breaking out of a paged call cancels the producer', async () => {
    const before = endlessStopped
    let n = 0
    for await (const p of ra.callPaged(b.peerId, 'test.endless', {})) {
      expect(p.n).to.equal(n++)
      if (n === 10) break
    }
    await waitFor('producer to stop', () => endlessStopped > before, 3000)
  })

  it('200 sequential requests do not exhaust stream limits', async () => {
    for (let i = 0; i < 200; i++) {
      const res = await ra.call(b.peerId, 'test.echo', { text: `n${i}` })
      expect(res.text).to.equal(`n${i}`)
    }
    const conns = a.libp2p.getConnections(b.libp2p.peerId)
    expect(conns.length).to.equal(1)
    await waitFor('streams to close', () => conns[0].streams.filter(s => s.protocol?.startsWith('/rbt/test') === true).length === 0, 3000)
  })

  it('serves 64 concurrent requests on one connection', async () => {
    const all = await Promise.all(Array.from({ length: 64 }, async (_, i) => await rb.call(a.peerId, 'test.echo', { text: String(i) })))
    expect(all.map(r => r.text)).to.deep.equal(Array.from({ length: 64 }, (_, i) => String(i)))
  })

  describe('channel', () => {
    /** Protocols of the streams `host` opens while `fn` runs. */
    async function streamsOpened (host: P2pHost, fn: () => Promise<void>): Promise<string[]> {
      const opened: string[] = []
      const real = host.openStream.bind(host)
      host.openStream = async (peer, protocol, o) => { opened.push(protocol); return await real(peer, protocol, o) }
      try { await fn() } finally { host.openStream = real }
      return opened
    }
    const channelStreams = (from: P2pHost, to: P2pHost): number =>
      from.libp2p.getConnections(to.libp2p.peerId).flatMap((c) => c.streams).filter((st) => st.protocol === CHANNEL_PROTOCOL && st.direction === 'outbound').length
    const CHANNEL_PROTOCOL = rpcProtocolId(CHANNEL_METHOD)

    it('small unary calls to one peer share one long-lived stream', async () => {
      const opened = await streamsOpened(a, async () => {
        for (let i = 0; i < 30; i++) expect((await ra.call(b.peerId, 'test.echo', { text: `c${i}` }, { requestId: `r${i}` })).requestId).to.equal(`r${i}`)
        await Promise.all(Array.from({ length: 20 }, async (_, i) => await ra.call(b.peerId, 'test.echo', { text: String(i) })))
      })
      expect(opened.filter((x) => x !== CHANNEL_PROTOCOL)).to.deep.equal([])
      expect(opened.length).to.be.at.most(1)
      expect(channelStreams(a, b)).to.equal(1)
    })

    it('a large request takes a stream of its own', async () => {
      const opened = await streamsOpened(a, async () => {
        expect((await ra.call(b.peerId, 'test.echo', { text: 'y'.repeat(300 * 1024) })).text).to.have.length(300 * 1024)
      })
      expect(opened).to.deep.equal([rpcProtocolId('test.echo')])
    })

    it('a broken channel is replaced by a new one on the next call', async () => {
      await ra.call(b.peerId, 'rbt.ping', {})
      for (const conn of b.libp2p.getConnections(a.libp2p.peerId)) {
        for (const st of conn.streams) if (st.protocol === CHANNEL_PROTOCOL) st.abort(new Error('peer went away'))
      }
      await waitFor('the caller to notice', () => channelStreams(a, b) === 0, 3000)
      expect(await ra.call(b.peerId, 'rbt.ping', {})).to.deep.equal({ message: PING_MESSAGE })
      expect(channelStreams(a, b)).to.equal(1)
    })

    it('a peer that does not serve the channel is called with a stream per request', async () => {
      const [x] = await startHosts(1)
      const rx = createRpc<TestMethods>({ host: x, handlers })
      await rx.start()
      try {
        await x.unhandleProtocol(CHANNEL_PROTOCOL)
        await connect(a, x)
        const opened = await streamsOpened(a, async () => {
          for (let i = 0; i < 3; i++) expect((await ra.call(x.peerId, 'test.echo', { text: 'old' })).text).to.equal('old')
        })
        expect(opened).to.deep.equal([CHANNEL_PROTOCOL, ...Array(3).fill(rpcProtocolId('test.echo'))])
      } finally {
        await stopAll([rx, x])
      }
    })
  })

  describe('binary frames and older peers', () => {
    /** Raw frames of a paged `test.chunks` answer to a hand-written request. */
    async function rawPages (bin: boolean): Promise<Uint8Array[]> {
      const stream = await a.openStream(b.peerId, rpcProtocolId('test.chunks'), { signal: AbortSignal.timeout(5000) })
      const lp = lpStream(stream)
      await lp.write(encodeJson({ t: 'req', v: 1, id: 'raw', body: { totalBytes: 1000, pageBytes: 600 }, credit: 4, ...(bin ? { bin: 1 } : {}) }))
      const frames: Uint8Array[] = []
      for (;;) {
        const f = (await lp.read({ signal: AbortSignal.timeout(5000) })).subarray()
        frames.push(f)
        if ((decodeFrame(f) as { t: string }).t !== 'page') break
      }
      await stream.close()
      return frames
    }

    it('a caller that does not ask for binary frames (an older node) gets JSON pages with base64', async () => {
      const frames = await rawPages(false)
      expect(frames.map((f) => f[0])).to.deep.equal([0x7b, 0x7b, 0x7b])
      const pages = frames.slice(0, 2).map((f) => decodeJson(f) as { body: { data: Uint8Array } })
      expect(Buffer.compare(Buffer.concat(pages.map((p) => p.body.data)), chunk(0, 1000))).to.equal(0)
    })

    it('a caller that asks for them gets pages as binary frames (the end frame stays JSON)', async () => {
      const frames = await rawPages(true)
      expect(frames.map((f) => f[0])).to.deep.equal([BINARY_FRAME_MARK, BINARY_FRAME_MARK, 0x7b])
      const pages = frames.slice(0, 2).map((f) => decodeFrame(f) as { body: { data: Uint8Array } })
      expect(Buffer.compare(Buffer.concat(pages.map((p) => p.body.data)), chunk(0, 1000))).to.equal(0)
    })

    it('a server that answers in JSON only (an older node) is read as before', async () => {
      const [x] = await startHosts(1)
      try {
        let sawBin: unknown
        await x.handleProtocol(rpcProtocolId('test.chunks'), (stream: Stream) => {
          void (async () => {
            const lp = lpStream(stream)
            const req = decodeJson((await lp.read()).subarray()) as { id: string, bin?: number }
            sawBin = req.bin
            await lp.write(encodeJson({ t: 'page', id: req.id, seq: 0, body: { seq: 0, data: chunk(0, 500) } }))
            await lp.write(encodeJson({ t: 'end', id: req.id, pages: 1 }))
            await stream.close()
          })()
        })
        await connect(a, x)
        const got: Uint8Array[] = []
        for await (const p of ra.callPaged(x.peerId, 'test.chunks', { totalBytes: 500, pageBytes: 500 })) got.push(p.data)
        expect(sawBin).to.equal(1)
        expect(Buffer.compare(Buffer.concat(got), chunk(0, 500))).to.equal(0)
      } finally {
        await stopAll([x])
      }
    })

    it('requests go binary only to a peer that has sent a binary frame; an older peer keeps getting JSON', async () => {
      const [x] = await startHosts(1)
      const firstBytes: number[] = []
      try {
        // a stand-in server: answers test.echo in JSON (an older node) until told to answer in binary
        let answerBinary = false
        await x.handleProtocol(rpcProtocolId('test.echo'), (stream: Stream) => {
          void (async () => {
            const lp = lpStream(stream)
            const raw = (await lp.read()).subarray()
            firstBytes.push(raw[0])
            const req = decodeFrame(raw) as { id: string, body: { text: string, bytes?: Uint8Array } }
            const res = { t: 'res', ok: true, id: req.id, body: { ...req.body, from: 'x', requestId: req.id } }
            await lp.write(answerBinary ? joinBinary(encodeBinary(res)) : encodeJson(res))
            await stream.close()
          })()
        })
        await connect(a, x)
        const big = chunk(3, 300 * 1024)
        for (let i = 0; i < 2; i++) expect(Buffer.compare((await ra.call(x.peerId, 'test.echo', { text: 'j', bytes: big })).bytes!, big)).to.equal(0)
        answerBinary = true
        for (let i = 0; i < 2; i++) expect(Buffer.compare((await ra.call(x.peerId, 'test.echo', { text: 'b', bytes: big })).bytes!, big)).to.equal(0)
        // JSON until the peer's first binary answer, binary after it
        expect(firstBytes).to.deep.equal([0x7b, 0x7b, 0x7b, BINARY_FRAME_MARK])
      } finally {
        await stopAll([x])
      }
    })

    it('unary answers with bytes travel binary on the channel and on a stream of their own', async () => {
      const small = chunk(5, 1000)
      expect(Buffer.compare((await ra.call(b.peerId, 'test.echo', { text: 'x', bytes: small })).bytes!, small)).to.equal(0)
      const large = chunk(9, 300 * 1024)
      expect(Buffer.compare((await ra.call(b.peerId, 'test.echo', { text: 'y', bytes: large })).bytes!, large)).to.equal(0)
    })
  })

  it('refuses calls when stopped', async () => {
    const r = createRpc<Record<never, never>>({ host: a, handlers: {} })
    await expectRbtError(r.call(b.peerId, 'rbt.ping', {}), ErrorCode.NOT_RUNNING)
  })
})
