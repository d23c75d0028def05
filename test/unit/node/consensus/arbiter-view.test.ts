import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { LevelStore } from '../../../../src/storage/level-store.js'
import { ArbiterView } from '../../../../src/node/consensus/state-claims.js'
import { kadKey } from '../../../../src/p2p/closest-query.js'
import { silentLogger } from '../../../../src/util/logger.js'

async function peerId (): Promise<string> {
  return peerIdFromPrivateKey(await generateKeyPair('Ed25519')).toString()
}

describe('claims: the arbiter view (every peer recently connected, on disk)', () => {
  let dir: string
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'rbtnode-view-')) })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  it('counts a connected peer, and one disconnected less than the forget time ago; forgets one gone longer', async () => {
    const store = new LevelStore(join(dir, 'db'))
    await store.open()
    const [a, b, c] = [await peerId(), await peerId(), await peerId()]
    const connected = new Set<string>([a])
    const view = new ArbiterView(store.collection('arbiter-view'), await peerId(), silentLogger, () => connected, 200)
    await view.load()
    for (const p of [a, b, c]) await view.seen(p, ['/ip4/127.0.0.1/tcp/1'])
    const target = kadKey(new TextEncoder().encode('/rbt/spent/x'))
    expect(view.closest(target, 20).map((p) => p.peerId).sort()).to.deep.equal([a, b, c].sort())
    // b and c disconnect; after the forget time only the connected peer counts
    await new Promise((resolve) => setTimeout(resolve, 300))
    expect(view.closest(target, 20).map((p) => p.peerId)).to.deep.equal([a])
    view.stop()
    await store.close()
  })

  it('forgets a peer that is no arbiter (a Kubo peer), on disk too', async () => {
    const store = new LevelStore(join(dir, 'db'))
    await store.open()
    const [a, k] = [await peerId(), await peerId()]
    const connected = new Set<string>([a, k])
    const view = new ArbiterView(store.collection('arbiter-view'), await peerId(), silentLogger, () => connected)
    await view.load()
    await view.seen(a, ['/ip4/127.0.0.1/tcp/1'])
    await view.seen(k, ['/ip4/127.0.0.1/tcp/2'])
    await view.forget(k)
    const target = kadKey(new TextEncoder().encode('/rbt/spent/y'))
    expect(view.closest(target, 20).map((p) => p.peerId)).to.deep.equal([a])
    view.stop()
    const again = new ArbiterView(store.collection('arbiter-view'), 'self', silentLogger, () => connected)
    await again.load()
    expect(again.closest(target, 20).map((p) => p.peerId)).to.deep.equal([a])
    again.stop()
    await store.close()
  })

  it('a node that restarts counts the same network: the time it was down does not age its view', async () => {
    const store = new LevelStore(join(dir, 'db'))
    await store.open()
    const self = await peerId()
    const [a, b] = [await peerId(), await peerId()]
    const view = new ArbiterView(store.collection('arbiter-view'), self, silentLogger, () => new Set(), 1_000)
    await view.load()
    await view.seen(a, ['/ip4/127.0.0.1/tcp/1'])
    await view.seen(b, [])
    view.stop()
    await store.close()
    // down for longer than the forget time
    await new Promise((resolve) => setTimeout(resolve, 1_200))
    const again = new LevelStore(join(dir, 'db'))
    await again.open()
    const back = new ArbiterView(again.collection('arbiter-view'), self, silentLogger, () => new Set(), 1_000)
    await back.load()
    const target = kadKey(new TextEncoder().encode('/rbt/spent/y'))
    const peers = back.closest(target, 20)
    expect(peers.map((p) => p.peerId).sort()).to.deep.equal([a, b].sort())
    expect(peers.find((p) => p.peerId === a)?.multiaddrs).to.deep.equal(['/ip4/127.0.0.1/tcp/1'])
    back.stop()
    await again.close()
  })
})
