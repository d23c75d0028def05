import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { mkdtempSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { createP2pHost } from '../../src/p2p/host.js'
import { loadOrCreatePeerKey } from '../../src/p2p/peer-key.js'
import { testSwarmKey } from './helpers.js'

describe('p2p/peer-key', () => {
  let dir: string
  before(() => { dir = mkdtempSync(join(tmpdir(), 'rbt-peerkey-')) })
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  it('creates an Ed25519 key with mode 0600 and reloads the same identity', async () => {
    const path = join(dir, 'nested', 'peer.key')
    const first = await loadOrCreatePeerKey(path)
    expect(first.created).to.equal(true)
    expect(first.privateKey.type).to.equal('Ed25519')
    expect(first.peerId).to.match(/^12D3KooW/)
    if (process.platform !== 'win32') expect(statSync(path).mode & 0o777).to.equal(0o600)
    const second = await loadOrCreatePeerKey(path)
    expect(second.created).to.equal(false)
    expect(second.peerId).to.equal(first.peerId)
  })

  it('gives a host the persisted peer id', async () => {
    const key = await loadOrCreatePeerKey(join(dir, 'host.key'))
    const host = await createP2pHost({ swarmKey: testSwarmKey, privateKey: key.privateKey })
    expect(host.peerId).to.equal(key.peerId)
    const again = await createP2pHost({ swarmKey: testSwarmKey, privateKey: (await loadOrCreatePeerKey(join(dir, 'host.key'))).privateKey })
    expect(again.peerId).to.equal(key.peerId)
  })

  it('refuses to replace a corrupt key file', async () => {
    const path = join(dir, 'corrupt.key')
    writeFileSync(path, 'not a key')
    try {
      await loadOrCreatePeerKey(path)
      expect.fail('should throw')
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect((e as RbtError).code).to.equal(ErrorCode.CONFIG)
      expect((e as RbtError).message).to.contain(path)
    }
  })
})
