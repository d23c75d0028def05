import { expect } from 'chai'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { encodeMultipartStream } from '../../../src/client/rbt-client.js'
import { nodeHttpTransport } from '../../../src/client/node-http-transport.js'
import { undiciTransport } from '../../../src/client/undici-transport.js'
import type { HttpTransport } from '../../../src/client/transport.js'
import { streamMultipart } from '../../../src/api/server/multipart-stream.js'

/**
 * A file sent from disk is read into a few buffers in turn: whatever the transport and however
 * slowly the server reads, the bytes that arrive are the file's (no buffer is refilled before its
 * bytes were written to the socket).
 */
describe('client: a file uploaded from disk through buffers reused in turn', function () {
  this.timeout(60_000)
  let dir = ''
  let server: Server
  let origin = ''
  const file = randomBytes(24 * 1024 * 1024 + 12_345)
  const fileSha = createHash('sha256').update(file).digest('hex')

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-upload-stream-'))
    writeFileSync(join(dir, 'film.bin'), file)
    // a slow reader: a pause every few reads, so the client's writes wait for the socket to drain
    server = createServer((req, res) => {
      const got: Record<string, { sha: ReturnType<typeof createHash>, n: number }> = {}
      let reads = 0
      const slow = (async function * () { for await (const c of req) { if (++reads % 2 === 0) await sleep(1); yield c as Uint8Array } })()
      streamMultipart(slow, req.headers['content-type'], async (p) => {
        const h = (got[p.field] = { sha: createHash('sha256'), n: 0 })
        return { write: async (b) => { h.sha.update(b); h.n += b.length }, end: async () => {} }
      }).then(() => {
        res.end(JSON.stringify(Object.fromEntries(Object.entries(got).map(([k, v]) => [k, { sha: v.sha.digest('hex'), n: v.n }]))))
      }, (e) => { res.statusCode = 400; res.end(String(e)) })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`
  })
  after(async () => {
    await new Promise<void>((resolve) => server.close(() => { resolve() }))
    rmSync(dir, { recursive: true, force: true })
  })

  const transports: Array<[string, () => HttpTransport]> = [['undici', () => undiciTransport(origin, 2)], ['node:http', () => nodeHttpTransport()]]
  for (const [name, make] of transports) {
    it(`${name}: the artifact arrives whole and unchanged, twice over one transport, without piling up listeners`, async () => {
      const t = make()
      const warnings: string[] = []
      const onWarning = (w: Error): void => { warnings.push(w.name) }
      process.on('warning', onWarning)
      try {
        for (let round = 0; round < 2; round++) {
          const mp = await encodeMultipartStream({ fields: { did: 'x' }, files: { artifact: { filename: 'film.bin', path: join(dir, 'film.bin') } } }, { reuse: t.sendsChunksInTurn === true })
          expect(t.sendsChunksInTurn).to.equal(true)
          const res = await t.request({ method: 'POST', url: `${origin}/`, body: mp.body, headers: { 'content-type': mp.contentType }, timeoutMs: 30_000 })
          expect(res.status).to.equal(200)
          const got = JSON.parse(res.text) as Record<string, { sha: string, n: number }>
          expect(got.artifact).to.deep.equal({ sha: fileSha, n: file.length })
          expect(got.did.n).to.equal(1)
        }
        // a wait for drain that left its error listener behind warned after ten waits
        await new Promise((resolve) => setImmediate(resolve))
        expect(warnings).to.not.include('MaxListenersExceededWarning')
      } finally {
        process.off('warning', onWarning)
        await t.close?.()
      }
    })
  }

  it('without a transport that sends chunks in turn, every chunk keeps memory of its own', async () => {
    // a transport that gathers the chunks before it sends anything
    const mp = await encodeMultipartStream({ fields: { did: 'x' }, files: { artifact: { filename: 'film.bin', path: join(dir, 'film.bin') } } })
    const chunks: Uint8Array[] = []
    for await (const c of mp.body.chunks()) chunks.push(c)
    const whole = Buffer.concat(chunks)
    expect(whole.length).to.equal(mp.body.length)
    const at = whole.indexOf(file.subarray(0, 64))
    expect(at).to.be.greaterThan(0)
    expect(createHash('sha256').update(whole.subarray(at, at + file.length)).digest('hex')).to.equal(fileSha)
  })
})
