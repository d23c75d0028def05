import { expect } from 'chai'
import { createServer, type Server } from 'node:http'
import type { P2pHost } from '../../../src/p2p/host.js'
import { createXHttpServer, handleXStreams, rubixCoreProtocol, xHttpRequest } from '../../../src/p2p/kubo/x-stream.js'
import { connect, expectRbtError, startHosts, stopAll } from '../helpers.js'

const pattern = (n: number): Buffer => { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = (i * 13) % 256; return b }

function app (req: import('node:http').IncomingMessage, res: import('node:http').ServerResponse): void {
  if (req.url === '/early') {
    // answers before reading the body, as a server refusing an upload does
    res.end('early')
    return
  }
  const parts: Buffer[] = []
  req.on('data', (c: Buffer) => parts.push(c))
  req.on('end', () => {
    const url = new URL(req.url ?? '/', 'http://x')
    if (url.pathname === '/echo') {
      res.setHeader('X-Method', req.method ?? '')
      res.setHeader('X-Connection', req.headers.connection ?? '')
      res.end(Buffer.concat(parts))
    } else if (url.pathname === '/big') {
      const all = pattern(Number(url.searchParams.get('n')))
      for (let off = 0; off < all.length; off += 5000) res.write(all.subarray(off, off + 5000))
      res.end()
    } else {
      res.statusCode = 404
      res.end('nope')
    }
  })
}

describe('p2p/kubo/x-stream: HTTP/1.1 over /x/<peer>RubixCore/1.0 between rbtnode hosts', function () {
  this.timeout(30_000)
  let hosts: P2pHost[] = []
  const servers: Server[] = []

  before(async () => {
    hosts = await startHosts(3)
    await connect(hosts[0], hosts[1])
    await connect(hosts[0], hosts[2])
    // host 1 serves its app through server.emit('connection'); host 2 pipes to a TCP port, as p2p listen does
    await handleXStreams(hosts[1], { server: createXHttpServer(app) })
    const tcp = createServer(app)
    servers.push(tcp)
    await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve))
    await handleXStreams(hosts[2], { host: '127.0.0.1', port: (tcp.address() as { port: number }).port })
  })

  after(async () => {
    for (const s of servers) s.close()
    await stopAll(hosts)
  })

  it('names the protocol after the target peer', () => {
    expect(rubixCoreProtocol('12D3KooWabc')).to.equal('/x/12D3KooWabcRubixCore/1.0')
  })

  for (const target of [1, 2]) {
    const how = target === 1 ? 'the app as a connection' : 'a local TCP port'
    it(`carries request and response bodies over 64 KiB (${how})`, async () => {
      const body = pattern(300_000)
      const r = await xHttpRequest(hosts[0], hosts[target].peerId, { method: 'POST', path: '/echo', host: 'localhost', body })
      expect(r.status).to.equal(200)
      expect(r.headers['x-method']).to.equal('POST')
      expect(r.headers['x-connection']).to.equal('close')
      expect(r.body.equals(body)).to.equal(true)
    })

    it(`reads a chunked response over 64 KiB whole (${how})`, async () => {
      const r = await xHttpRequest(hosts[0], hosts[target].peerId, { method: 'GET', path: '/big?n=700001', host: 'localhost' })
      expect(r.headers['transfer-encoding']).to.equal('chunked')
      expect(r.body.equals(pattern(700_001))).to.equal(true)
    })

    it(`anything but 200 is a failure carrying the status (${how})`, async () => {
      const e = await expectRbtError(xHttpRequest(hosts[0], hosts[target].peerId, { method: 'GET', path: '/missing', host: 'localhost' }), 'PROTOCOL')
      expect(e.details).to.include({ status: 404, body: 'nope' })
    })
  }

  it('an answer given before the request body is read is taken whole', async () => {
    for (const target of [1, 2]) {
      const r = await xHttpRequest(hosts[0], hosts[target].peerId, { method: 'POST', path: '/early', host: 'localhost', body: pattern(4 * 1024 * 1024) }, { timeoutMs: 10_000 })
      expect(r.body.toString()).to.equal('early')
    }
  })

  it('many calls at once, each on a stream of its own', async () => {
    const rs = await Promise.all(Array.from({ length: 20 }, async (_, i) => await xHttpRequest(hosts[0], hosts[1 + (i % 2)].peerId, { method: 'POST', path: '/echo', host: 'localhost', body: pattern(1000 + i) })))
    rs.forEach((r, i) => expect(r.body.length).to.equal(1000 + i))
  })

  it('a peer without the handler fails with PROTOCOL; a silent one with TIMEOUT', async () => {
    await expectRbtError(xHttpRequest(hosts[1], hosts[0].peerId, { method: 'GET', path: '/', host: 'localhost' }, { timeoutMs: 5000 }), 'PROTOCOL')
    await hosts[0].handleProtocol(rubixCoreProtocol(hosts[0].peerId), () => {})
    try {
      await connect(hosts[1], hosts[0]).catch(() => {})
      await expectRbtError(xHttpRequest(hosts[1], hosts[0].peerId, { method: 'GET', path: '/', host: 'localhost' }, { timeoutMs: 500 }), 'TIMEOUT')
    } finally {
      await hosts[0].unhandleProtocol(rubixCoreProtocol(hosts[0].peerId))
    }
  })
})
