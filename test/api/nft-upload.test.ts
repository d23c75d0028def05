import { expect } from 'chai'
import { createCipheriv, createHash } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/server/app.js'
import { streamMultipart } from '../../src/api/server/multipart-stream.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { NftFileStore } from '../../src/token-files/nft/nft-files.js'
import { NftService } from '../../src/node/nft/nft-service.js'
import { cidV0ForContent } from '../../src/tokenchain/cid.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { offlineAssetDeps } from './stub-assets.js'
import { Tmpfs, requireTmpfs } from '../helpers/tmpfs.js'

const ALICE = 'bafybmi' + 'a'.repeat(52)
const BOUNDARY = '----nft-upload-test-boundary'

function randomish (seed: string, n: number): Buffer {
  return createCipheriv('aes-128-ctr', createHash('sha256').update(seed).digest().subarray(0, 16), Buffer.alloc(16)).update(Buffer.alloc(n))
}

/** A create-NFT form as a stream of chunks of `chunk` bytes (so parts and boundaries fall across reads). */
function formStream (artifact: Buffer, chunk: number, opts: { metadata?: string, did?: string, fieldsLast?: boolean } = {}): { body: ReadableStream<Uint8Array>, length: number } {
  const field = (name: string, value: string): Buffer => Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="${name}"\r\n\r\n${value}\r\n`)
  const fields = Buffer.concat([field('did', opts.did ?? ALICE), field('artifact_name', 'film.mp4')])
  const files = Buffer.concat([
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="metadata"; filename="meta.json"\r\nContent-Type: application/json\r\n\r\n${opts.metadata ?? '{"name":"film"}'}\r\n`),
    Buffer.from(`--${BOUNDARY}\r\nContent-Disposition: form-data; name="artifact"; filename="film.mp4"\r\nContent-Type: application/octet-stream\r\n\r\n`),
    artifact, Buffer.from('\r\n')
  ])
  const whole = Buffer.concat(opts.fieldsLast === true ? [files, fields, Buffer.from(`--${BOUNDARY}--\r\n`)] : [fields, files, Buffer.from(`--${BOUNDARY}--\r\n`)])
  let off = 0
  return {
    length: whole.length,
    body: new ReadableStream<Uint8Array>({
      pull (c) {
        if (off >= whole.length) { c.close(); return }
        c.enqueue(new Uint8Array(whole.subarray(off, off + chunk)))
        off += chunk
      }
    })
  }
}

