import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ArtifactWriter } from '../../../../src/token-files/nft/artifact-file.js'
import { NftFileStore } from '../../../../src/token-files/nft/nft-files.js'
import { ArtifactBlockServer } from '../../../../src/node/nft/artifact-blocks.js'
import { fetchArtifact, fetchProgress, type BlockSource } from '../../../../src/node/nft/artifact-fetch.js'
import { cidV0ForContent } from '../../../../src/tokenchain/cid.js'
import { CHUNK_SIZE } from '../../../../src/tokenchain/unixfs-dag.js'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'
import { Tmpfs, requireTmpfs } from '../../../helpers/tmpfs.js'
import { waitFor } from '../../../helpers/wait.js'

const DID = 'bafybmi' + 'a'.repeat(52)
const bytesOf = (seed: string, n: number): Buffer => createCipheriv('aes-128-ctr', createHash('sha256').update(seed).digest().subarray(0, 16), Buffer.alloc(16)).update(Buffer.alloc(n))

/** An NFT stored the way create-nft stores it (the artifact through an ArtifactWriter). */
async function stored (files: NftFileStore, artifact: Buffer): Promise<{ nftId: string, cid: string }> {
  const w = await ArtifactWriter.open(files.dir, 1 << 30)
  for (let off = 0; off < artifact.length; off += 100_003) await w.write(artifact.subarray(off, off + 100_003))
  const f = await files.createFromUpload(DID, Buffer.from('{}'), await w.close(), 'art.bin')
  return { nftId: f.nftId, cid: f.manifest.artifact }
}

const source = (peer: string, server: ArtifactBlockServer, nftId: string): BlockSource => ({ peer, blocks: (cids) => server.blocks(nftId, cids) })

