import '../../src/util/polyfill.js'
import { expect } from 'chai'
import type { P2pHost } from '../../src/p2p/host.js'
import { connect, startHosts, stopAll } from './helpers.js'

// Regression: libp2p's own connection monitor pings on the same connection; with the ping
// service's default of one outbound stream, an operator's ping could fail with
// "Too many outbound protocol streams".
describe('p2p/host: concurrent pings on one connection', function () {
  this.timeout(15_000)
  let a: P2pHost, b: P2pHost
  before(async () => { [a, b] = await startHosts(2); await connect(a, b) })
  after(async () => { await stopAll([a, b]) })

  it('several pings at once all succeed', async () => {
    const rtts = await Promise.all(Array.from({ length: 6 }, async () => await a.ping(b.peerId, { timeoutMs: 5000 })))
    for (const r of rtts) expect(r).to.be.a('number')
  })
})
