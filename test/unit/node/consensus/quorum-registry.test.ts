import { expect } from 'chai'
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { QuorumRegistry } from '../../../../src/node/consensus/quorum-registry.js'
import { LevelStore } from '../../../../src/storage/level-store.js'
import { NodeConfigStore } from '../../../../src/storage/node-config-store.js'
import { RbtError } from '../../../../src/util/errors.js'

describe('node/consensus: the node secret after a crash', () => {
  let dir = ''
  let store: LevelStore
  let config: NodeConfigStore
  const secretPath = (): string => join(dir, 'quorum.secret')
  beforeEach(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-secret-'))
    store = new LevelStore(join(dir, 'db'))
    await store.open()
    config = new NodeConfigStore(join(dir, 'node.json'))
    await config.open()
  })
  afterEach(async () => { await store.close(); rmSync(dir, { recursive: true, force: true }) })

  it('writes a new secret in place of an empty one when nothing is sealed with it', async () => {
    writeFileSync(secretPath(), '')
    const registry = new QuorumRegistry(config, store, secretPath())
    expect(await registry.open()).to.match(/was empty .*a new node secret was written/)
    expect(readFileSync(secretPath()).length).to.equal(32)
    expect(registry.unsealText('x', registry.sealText('x', 'pw'))).to.equal('pw')
  })

  it('stops with the cause and the way out when an empty secret seals quorum setups', async () => {
    const before = new QuorumRegistry(config, store, secretPath())
    await before.open()
    await before.saveSetup({ did: 'bafy-quorum', password: 'p', privPassword: 'q' })
    writeFileSync(secretPath(), '')
    try {
      await new QuorumRegistry(config, store, secretPath()).open()
      expect.fail('a damaged secret that seals setups must stop the start')
    } catch (e) {
      expect(e).to.be.instanceOf(RbtError)
      expect((e as Error).message).to.match(/quorum\.secret is damaged \(0 bytes.*seals quorum setups.*restore it from a backup.*setupquorum/)
    }
  })

  it('reads a whole secret as it is', async () => {
    const first = new QuorumRegistry(config, store, secretPath())
    await first.open()
    const sealed = first.sealText('label', 'text')
    const again = new QuorumRegistry(config, store, secretPath())
    expect(await again.open()).to.equal(undefined)
    expect(again.unsealText('label', sealed)).to.equal('text')
  })
})
