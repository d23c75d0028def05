import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../../../src/storage/level-store.js'
import { DidStore } from '../../../src/node/identity/did-store.js'
import { DidType } from '../../../src/wallet/did-document.js'
import { MNEMONIC, liteDidByHand } from '../../helpers/identity.js'

describe('identity/did-store', () => {
  let dir: string
  let kv: LevelStore
  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-didstore-'))
    kv = new LevelStore(join(dir, 'db'))
    await kv.open()
  })
  after(async () => { await kv.close(); rmSync(dir, { recursive: true, force: true }) })

  const files = { 'pubKey.pem': new TextEncoder().encode('-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n') }

  it('answers has/get from its cache, and a DID added after a negative answer is found', async () => {
    const store = new DidStore(join(dir, 'dids'), kv)
    await store.open()
    const did = liteDidByHand(MNEMONIC, 7)
    expect(await store.has(did)).to.equal(false)
    expect(await store.has(did)).to.equal(false)
    await store.add(did, DidType.LITE, files, {})
    expect(await store.has(did)).to.equal(true)
    expect((await store.get(did))?.type).to.equal(DidType.LITE)
    // a second store over the same database sees it too (nothing lives only in the cache)
    expect(await new DidStore(join(dir, 'dids'), kv).has(did)).to.equal(true)
  })

  it('keeps remote documents in memory once read (a document hashes to its DID, so it never goes stale)', async () => {
    const store = new DidStore(join(dir, 'dids'), kv)
    await store.open()
    const did = liteDidByHand(MNEMONIC, 9)
    await store.putRemoteDocument({ did, type: DidType.LITE, files: files })
    const fresh = new DidStore(join(dir, 'dids'), kv)
    expect((await fresh.remoteDocument(did))?.did).to.equal(did)
    rmSync(join(dir, 'dids', '.remote'), { recursive: true, force: true })
    expect((await fresh.remoteDocument(did))?.did).to.equal(did)
    expect((await store.remoteDocument(did))?.did).to.equal(did)
    expect(await new DidStore(join(dir, 'dids'), kv).remoteDocument(did)).to.equal(undefined)
  })

  it('a read overlapping an add never leaves the DID cached as absent', async () => {
    const store = new DidStore(join(dir, 'dids'), kv)
    await store.open()
    const did = liteDidByHand(MNEMONIC, 8)
    const [before] = await Promise.all([store.has(did), store.add(did, DidType.LITE, files, {})])
    expect(typeof before).to.equal('boolean')
    expect(await store.has(did)).to.equal(true)
  })
})