describe('node/nft: artifacts served and fetched block by block', function () {
  this.timeout(60_000)
  const root = mkdtempSync(join(tmpdir(), 'rbt-artifact-'))
  after(() => { rmSync(root, { recursive: true, force: true }) })
  const holder = new NftFileStore(join(root, 'holder'))

  for (const n of [0, 1, CHUNK_SIZE, CHUNK_SIZE + 1, 175 * CHUNK_SIZE + 5]) {
    it(`${n} bytes: the fetched file is the artifact, the DAG index the holder's`, async () => {
      const artifact = bytesOf('art ' + String(n), n)
      const { nftId, cid } = await stored(holder, artifact)
      expect(cid).to.equal(cidV0ForContent(artifact))
      const dir = join(root, 'fetch-' + String(n))
      const r = await fetchArtifact({ cid, dir, sources: [source('p1', new ArtifactBlockServer(holder), nftId), source('p2', new ArtifactBlockServer(holder), nftId)] })
      expect(r.size).to.equal(n)
      expect(readFileSync(r.path).equals(artifact)).to.equal(true)
      expect(r.blocks).to.equal(Math.max(1, Math.ceil(n / CHUNK_SIZE)))
      const hex = (xs: Uint8Array[]): string[] => xs.map((x) => Buffer.from(x).toString('hex')).sort()
      expect(hex(r.inner)).to.deep.equal(hex(await holder.dagIndex(nftId)))
    })
  }

  it('leaf pages joined into the buffers the fetch gives (as the wire joins a page that came in pieces): each written before its buffer serves again, a few buffers for the whole file', async () => {
    const artifact = bytesOf('pooled', 64 * CHUNK_SIZE + 11)
    const { nftId, cid } = await stored(holder, artifact)
    const server = new ArtifactBlockServer(holder)
    const buffers = new Set<ArrayBufferLike>()
    let joined = 0
    const joining: BlockSource = {
      peer: 'p',
      blocks: async function * (cids, into) {
        for await (const b of server.blocks(nftId, cids)) {
          if (into === undefined) { yield b; continue }
          const out = into(b.block.byteLength)
          out.set(b.block)
          buffers.add(out.buffer)
          joined++
          // a buffer given back too early would be overwritten here by a later page while its write is in flight
          yield { cid: b.cid, block: out }
        }
      }
    }
    const r = await fetchArtifact({ cid, dir: join(root, 'fetch-pooled'), sources: [joining] })
    expect(readFileSync(r.path).equals(artifact)).to.equal(true)
    expect(joined).to.equal(65)
    expect(buffers.size, 'page buffers made for 65 pages').to.be.at.most(32)
  })

  it('keeps two requests in flight per peer (each request holds its leaves in memory until written)', async () => {
    const artifact = bytesOf('many holders', 200 * CHUNK_SIZE + 3)
    const { nftId, cid } = await stored(holder, artifact)
    const server = new ArtifactBlockServer(holder)
    const perPeerNow: Record<string, number> = {}
    let mostPerPeer = 0
    const counted = (peer: string): BlockSource => ({
      peer,
      blocks: async function * (cids) {
        perPeerNow[peer] = (perPeerNow[peer] ?? 0) + 1
        mostPerPeer = Math.max(mostPerPeer, perPeerNow[peer])
        try {
          for await (const b of server.blocks(nftId, cids)) {
            // another turn of the event loop per block, so that requests overlap as on a wire
            await new Promise((resolve) => { setImmediate(resolve) })
            yield b
          }
        } finally {
          perPeerNow[peer]--
        }
      }
    })
    const r = await fetchArtifact({ cid, dir: join(root, 'fetch-many'), batch: 4, sources: ['p1', 'p2', 'p3', 'p4'].map(counted) })
    expect(readFileSync(r.path).equals(artifact)).to.equal(true)
    expect(Object.keys(r.perPeer).length, 'peers that served leaves').to.be.greaterThan(1)
    expect(mostPerPeer, 'requests in flight to one peer').to.equal(2)
  })

  it('slow holders do not hold up a fast one: it serves every leaf they do not hold while they stall', async () => {
    const artifact = bytesOf('slow holders', 120 * CHUNK_SIZE)
    const { nftId, cid } = await stored(holder, artifact)
    const server = new ArtifactBlockServer(holder)
    let open = (): void => {}
    const gate = new Promise<void>((resolve) => { open = resolve })
    const slow = (peer: string): BlockSource => ({ peer, blocks: async function * (cids) { await gate; yield * server.blocks(nftId, cids) } })
    let fastServed = 0
    const fast: BlockSource = { peer: 'fast', blocks: async function * (cids) { for await (const b of server.blocks(nftId, cids)) { fastServed++; yield b } } }
    const done = fetchArtifact({ cid, dir: join(root, 'fetch-slow'), batch: 4, sources: [fast, slow('slow1'), slow('slow2')] })
    // (the DAG's structure comes from the first holder) the slow holders' four requests hold at most
    // 16 leaves: the fast one serves the rest meanwhile
    await waitFor(() => fastServed >= 120 - 16, { timeoutMs: 20_000, what: 'the fast holder to serve the leaves the slow ones do not hold' })
    open()
    const r = await done
    expect(readFileSync(r.path).equals(artifact)).to.equal(true)
  })

  it('goes on fetching while its progress is synced to disk; the record names only leaves written before the sync began', async () => {
    const artifact = bytesOf('syncing', 48 * CHUNK_SIZE)
    const { nftId, cid } = await stored(holder, artifact)
    const server = new ArtifactBlockServer(holder)
    const served = new Set<string>()
    const counting: BlockSource = { peer: 'p', blocks: async function * (cids) { for await (const b of server.blocks(nftId, cids)) { served.add(b.cid); yield b } } }
    const dir = join(root, 'fetch-syncing')
    let release = (): void => {}
    const held = new Promise<void>((resolve) => { release = resolve })
    let syncs = 0
    let firstRecord: Uint8Array | undefined
    const fetching = fetchArtifact({
      cid,
      dir,
      sources: [counting],
      batch: 4,
      perPeer: 1,
      syncEvery: 4,
      syncData: async (fh) => {
        // the first sync is held (a slow disk) until every leaf has come; later ones pass, the
        // second reading the record the first one wrote (syncs run one at a time)
        if (++syncs === 1) await held
        else if (syncs === 2) firstRecord = await readFile(join(dir, 'done'))
        await fh.datasync()
      }
    })
    // (the 48 leaves and the DAG's root)
    await waitFor(() => served.size === 49, { timeoutMs: 20_000, what: 'every leaf served while the first sync is held' })
    expect(syncs, 'syncs begun while one is held').to.equal(1)
    release()
    const r = await fetching
    expect(readFileSync(r.path).equals(artifact)).to.equal(true)
    expect(r.blocks).to.equal(48)
    // the held sync began after the first 4 leaves were written, long before the 48th
    const named = firstRecord!.reduce((n, d) => n + d, 0)
    expect(named).to.be.at.least(4)
    expect(named).to.be.below(48)
    expect((await fetchProgress(dir))?.done).to.equal(48)
  })

  it('an NFT stored without a DAG index gets one built from its file when first served', async () => {
    const artifact = bytesOf('old', 3 * CHUNK_SIZE + 7)
    const f = await holder.create(DID, Buffer.from('{"old":1}'), artifact, 'old.bin')
    expect(existsSync(join(f.folder, '.dag'))).to.equal(false)
    const r = await fetchArtifact({ cid: f.manifest.artifact, dir: join(root, 'fetch-old'), sources: [source('p', new ArtifactBlockServer(holder), f.nftId)] })
    expect(readFileSync(r.path).equals(artifact)).to.equal(true)
    expect(existsSync(join(f.folder, '.dag'))).to.equal(true)
  })

  it('a peer sending wrong blocks is passed over and counted; alone, it leaves the fetch incomplete with the good leaves kept', async () => {
    const artifact = bytesOf('bad', 40 * CHUNK_SIZE)
    const { nftId, cid } = await stored(holder, artifact)
    const liar = new ArtifactBlockServer(holder, { corruptEvery: 5 })
    const dir = join(root, 'fetch-bad')
    const failed = await fetchArtifact({ cid, dir, sources: [source('liar', liar, nftId)], batch: 4, perPeer: 1, syncEvery: 1 }).catch((e: Error) => e)
    expect(failed).to.be.instanceOf(Error)
    expect((failed as Error).message).to.match(/blocks still missing.*liar.*sent a wrong block/)
    // the DAG walk asked for leaf 0 once (served 1st), then leaves 0-3 came 2nd to 5th: the 5th was wrong
    expect((await fetchProgress(dir))?.done).to.equal(3)
    const r = await fetchArtifact({ cid, dir, sources: [source('liar', liar, nftId), source('honest', new ArtifactBlockServer(holder), nftId)] })
    expect(r.resumed).to.equal(3)
    // each of the liar's requests in flight may meet a wrong block before it is passed over
    expect(r.rejected.liar).to.be.at.least(1)
    expect(r.rejected.honest).to.equal(undefined)
    expect(r.blocks).to.equal(37)
    expect(readFileSync(r.path).equals(artifact)).to.equal(true)
  })

  describe('a full disk on the fetching side', () => {
    let fs: Tmpfs | undefined
    before(function () { requireTmpfs(this); fs = Tmpfs.mount(4) })
    after(() => { fs?.dispose() })

    it('stops the fetch with INSUFFICIENT_STORAGE (not blamed on the peers), keeping what it has', async () => {
      const artifact = bytesOf('too big', 40 * CHUNK_SIZE)
      const { nftId, cid } = await stored(holder, artifact)
      const dir = join(fs!.dir, 'fetch')
      const e = await fetchArtifact({ cid, dir, sources: [source('p', new ArtifactBlockServer(holder), nftId)] }).catch((x: unknown) => x)
      expect(e).to.be.instanceOf(RbtError)
      expect((e as RbtError).code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
    })
  })
})
