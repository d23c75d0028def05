import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { closeSync, mkdtempSync, openSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ArtifactWriter } from '../../../../src/token-files/nft/artifact-file.js'
import { CHUNK_SIZE, UnixFsFileBuilder, leafDigest } from '../../../../src/tokenchain/unixfs-dag.js'
import { closeLeafHashPool, leafDigestsHere, leafHashPoolStats, slabWorkerReady, writeAndHashOnWorker } from '../../../../src/token-files/nft/leaf-hash-pool.js'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'
import { Tmpfs, requireTmpfs } from '../../../helpers/tmpfs.js'

/** The content of test/unit/tokenchain/unixfs-dag.test.ts, whose CIDs were written down from an independent importer. */
function content (seed: string, n: number): Buffer {
  const key = createHash('sha256').update(seed).digest().subarray(0, 16)
  return createCipheriv('aes-128-ctr', key, Buffer.alloc(16)).update(Buffer.alloc(n))
}

const EXPECTED: Array<[number, string]> = [
  [1, 'Qmf3KqWZc7qF1nmNgBPErPoaGZ5KW1jU9PkXmfJXMNXgxA'],
  [CHUNK_SIZE + 1, 'QmZsQHGR9EkSXqe9EiDYd8epscXPoPFBDec4a4ZDKD8g73'],
  [175 * CHUNK_SIZE, 'QmPYAzWtopYNhwcj91TVTxdFQZMLQ2cK9tmYbpRHge8nn4'],
  [100 * 1024 * 1024, 'QmNUrEixEP7oUzFn3xkd48mawEYuouCeHmrWDVeQFguKRZ']
]

/** Ways an upload arrives: whole, in odd large reads, in reads of mixed sizes (small ones among them). */
const PATTERNS: Array<[string, (left: number, i: number) => number]> = [
  ['one write', (left) => left],
  ['writes of 100,003 bytes', () => 100_003],
  ['writes of 1, 7, 8191, 8192, 65,536 and 1,048,583 bytes in turn', (_, i) => [1, 7, 8191, 8192, 65_536, 1_048_583][i % 6]]
]

