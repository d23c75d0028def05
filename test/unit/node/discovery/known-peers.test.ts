import '../../../../src/util/polyfill.js'
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { createP2pHost, type P2pHost } from '../../../../src/p2p/host.js'
import { KnownPeers, type KnownPeer } from '../../../../src/node/discovery/known-peers.js'
import { LevelStore } from '../../../../src/storage/level-store.js'
import { ErrorCode } from '../../../../src/util/errors.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { freePort } from '../../../helpers/ports.js'
import { expectRbtError, stopAll, testSwarmKey, waitFor } from '../../../p2p/helpers.js'

/** A host on 127.0.0.1 with the test-net key; `port` and `key` keep its address and id across a restart. */
async function host (port: number, key?: Awaited<ReturnType<typeof generateKeyPair>>): Promise<P2pHost> {
  const h = await createP2pHost({ swarmKey: testSwarmKey, listen: [`/ip4/127.0.0.1/tcp/${port}`], ...(key !== undefined ? { privateKey: key } : {}) })
  await h.start()
  return h
}

describe('node/discovery: addresses of known peers kept across a restart', function () {
  this.timeout(30_000)
  let dir = ''
  let store: LevelStore
  const hosts: Array<P2pHost | undefined> = []
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-known-peers-'))
    store = new LevelStore(join(dir, 'db'))
    await store.open()
  })
  after(async () => {
    await stopAll(hosts)
    await store.close()
    rmSync(dir, { recursive: true, force: true })
  })

  it('a node restarted reaches by peer id the peers it knew, with no address given', async () => {
    const bKey = await generateKeyPair('Ed25519')
    const bId = peerIdFromPrivateKey(bKey).toString()
    const bPort = await freePort()
    const collection = store.collection<KnownPeer>('p2p-known-peers')

    // before: b dials a (a learns b's listen address from identify), a keeps it
    let a = await host(0)
    hosts.push(a)
    const known = new KnownPeers(collection, silentLogger, { readDelayMs: 50 })
    expect(await known.start(a)).to.equal(0)
    let b = await host(bPort, bKey)
    hosts.push(b)
    await b.dial(a.multiaddrs()[0]!)
    await waitFor('a to keep b', async () => (await collection.get(bId))?.addrs.includes(`/ip4/127.0.0.1/tcp/${bPort}`) === true, 10_000)
    known.stop()

    // the power cut: both stop; a comes back first, then b on the same address
    await a.stop()
    await b.stop()
    a = await host(0)
    hosts.push(a)
    // without the kept addresses a new host does not know where b is
    await expectRbtError(a.ping(bId, { timeoutMs: 2000 }), ErrorCode.PEER_UNREACHABLE)
    const again = new KnownPeers(collection, silentLogger, { readDelayMs: 50 })
    expect(await again.start(a)).to.equal(1)
    b = await host(bPort, bKey)
    hosts.push(b)
    expect(await a.ping(bId, { timeoutMs: 5000 })).to.be.a('number')
    again.stop()
  })

  it('keeps at most `max` peers, the most recently connected', async () => {
    const collection = store.collection<KnownPeer>('p2p-known-peers-bounded')
    let clock = 1000
    const a = await host(0)
    hosts.push(a)
    const known = new KnownPeers(collection, silentLogger, { readDelayMs: 20, max: 2, now: () => clock })
    await known.start(a)
    const ids: string[] = []
    for (let i = 0; i < 3; i++) {
      const p = await host(0)
      hosts.push(p)
      ids.push(p.peerId)
      await p.dial(a.multiaddrs()[0]!)
      await waitFor(`peer ${i} kept`, async () => (await collection.get(p.peerId)) !== undefined, 10_000)
      clock += 1000
    }
    await waitFor('the oldest dropped', async () => (await collection.get(ids[0]!)) === undefined, 5000)
    expect(await collection.get(ids[1]!)).to.not.equal(undefined)
    expect(await collection.get(ids[2]!)).to.not.equal(undefined)
    known.stop()
  })
})
