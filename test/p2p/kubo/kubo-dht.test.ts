import '../../../src/util/polyfill.js'
import { expect } from 'chai'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import type { P2pHost } from '../../../src/p2p/host.js'
import { DEFAULT_DHT_PROTOCOL } from '../../../src/p2p/host.js'
import { KUBO_LAN_PROTOCOL, KUBO_WAN_PROTOCOL } from '../../../src/p2p/kubo/kubo-dht.js'
import { connect, startHosts, stopAll, waitFor } from '../helpers.js'

describe('p2p/kubo/kubo-dht: Kubo\'s two DHTs beside ours (in-process hosts)', function () {
  this.timeout(30_000)
  let hosts: P2pHost[] = []
  let plain: P2pHost[] = []

  before(async () => {
    hosts = await startHosts(2, { kubo: true })
    plain = await startHosts(1)
    await connect(hosts[0]!, hosts[1]!)
  })

  after(async () => { await stopAll([...hosts, ...plain]) })

  it('serves Kubo\'s protocol ids only when asked for, and rbtnode\'s own DHT either way', async () => {
    const [a] = hosts as [P2pHost]
    expect(a.libp2p.getProtocols()).to.include.members([KUBO_WAN_PROTOCOL, KUBO_LAN_PROTOCOL, DEFAULT_DHT_PROTOCOL])
    expect(a.kubo).to.not.equal(undefined)
    expect(plain[0]!.kubo).to.equal(undefined)
    expect(plain[0]!.libp2p.getProtocols()).to.not.include.members([KUBO_WAN_PROTOCOL])
    expect(plain[0]!.libp2p.getProtocols()).to.not.include.members([KUBO_LAN_PROTOCOL])
  })

  it('on loopback only the LAN table fills (the WAN one keeps public addresses only), so a provide goes to LAN, and the peer finds it there', async () => {
    const [a, b] = hosts as [P2pHost, P2pHost]
    await waitFor('LAN tables', () => a.kubo!.tableSizes().lan > 0 && b.kubo!.tableSizes().lan > 0)
    expect(a.kubo!.tableSizes().wan).to.equal(0)
    const cid = CID.createV1(raw.code, await sha256.digest(new TextEncoder().encode('kubo-dht test')))
    expect(await a.kubo!.provide(cid, { timeoutMs: 5000 })).to.equal('lan')
    const found = await b.kubo!.findProviders(cid, { timeoutMs: 3000 })
    expect(found.map((p) => p.peerId)).to.include(a.peerId)
    expect(found.find((p) => p.peerId === a.peerId)?.dhts).to.deep.equal(['lan'])
    // libp2p's own routing (rbtnode's DHT) does not see what went to Kubo's tables
    expect((await b.findProviders(cid, { timeoutMs: 1500 })).map((p) => p.peerId)).to.not.include(a.peerId)
  })

  it('a peer that does not speak rbtnode\'s DHT (a Kubo peer) is told apart once identified, and never among the closest known peers', async () => {
    const [a, b] = hosts as [P2pHost, P2pHost]
    const [other] = await startHosts(1, { dht: { protocol: '/not-rbt/kad/1.0.0' } })
    plain.push(other)
    const told: string[] = []
    a.onForeignPeer((p) => { told.push(p) })
    await connect(a, other!)
    await waitFor('identify of the foreign peer', () => a.isForeignPeer(other!.peerId))
    expect(told).to.deep.equal([other!.peerId])
    expect(a.isForeignPeer(b.peerId)).to.equal(false)
    const key = new TextEncoder().encode('/rbt/spent/z')
    const closest = a.closestKnownPeers(key, 20)
    expect(closest).to.include(b.peerId)
    expect(closest).to.not.include(other!.peerId)
  })
})
