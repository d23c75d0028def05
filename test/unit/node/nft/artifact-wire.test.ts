import '../../../../src/util/polyfill.js'
import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRpc, type Rpc, type BuiltinMethods } from '../../../../src/p2p/rpc.js'
import type { P2pHost } from '../../../../src/p2p/host.js'
import { ArtifactWriter } from '../../../../src/token-files/nft/artifact-file.js'
import { NftFileStore } from '../../../../src/token-files/nft/nft-files.js'
import { ArtifactBlockServer } from '../../../../src/node/nft/artifact-blocks.js'
import { fetchArtifact, fetchProgress, type BlockSource } from '../../../../src/node/nft/artifact-fetch.js'
import { createNftNetwork, type NftMethods } from '../../../../src/node/nft/nft-network.js'
import { CHUNK_SIZE, decodeInnerNode } from '../../../../src/tokenchain/unixfs-dag.js'
import { connect, startHosts, stopAll } from '../../../p2p/helpers.js'

/**
 * Artifact blocks over a real libp2p connection (pnet, Noise, Yamux, binary rpc frames): a large
 * fetch cut midway resumes and checks, and a slow reader holds the server back.
 */
const MIB = 1024 * 1024
/** The size of the interrupted fetch (ARTIFACT_WIRE_MIB to shrink it on a slow machine). */
const SIZE_MIB = Number(process.env.ARTIFACT_WIRE_MIB ?? 200)
const DID = 'bafybmi' + 'a'.repeat(52)

type Methods = Pick<NftMethods, 'nft.blocks'>

describe('node/nft: artifact blocks over libp2p', function () {
  this.timeout(600_000)
  const root = mkdtempSync(join(tmpdir(), 'rbt-artifact-wire-'))
  const holder = new NftFileStore(join(root, 'holder'))
  let a: P2pHost, b: P2pHost
  let ra: Rpc<Methods & BuiltinMethods>, rb: Rpc<Methods & BuiltinMethods>
  /** blocks the server has produced (read from disk and handed to the stream) */
  let produced = 0
  const server = new ArtifactBlockServer(holder)

  before(async () => {
    [a, b] = await startHosts(2)
    ra = createRpc<Methods>({ host: a, handlers: { 'nft.blocks': (r) => server.blocks(r.nftId, r.cids) } })
    rb = createRpc<Methods>({
      host: b,
      handlers: {
        'nft.blocks': (r, ctx) => (async function * () {
          for await (const blk of server.blocks(r.nftId, r.cids, ctx.signal)) { produced++; yield blk }
        })()
      }
    })
    await ra.start()
    await rb.start()
    await connect(a, b)
  })
  after(async () => {
    await stopAll([ra, rb, a, b])
    rmSync(root, { recursive: true, force: true })
  })

  /** A stored artifact of `mib` MiB of pseudo-random bytes; its NFT id, CID and SHA-256. */
  async function storedArtifact (mib: number, seed: string): Promise<{ nftId: string, cid: string, sha: string }> {
    const cipher = createCipheriv('aes-128-ctr', createHash('sha256').update(seed).digest().subarray(0, 16), Buffer.alloc(16))
    const sha = createHash('sha256')
    const w = await ArtifactWriter.open(holder.dir, 4 * 2 ** 30)
    const zeros = Buffer.alloc(4 * MIB)
    for (let left = mib * MIB; left > 0; left -= zeros.length) {
      const piece = cipher.update(zeros.subarray(0, Math.min(left, zeros.length)))
      sha.update(piece)
      await w.write(piece)
    }
    const f = await holder.createFromUpload(DID, Buffer.from('{}'), await w.close(), 'big.bin')
    return { nftId: f.nftId, cid: f.manifest.artifact, sha: sha.digest('hex') }
  }

  async function sha256File (path: string): Promise<string> {
    const h = createHash('sha256')
    const fh = await open(path, 'r')
    try { for await (const c of fh.createReadStream()) h.update(c as Buffer) } finally { await fh.close() }
    return h.digest('hex')
  }

  it(`a ${SIZE_MIB} MiB fetch cut midway resumes from the leaves it kept and checks`, async () => {
    const { nftId, cid, sha } = await storedArtifact(SIZE_MIB, 'cut')
    const leaves = Math.ceil(SIZE_MIB * MIB / CHUNK_SIZE)
    const net = createNftNetwork(b, rb)
    const dir = join(root, 'fetch-cut')
    // the first run's only holder stops answering once it has sent about 40 % of the leaves
    let sent = 0
    const cutAfter = Math.floor(leaves * 0.4)
    const real = net.blockSource(a.peerId, nftId)
    const cutting: BlockSource = {
      peer: a.peerId,
      blocks: async function * (cids) {
        for await (const blk of real.blocks(cids)) {
          if (++sent > cutAfter) throw new Error('holder gone')
          yield blk
        }
      }
    }
    const failed = await fetchArtifact({ cid, dir, sources: [cutting] }).catch((e: Error) => e)
    expect(failed).to.be.instanceOf(Error)
    expect((failed as Error).message).to.match(/blocks still missing/)
    const kept = (await fetchProgress(dir))!.done
    // the DAG's first leaf is fetched twice (walk, then leaves), and requests in flight end at the cut
    expect(kept).to.be.within(Math.floor(cutAfter * 0.5), cutAfter)
    const r = await fetchArtifact({ cid, dir, sources: [net.blockSource(a.peerId, nftId)] })
    expect(r.resumed).to.equal(kept)
    expect(r.blocks).to.equal(leaves - kept)
    expect(r.size).to.equal(SIZE_MIB * MIB)
    expect(await sha256File(r.path)).to.equal(sha)
  })

  it('a slow reader holds a fast server: blocks are read from disk only as credit comes back', async () => {
    const { nftId } = await storedArtifact(16, 'slow')
    // 64 leaves under one root (the DAG index holds just the root)
    const inner = await holder.dagIndex(nftId)
    const cids = decodeInnerNode(inner[inner.length - 1]).links.map((l) => l.cid)
    expect(cids.length).to.equal(64)
    produced = 0
    const net = createNftNetwork(a, ra)
    const src = net.blockSource(b.peerId, nftId)
    let consumed = 0
    let most = 0
    // buffers counted after a full collection on both sides: what is held, not garbage not yet collected
    collectGarbage()
    const external0 = process.memoryUsage().arrayBuffers
    for await (const blk of src.blocks(cids)) {
      expect(blk.block.byteLength).to.be.greaterThan(CHUNK_SIZE)
      consumed++
      most = Math.max(most, produced - consumed)
      await new Promise((resolve) => setTimeout(resolve, 15))
      if (consumed === 48) break
    }
    // the page window is 4: at most that many ahead, plus the one being written
    expect(most).to.be.at.most(6)
    expect(produced).to.be.at.most(48 + 6)
    // what the closed stream still held (frames in flight, a grown Yamux window) is let go as its
    // reset is processed, later on a loaded machine: measured until it is, within a deadline
    let grown = Infinity
    for (const deadline = Date.now() + 15_000; grown >= 16 * MIB && Date.now() < deadline;) {
      collectGarbage()
      grown = process.memoryUsage().arrayBuffers - external0
      if (grown >= 16 * MIB) await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(grown, `buffers grew by ${(grown / MIB).toFixed(1)} MiB`).to.be.below(16 * MIB)
  })
})

/** A full garbage collection (V8's collector reached through its expose-gc flag; a test-only aid). */
function collectGarbage (): void {
  setFlagsFromString('--expose-gc')
  ;(runInNewContext('gc') as () => void)()
}
