import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, readdirSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { CID } from 'multiformats/cid'
import { FsBlockstore, SHA2_256, cidFor, DAG_PB, RAW, SHA3_256 } from '../../../src/p2p/kubo/blockstore.js'
import { importFile, importFolder, rechunk } from '../../../src/p2p/kubo/unixfs-import.js'
import { getTree, readWhole } from '../../../src/p2p/kubo/unixfs-export.js'
import { cidV0ForContent } from '../../../src/tokenchain/cid.js'
import { didFromPublicFiles } from '../../../src/wallet/did-string.js'

const CHUNK = 262_144
const sha = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

describe('p2p/kubo: blockstore and UnixFS import/export', () => {
  let dir: string
  let store: FsBlockstore
  const local = { get: async (cid: CID): Promise<Uint8Array> => { const b = await store.get(cid); if (b === undefined) throw new Error(`missing ${cid.toString()}`); return b } }

  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-blocks-'))
    store = new FsBlockstore(join(dir, 'blocks'))
  })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  describe('FsBlockstore', () => {
    it('keeps a block on disk under its multihash, one file for its CIDv0 and CIDv1', async () => {
      const bytes = Buffer.from('a block')
      const v0 = cidFor(0, DAG_PB, SHA2_256, bytes)
      await store.put(v0, bytes)
      expect(Buffer.from((await store.get(v0))!).equals(bytes)).to.equal(true)
      expect(await store.has(CID.createV1(DAG_PB, v0.multihash))).to.equal(true)
      expect(readdirSync(join(dir, 'blocks')).length).to.equal(1)
    })

    it('refuses a block that does not match its CID', async () => {
      const cid = cidFor(1, RAW, SHA3_256, Buffer.from('one'))
      let err: unknown
      try { await store.put(cid, Buffer.from('two')) } catch (e) { err = e }
      expect(err).to.have.property('code', 'VERIFICATION_FAILED')
      expect(await store.has(cid)).to.equal(false)
    })

    it('a block damaged on disk is removed and reported absent, never served', async () => {
      const bytes = randomBytes(1000)
      const cid = cidFor(1, RAW, SHA2_256, bytes)
      await store.put(cid, bytes)
      writeFileSync(store.pathOf(cid).file, bytes.subarray(0, 500))
      expect(await store.get(cid)).to.equal(undefined)
      expect(await store.has(cid)).to.equal(false)
    })
  })

  describe('import as `ipfs add` lays files out', () => {
    it('rechunk cuts any pieces into 256 KiB chunks', async () => {
      const pieces = [randomBytes(100_000), randomBytes(500_000), randomBytes(1)]
      const out: number[] = []
      for await (const c of rechunk(pieces)) out.push(c.length)
      expect(out).to.deep.equal([CHUNK, CHUNK, 600_001 - 2 * CHUNK])
    })

    for (const size of [0, 10, CHUNK, CHUNK + 1, 175 * CHUNK + 3]) {
      it(`a file of ${size} bytes gets the CIDv0 of a default ipfs add, and reads back`, async () => {
        const bytes = randomBytes(size)
        const r = await importFile(store, bytes, 'v0')
        expect(r.cid.toString()).to.equal(cidV0ForContent(bytes))
        expect(r.size).to.equal(size)
        expect(sha(await readWhole(local, r.cid))).to.equal(sha(bytes))
      })
    }

    it('a file read from disk gets the same CID as its bytes', async () => {
      const bytes = randomBytes(3 * CHUNK + 77)
      writeFileSync(join(dir, 'f'), bytes)
      expect((await importFile(store, { path: join(dir, 'f') })).cid.toString()).to.equal(cidV0ForContent(bytes))
    })

    it("a DID's folder with --cid-version 1 --hash sha3-256 is the DID, and ipfs get writes it back", async () => {
      const files = { 'did.png': randomBytes(CHUNK * 2 + 5), 'pubShare.png': randomBytes(5000), 'pubKey.pem': Buffer.from('key\n') }
      const r = await importFolder(store, files, 'v1-sha3')
      expect(r.cid.toString()).to.equal(didFromPublicFiles(files))
      await getTree(local, r.cid, join(dir, 'out'))
      for (const [n, b] of Object.entries(files)) expect(sha(readFileSync(join(dir, 'out', n)))).to.equal(sha(b))
    })

    it('a single-chunk file under v1-sha3 is one raw block', async () => {
      const bytes = randomBytes(1000)
      const r = await importFile(store, bytes, 'v1-sha3')
      expect(r.cid.code).to.equal(RAW)
      expect(r.cid.multihash.code).to.equal(SHA3_256)
    })

    it('reading a folder as a file is refused', async () => {
      const r = await importFolder(store, { a: Buffer.from('x') }, 'v0')
      let err: unknown
      try { await readWhole(local, r.cid) } catch (e) { err = e }
      expect(err).to.have.property('code', 'INVALID_INPUT')
    })
  })
})
