import { expect } from 'chai'
import { DiscoveryDialer, type DiscoveredPeer } from '../../src/p2p/discovery-dialer.js'
import type { Logger } from '../../src/util/logger.js'

function recordingLogger (): Logger & { lines: Array<[string, string]> } {
  const lines: Array<[string, string]> = []
  const l = {
    lines,
    debug: (m: string) => { lines.push(['debug', m]) },
    info: (m: string) => { lines.push(['info', m]) },
    warn: (m: string) => { lines.push(['warn', m]) },
    error: (m: string) => { lines.push(['error', m]) },
    child: () => l
  }
  return l
}

const peer = (id: string): DiscoveredPeer => ({ peerId: id, multiaddrs: ['/ip4/127.0.0.1/tcp/4002'] })

describe('p2p/discovery-dialer', () => {
  let now = 0
  let connected: Set<string>
  let dials: string[]
  let fail: Set<string>
  let log: ReturnType<typeof recordingLogger>
  let d: DiscoveryDialer

  beforeEach(() => {
    now = 1_000_000
    connected = new Set()
    dials = []
    fail = new Set()
    log = recordingLogger()
    d = new DiscoveryDialer({
      self: 'me',
      isConnected: (p) => connected.has(p),
      dial: async (p) => {
        dials.push(p.peerId)
        if (fail.has(p.peerId)) throw new Error('read ECONNRESET')
        connected.add(p.peerId)
      },
      log,
      retryBaseMs: 1000,
      retryMaxMs: 8000,
      now: () => now
    })
    d.start()
  })

  it('dials a discovered peer once, never itself, nothing before start or after stop', async () => {
    expect(d.onPeer(peer('me'))).to.equal(undefined)
    await d.onPeer(peer('a'))
    expect(d.onPeer(peer('a'))).to.equal(undefined) // connected now
    expect(dials).to.deep.equal(['a'])
    expect(log.lines.filter(([lvl]) => lvl === 'info')).to.have.length(1)
    d.stop()
    expect(d.onPeer(peer('b'))).to.equal(undefined)
    expect(dials).to.deep.equal(['a'])
  })

  it('keeps answers that come before start and dials them at start', async () => {
    const early = new DiscoveryDialer({ self: 'me', isConnected: () => false, dial: async (p) => { dials.push(p.peerId) }, log })
    expect(early.onPeer(peer('a'))).to.equal(undefined)
    expect(early.onPeer(peer('b'))).to.equal(undefined)
    expect(dials).to.deep.equal([])
    early.start()
    await new Promise((resolve) => setImmediate(resolve))
    expect(dials.sort()).to.deep.equal(['a', 'b'])
    early.stop()
  })

  it('does not start a second dial while one runs', async () => {
    const first = d.onPeer(peer('a'))
    expect(d.onPeer(peer('a'))).to.equal(undefined)
    await first
    expect(dials).to.deep.equal(['a'])
  })

  it('redials a peer that went away and answers again', async () => {
    await d.onPeer(peer('a'))
    connected.delete('a')
    await d.onPeer(peer('a'))
    expect(dials).to.deep.equal(['a', 'a'])
  })

  it('backs off a peer that refuses (another swarm key) and logs it once at info', async () => {
    fail.add('x')
    await d.onPeer(peer('x'))
    for (let i = 0; i < 20; i++) expect(d.onPeer(peer('x'))).to.equal(undefined) // within the pause
    now += 1000
    await d.onPeer(peer('x'))
    now += 1000 // second pause is 2 s
    expect(d.onPeer(peer('x'))).to.equal(undefined)
    now += 1000
    await d.onPeer(peer('x'))
    now += 100_000 // capped at 8 s
    await d.onPeer(peer('x'))
    expect(dials).to.deep.equal(['x', 'x', 'x', 'x'])
    const info = log.lines.filter(([lvl, m]) => lvl === 'info' && m.includes('x'))
    expect(info).to.have.length(1)
    expect(info[0][1]).to.match(/not connected to x.*ECONNRESET.*swarm key/)
    expect(log.lines.some(([lvl]) => lvl === 'warn' || lvl === 'error')).to.equal(false)
  })

  it('a refused peer that later accepts is connected and the pause is forgotten', async () => {
    fail.add('y')
    await d.onPeer(peer('y'))
    fail.delete('y')
    now += 1000
    await d.onPeer(peer('y'))
    expect(connected.has('y')).to.equal(true)
    expect(log.lines.filter(([lvl]) => lvl === 'info').map(([, m]) => m)).to.satisfy((ms: string[]) => ms.some((m) => /^connected to y/.test(m)))
  })
})
