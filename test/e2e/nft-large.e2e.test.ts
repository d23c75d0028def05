import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { createReadStream, mkdtempSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { RbtClient } from '../../src/client/rbt-client.js'
import { fetchProgress } from '../../src/node/nft/artifact-fetch.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV, complete, createLiteDid, quorumNetwork, USER_PASSWORD } from '../helpers/quorum-network.js'
import { RssWatch } from '../helpers/rss.js'
import { waitFor } from '../helpers/wait.js'

const MIB = 1024 * 1024
/** the memory a node may add while it creates or fetches a large artifact (the artifact's size does not count) */
const RSS_BOUND = 64 * MIB

interface FetchResult { path: string, artifact?: { size: number, blocks: number, resumed: number, peers: Record<string, number>, rejected: Record<string, number> } }

/** A file of `mib` MiB of pseudo-random bytes (AES-CTR keystream of `seed`); its sha256. */
async function writeArtifact (path: string, seed: string, mib: number): Promise<string> {
  const sha = createHash('sha256')
  const c = createCipheriv('aes-128-ctr', createHash('sha256').update(seed).digest().subarray(0, 16), Buffer.alloc(16))
  const fh = await open(path, 'w')
  const zeros = Buffer.alloc(4 * MIB)
  for (let left = mib * MIB; left > 0; left -= zeros.length) {
    const b = c.update(zeros.subarray(0, Math.min(zeros.length, left)))
    sha.update(b)
    await fh.write(b)
  }
  await fh.close()
  return sha.digest('hex')
}

async function sha256File (path: string): Promise<string> {
  const h = createHash('sha256')
  for await (const c of createReadStream(path)) h.update(c as Buffer)
  return h.digest('hex')
}

async function createNft (client: RbtClient, did: string, path: string, name: string): Promise<string> {
  const made = await client.call('nftsGenerate', {
    form: { fields: { did, artifact_name: name }, files: { metadata: { filename: 'meta.json', data: Buffer.from(JSON.stringify({ name })) }, artifact: { filename: name, path } } },
    timeoutMs: 10 * 60_000
  })
  return made.result as string
}

const fetchDir = (n: NodeProcess, nftId: string): string => join(n.dir, 'Rubix', 'TestNet', 'nft', '.fetch', nftId)

describe('e2e: a 200 MiB NFT artifact created, deployed, transferred and fetched block by block', function () {
  this.timeout(600_000)
  let work = ''
  before(() => { work = mkdtempSync(join(tmpdir(), 'rbtnode-nft-large-')) })
  after(() => { if (work !== '') rmSync(work, { recursive: true, force: true }) })

  it('the receiving node fetches the files and they check; neither node grows by more than 64 MiB', async () => {
    const net = await quorumNetwork()
    const { a, b, alice, bob } = net
    const path = join(work, 'film.bin')
    const digest = await writeArtifact(path, 'two hundred', 200)
    const watch = new RssWatch([a.child!.pid!, b.child!.pid!])
    const nftId = await createNft(a.client, alice, path, 'film.bin')
    const [createA] = watch.phase()
    let first = await a.client.envelope('txInitiate', { body: { initiator: alice, owner: alice, tokens: { nft: [{ nftId, value: 1, data: 'deployed' }], transferNftOwnership: false }, memo: 'large nft' } })
    let done = await complete(a.client, first, USER_PASSWORD)
    expect(done.status, done.message).to.equal(true)
    first = await a.client.envelope('txInitiate', { body: { initiator: alice, owner: bob, tokens: { nft: [{ nftId, value: 1, data: 'to bob' }], transferNftOwnership: true }, memo: 'large nft' } })
    done = await complete(a.client, first, USER_PASSWORD)
    expect(done.status, done.message).to.equal(true)
    await waitFor(async () => ((await b.client.call('didBalancesNft', { params: { did: bob } })).result as Array<{ nft_id: string }> ?? []).some((x) => x.nft_id === nftId),
      { timeoutMs: 60_000, what: 'bob to hold the NFT' })
    watch.phase()
    // the receiving node fetches the files by itself once the transfer is delivered; the explicit
    // call joins that fetch (or finds the files in place)
    await waitFor(async () => /NFT \S+ received/.test(b.logs), { timeoutMs: 10 * 60_000, intervalMs: 500, what: 'the receiving node to fetch the NFT\'s files after the transfer' })
    const fetched = (await b.client.call('nftFetch', { query: { nft: nftId }, timeoutMs: 10 * 60_000 })).result as FetchResult
    const [, fetchB] = watch.phase()
    watch.stop()
    if (fetched.artifact !== undefined) {
      expect(fetched.artifact.size).to.equal(200 * MIB)
      expect(fetched.artifact.blocks).to.equal(800)
    }
    expect(await sha256File(join(fetched.path, 'film.bin'))).to.equal(digest)
    console.log(`      (RSS growth: creating node ${(createA / MIB).toFixed(1)} MiB, fetching node ${(fetchB / MIB).toFixed(1)} MiB)`)
    expect(createA, `creating node grew by ${(createA / MIB).toFixed(1)} MiB`).to.be.at.most(RSS_BOUND)
    expect(fetchB, `fetching node grew by ${(fetchB / MIB).toFixed(1)} MiB`).to.be.at.most(RSS_BOUND)
    // the fetch folder is gone once the artifact is in place
    expect(await fetchProgress(fetchDir(b, nftId))).to.equal(undefined)
  })
})

describe('e2e: an artifact fetch that loses its peer, its own process, and meets a peer sending wrong blocks', function () {
  this.timeout(600_000)
  let work = ''
  // A creates; B holds a copy; both serve each leaf 40 ms late so that a fetch can be cut midway
  const slow = (): Record<string, string> => ({ ...FIXTURE_ENV, RBTNODE_TEST_HOOKS: '1', RBTNODE_NFT_FAULT: 'slow:40' })
  let a: NodeProcess
  let b: NodeProcess
  const nodes: NodeProcess[] = []
  let nftId = ''
  let digest = ''
  const LEAVES = 256

  const fresh = async (n: number, holders: NodeProcess[]): Promise<NodeProcess> => {
    const c = await new NodeProcess({ n, extraArgs: ['-testNet'], env: FIXTURE_ENV }).start()
    nodes.push(c)
    await c.client.call('bootstrapAdd', { body: { peers: holders.map((h) => h.multiaddr) } })
    for (const h of holders) await waitFor(async () => (await c.client.envelope('nodePing', { query: { peerID: h.peerId } })).status, { timeoutMs: 30_000, what: 'the new node to reach a holder' })
    return c
  }

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'rbtnode-nft-cut-'))
    a = new NodeProcess({ n: 0, extraArgs: ['-testNet'], env: slow() })
    b = new NodeProcess({ n: 1, extraArgs: ['-testNet'], env: slow() })
    nodes.push(a, b)
    await Promise.all([a.start(), b.start()])
    await b.client.call('bootstrapAdd', { body: { peers: [a.multiaddr] } })
    const did = await createLiteDid(a.client, USER_PASSWORD)
    const path = join(work, 'model.bin')
    digest = await writeArtifact(path, 'sixty-four', 64)
    nftId = await createNft(a.client, did, path, 'model.bin')
    await waitFor(async () => (await b.client.envelope('nodePing', { query: { peerID: a.peerId } })).status, { timeoutMs: 30_000, what: 'B to reach A' })
    const r = (await b.client.call('nftFetch', { query: { nft: nftId } })).result as FetchResult
    expect(r.artifact?.peers).to.deep.equal({ [a.peerId]: LEAVES })
  })
  after(async () => {
    await Promise.all(nodes.map(async (n) => { await n.dispose() }))
    if (work !== '') rmSync(work, { recursive: true, force: true })
  })

  it('the serving node killed midway: the fetch finishes from the second holder, no block fetched twice', async () => {
    const c = await fresh(2, [a, b])
    const fetching = c.client.call('nftFetch', { query: { nft: nftId } })
    // some leaves on disk (progress synced), then A dies
    await waitFor(async () => ((await fetchProgress(fetchDir(c, nftId)))?.done ?? 0) >= 64, { timeoutMs: 120_000, intervalMs: 20, what: 'C to have 64 leaves on disk' })
    await a.kill()
    const r = (await fetching).result as FetchResult
    expect(await sha256File(join(r.path, 'model.bin'))).to.equal(digest)
    const peers = r.artifact!.peers
    expect(peers[a.peerId]).to.be.greaterThan(0)
    expect(peers[b.peerId]).to.be.greaterThan(0)
    // every leaf written once: what A sent before it died was kept
    expect(peers[a.peerId] + peers[b.peerId]).to.equal(LEAVES)
    expect(r.artifact!.blocks).to.equal(LEAVES)
    await a.start()
  })

  it('the fetching node itself killed midway: after its restart the fetch goes on from the leaves it kept', async () => {
    const d = await fresh(3, [b])
    void d.client.call('nftFetch', { query: { nft: nftId } }).catch(() => {})
    await waitFor(async () => ((await fetchProgress(fetchDir(d, nftId)))?.done ?? 0) >= 64, { timeoutMs: 120_000, intervalMs: 20, what: 'D to have 64 leaves on disk' })
    await d.kill()
    const kept = (await fetchProgress(fetchDir(d, nftId)))!.done
    expect(kept).to.be.within(64, LEAVES - 1)
    await d.start()
    await d.client.call('bootstrapAdd', { body: { peers: [b.multiaddr] } })
    await waitFor(async () => (await d.client.envelope('nodePing', { query: { peerID: b.peerId } })).status, { timeoutMs: 30_000, what: 'D to reach B again' })
    const r = (await d.client.call('nftFetch', { query: { nft: nftId } })).result as FetchResult
    expect(r.artifact!.resumed).to.equal(kept)
    expect(r.artifact!.blocks).to.equal(LEAVES - kept)
    expect(await sha256File(join(r.path, 'model.bin'))).to.equal(digest)
  })

  it('a peer serving a corrupted block is passed over and counted; the artifact comes whole from the honest one', async () => {
    // B now flips a byte of every third leaf it serves; A is honest (and quick)
    b.opts.env!.RBTNODE_NFT_FAULT = 'corrupt:3'
    a.opts.env!.RBTNODE_NFT_FAULT = 'slow:1'
    await Promise.all([b.restart(), a.restart()])
    await b.client.call('bootstrapAdd', { body: { peers: [a.multiaddr] } })
    const e = await fresh(4, [b, a])
    const r = (await e.client.call('nftFetch', { query: { nft: nftId } })).result as FetchResult
    expect(r.artifact!.rejected[b.peerId]).to.be.at.least(1)
    expect(r.artifact!.rejected[a.peerId]).to.equal(undefined)
    expect(Object.values(r.artifact!.peers).reduce((x, y) => x + y, 0)).to.equal(LEAVES)
    expect(await sha256File(join(r.path, 'model.bin'))).to.equal(digest)
    // with the corrupting peer as the only holder the fetch fails, saying why, and keeps the good leaves it got
    // every other holder (A, and the nodes that fetched it in the tests above) stopped
    await Promise.all(nodes.filter((n) => n !== b).map(async (n) => { await n.stop() }))
    const f = await fresh(5, [b])
    const failed = await f.client.envelope('nftFetch', { query: { nft: nftId } })
    expect(failed.status).to.equal(false)
    expect(failed.message).to.match(/sent a wrong block/)
    // (a wrong block may come while the DAG is walked, before any leaf is written)
    const kept = await fetchProgress(fetchDir(f, nftId))
    expect(kept === undefined || kept.done < LEAVES, JSON.stringify(kept)).to.equal(true)
    expect((await f.client.envelope('nftFetch', { query: { nft: nftId } })).status).to.equal(false)
  })
})