describe('api: NFT artifacts streamed to disk (no fixed cap; the operator\'s limit; a full disk)', function () {
  this.timeout(120_000)
  const dirs: string[] = []
  after(() => { for (const d of dirs) rmSync(d, { recursive: true, force: true }) })

  function appWith (nftDir: string, artifactLimit: number): ReturnType<typeof createApp> {
    const nfts = new NftService({ files: new NftFileStore(nftDir), ...offlineAssetDeps(new Map(), ALICE), artifactLimit })
    return createApp({ ...unusedIdentity(), ...unusedTokens(), ...unusedConsensus(), nfts, node: {} as never, bootstrap: {} as never } as unknown as ApiServices, { version: 't' })
  }
  const post = async (app: ReturnType<typeof createApp>, f: { body: ReadableStream<Uint8Array>, length: number }, declare = true): Promise<{ status: number, env: { status: boolean, message: string, result: unknown } }> => {
    const res = await app.fetch(new Request('http://127.0.0.1/svc/v1/nfts/generate', {
      method: 'POST', body: f.body, duplex: 'half', headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, ...(declare ? { 'content-length': String(f.length) } : {}) }
    } as RequestInit))
    return { status: res.status, env: await res.json() as never }
  }

  it('an artifact of 40 MiB (more than the old 16 MiB cap) is created with the ipfs-add CID, moved into place, its DAG index kept', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbt-nft-up-'))
    dirs.push(dir)
    const app = appWith(dir, 64 * 1024 * 1024)
    const artifact = randomish('forty', 40 * 1024 * 1024 + 12345)
    const r = await post(app, formStream(artifact, 65_536 + 7))
    expect(r.status, r.env.message).to.equal(200)
    const id = r.env.result as string
    const manifest = JSON.parse(readFileSync(join(dir, id, 'manifest.json'), 'utf8')) as { Artifact: string }
    expect(manifest.Artifact).to.equal(cidV0ForContent(artifact))
    expect(readFileSync(join(dir, id, 'film.mp4')).equals(artifact)).to.equal(true)
    expect(readdirSync(join(dir, id)).sort()).to.deep.equal(['.dag', 'film.mp4', 'manifest.json', 'metadata.json', 'nft.json'])
    expect(readdirSync(dir).filter((n) => n.startsWith('.'))).to.deep.equal([])
    // the same inputs, fields after the files and odd chunk sizes: the same id, nothing left behind
    const again = await post(app, formStream(artifact, 4093, { fieldsLast: true }), false)
    expect(again.env.result).to.equal(id)
    expect(readdirSync(dir)).to.deep.equal([id])
  })

  it('over the limit: 413 with the limit and its setting named, whether declared or found while streaming; nothing left behind', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'rbt-nft-up-'))
    dirs.push(dir)
    const app = appWith(dir, 1024 * 1024)
    const big = randomish('big', 3 * 1024 * 1024)
    const declared = await post(app, formStream(big, 65_536))
    expect(declared.status).to.equal(413)
    expect(declared.env.message).to.match(/limit of this node is 1048576 bytes.*nftArtifactLimit/)
    const streamed = await post(app, formStream(randomish('b', 1024 * 1024 + 1), 65_536), false)
    expect(streamed.status).to.equal(413)
    expect(streamed.env.message).to.match(/larger than this node's limit of 1048576 bytes/)
    expect(readdirSync(dir)).to.deep.equal([])
    // a refused creation (metadata not JSON) removes the uploaded artifact too
    const refused = await post(app, formStream(randomish('c', 300_000), 65_536, { metadata: '{oops' }))
    expect(refused.status).to.equal(400)
    expect(readdirSync(dir)).to.deep.equal([])
    const exact = await post(app, formStream(randomish('d', 1024 * 1024), 65_536))
    expect(exact.status, exact.env.message).to.equal(200)
  })

  it('splits parts correctly whatever the read sizes (a boundary cut across reads, CRLFs inside the file)', async () => {
    const content = Buffer.concat([Buffer.from('\r\n--'), Buffer.from(BOUNDARY.slice(0, 10)), randomish('x', 5000), Buffer.from('\r\n-')])
    for (const chunk of [1, 2, 3, 7, 64, 4096, 1 << 20]) {
      const parts: Record<string, Buffer> = {}
      const f = formStream(content, chunk)
      await streamMultipart(f.body as unknown as AsyncIterable<Uint8Array>, `multipart/form-data; boundary=${BOUNDARY}`, async (p) => {
        const got: Buffer[] = []
        return { write: async (b) => { got.push(Buffer.from(b)) }, end: async () => { parts[p.field] = Buffer.concat(got) } }
      })
      expect(Object.keys(parts), String(chunk)).to.deep.equal(['did', 'artifact_name', 'metadata', 'artifact'])
      expect(parts.artifact.equals(content), String(chunk)).to.equal(true)
      expect(parts.did.toString()).to.equal(ALICE)
    }
  })

  it('a delimiter cut across two reads at any offset ends the part there', async () => {
    for (const chunk of [48, 49, 50, 97]) {
      for (let len = 0; len < 2 * chunk; len++) {
        const content = randomish(`cut ${len}`, len)
        const parts: Record<string, Buffer> = {}
        await streamMultipart(formStream(content, chunk).body as unknown as AsyncIterable<Uint8Array>, `multipart/form-data; boundary=${BOUNDARY}`, async (p) => {
          const got: Buffer[] = []
          return { write: async (b) => { got.push(Buffer.from(b)) }, end: async () => { parts[p.field] = Buffer.concat(got) } }
        })
        expect(parts.artifact.equals(content), `${chunk}/${len}`).to.equal(true)
        expect(parts.metadata.toString(), `${chunk}/${len}`).to.equal('{"name":"film"}')
      }
    }
  })

  it('hands a part\'s bytes over as views of the reads, not copies', async () => {
    const content = randomish('views', 1024 * 1024 + 333)
    const f = formStream(content, 65_536)
    const reads = new Set<ArrayBufferLike>()
    const body = (async function * () { for await (const r of f.body as unknown as AsyncIterable<Uint8Array>) { reads.add(r.buffer); yield r } })()
    const got: Uint8Array[] = []
    await streamMultipart(body, `multipart/form-data; boundary=${BOUNDARY}`, async (p) => ({
      write: async (b) => { if (p.field === 'artifact') got.push(b) },
      end: async () => {}
    }))
    expect(Buffer.concat(got).equals(content)).to.equal(true)
    // past the read that held the part's headers (joined with the one before it), nothing is copied
    const copied = got.slice(1).filter((b) => b.length > 100 && !reads.has(b.buffer))
    expect(got.length).to.be.greaterThan(10)
    expect(copied.map((b) => b.length)).to.deep.equal([])
  })

  describe('a disk that fills up midway', () => {
    let fs: Tmpfs | undefined
    before(function () { requireTmpfs(this); fs = Tmpfs.mount(8) })
    after(() => { fs?.dispose() })

    it('answers 507 and leaves no file behind', async () => {
      const dir = join(fs!.dir, 'nft')
      const app = appWith(dir, 64 * 1024 * 1024)
      const r = await post(app, formStream(randomish('full', 12 * 1024 * 1024), 65_536))
      expect(r.status, r.env.message).to.equal(507)
      expect(r.env.message).to.match(/disk .* is full/)
      expect(readdirSync(dir)).to.deep.equal([])
      // the disk has room again: a smaller artifact goes through
      const ok = await post(app, formStream(randomish('fits', 2 * 1024 * 1024), 65_536))
      expect(ok.status, ok.env.message).to.equal(200)
    })
  })
})