describe('token-files/nft/artifact-file: an upload in slabs, written and hashed on a worker', function () {
  this.timeout(120_000)
  let dir: string
  before(() => { dir = mkdtempSync(join(tmpdir(), 'rbt-artifact-writer-')) })
  after(async () => { rmSync(dir, { recursive: true, force: true }); await closeLeafHashPool() })

  for (const [size, cid] of EXPECTED) {
    for (const [name, next] of PATTERNS) {
      it(`${size} bytes, ${name}: the ipfs-add CID, the same inner nodes, the same bytes on disk`, async () => {
        const bytes = content(`rbtnode unixfs ${size}`, size)
        const w = await ArtifactWriter.open(dir, 2 ** 32)
        for (let off = 0, i = 0; off < bytes.length; i++) {
          const n = Math.min(next(bytes.length - off, i), bytes.length - off)
          await w.write(bytes.subarray(off, off + n))
          off += n
        }
        const up = await w.close()
        expect(up.cid).to.equal(cid)
        expect(up.size).to.equal(size)
        const b = new UnixFsFileBuilder()
        for (let off = 0; off < bytes.length; off += CHUNK_SIZE) b.addChunk(bytes.subarray(off, off + CHUNK_SIZE))
        expect(up.inner.map((n) => Buffer.from(n).toString('hex'))).to.deep.equal(b.finish().inner.map((n) => Buffer.from(n).toString('hex')))
        expect(readFileSync(up.path).equals(bytes)).to.equal(true)
        rmSync(up.path)
      })
    }
  }

  it('an empty upload is the empty file\'s CID', async () => {
    const w = await ArtifactWriter.open(dir, 10)
    const up = await w.close()
    expect(up.cid).to.equal('QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH')
    expect(readFileSync(up.path).length).to.equal(0)
    rmSync(up.path)
  })

  it('with no hash worker (RBTNODE_HASH_WORKERS=0), the same CID', async () => {
    await closeLeafHashPool()
    process.env.RBTNODE_HASH_WORKERS = '0'
    try {
      const bytes = content(`rbtnode unixfs ${175 * CHUNK_SIZE}`, 175 * CHUNK_SIZE)
      const w = await ArtifactWriter.open(dir, 2 ** 32)
      for (let off = 0; off < bytes.length; off += 100_003) await w.write(bytes.subarray(off, off + 100_003))
      const up = await w.close()
      expect(up.cid).to.equal('QmPYAzWtopYNhwcj91TVTxdFQZMLQ2cK9tmYbpRHge8nn4')
      rmSync(up.path)
    } finally {
      delete process.env.RBTNODE_HASH_WORKERS
      await closeLeafHashPool()
    }
  })

  it('the worker writes a slab at its offset and gives the digests the calling thread gives; the slab comes back moved, not copied', async () => {
    const bytes = content('slab', 3 * CHUNK_SIZE + 17)
    const lengths = [CHUNK_SIZE, CHUNK_SIZE, CHUNK_SIZE, 17]
    const slab = new ArrayBuffer(4 * CHUNK_SIZE)
    new Uint8Array(slab).set(bytes)
    const here = leafDigestsHere(bytes, lengths).map((d) => Buffer.from(d).toString('hex'))
    const path = join(dir, 'slab.bin')
    const fd = openSync(path, 'w')
    try {
      expect(await slabWorkerReady()).to.equal(true)
      const before = leafHashPoolStats()?.completed ?? 0
      const done = await writeAndHashOnWorker({ slab, lengths, fd, at: 5 })
      expect(slab.byteLength).to.equal(0)
      expect(done.slab.byteLength).to.equal(4 * CHUNK_SIZE)
      expect(Buffer.from(done.slab, 0, bytes.length).equals(bytes)).to.equal(true)
      expect(done.error).to.equal(undefined)
      expect(done.digests.map((d) => Buffer.from(d).toString('hex'))).to.deep.equal(here)
      expect(leafHashPoolStats()?.completed).to.equal(before + 1)
      expect(leafHashPoolStats()?.inline).to.equal(0)
    } finally { closeSync(fd) }
    const written = readFileSync(path)
    expect(written.subarray(0, 5).equals(Buffer.alloc(5))).to.equal(true)
    expect(written.subarray(5).equals(bytes)).to.equal(true)
    expect(here[0]).to.equal(Buffer.from(leafDigest(bytes.subarray(0, CHUNK_SIZE))).toString('hex'))
    rmSync(path)
  })

  it('a slab the worker cannot write comes back with the write\'s error code and no digests', async () => {
    const path = join(dir, 'read-only.bin')
    writeFileSync(path, '')
    const fd = openSync(path, 'r')
    try {
      expect(await slabWorkerReady()).to.equal(true)
      const done = await writeAndHashOnWorker({ slab: new ArrayBuffer(CHUNK_SIZE), lengths: [CHUNK_SIZE], fd, at: 0 })
      expect(done.error?.code).to.equal('EBADF')
      expect(done.digests).to.deep.equal([])
      expect(done.slab.byteLength).to.equal(CHUNK_SIZE)
    } finally { closeSync(fd) }
    rmSync(path)
  })

  it('an upload whose worker is stopped midway fails with a write error and leaves no file behind', async () => {
    const bytes = content('stopped', 16 * CHUNK_SIZE)
    const d = mkdtempSync(join(dir, 'stopped-'))
    const w = await ArtifactWriter.open(d, 2 ** 32)
    let err: unknown
    try {
      await w.write(bytes.subarray(0, 8 * CHUNK_SIZE))
      await closeLeafHashPool()
      await w.write(bytes.subarray(8 * CHUNK_SIZE))
      await w.close()
    } catch (e) { err = e }
    expect(err).to.be.instanceOf(RbtError)
    expect(readdirSync(d)).to.deep.equal([])
  })

  it('writes are copied: a caller reusing its buffer does not change what was written', async () => {
    const bytes = content('reused', 3 * CHUNK_SIZE + 5)
    const w = await ArtifactWriter.open(dir, 2 ** 32)
    const scratch = Buffer.alloc(4096)
    for (let off = 0; off < bytes.length; off += scratch.length) {
      const n = bytes.copy(scratch, 0, off, off + scratch.length)
      await w.write(scratch.subarray(0, n))
    }
    scratch.fill(0)
    const up = await w.close()
    expect(readFileSync(up.path).equals(bytes)).to.equal(true)
    const b = new UnixFsFileBuilder()
    for (let off = 0; off < bytes.length; off += CHUNK_SIZE) b.addChunk(bytes.subarray(off, off + CHUNK_SIZE))
    expect(up.cid).to.equal(b.finish().cid)
    rmSync(up.path)
  })

  describe('a disk that fills up midway', () => {
    let fs: Tmpfs | undefined
    before(function () { requireTmpfs(this); fs = Tmpfs.mount(8) })
    after(() => { fs?.dispose() })

    it('INSUFFICIENT_STORAGE from a later write or the close, with nothing left behind', async () => {
      const bytes = content('full', 12 * 1024 * 1024)
      const w = await ArtifactWriter.open(fs!.dir, 2 ** 32)
      let err: unknown
      try {
        for (let off = 0; off < bytes.length; off += 65_536) await w.write(bytes.subarray(off, off + 65_536))
        await w.close()
      } catch (e) { err = e }
      expect(err).to.be.instanceOf(RbtError)
      expect((err as RbtError).code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
      expect(readdirSync(fs!.dir)).to.deep.equal([])
    })
  })
})
