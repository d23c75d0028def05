import { expect } from 'chai'
import { request, createServer } from 'node:http'
import { Readable } from 'node:stream'
import { readableChunks } from '../../../src/util/readable-chunks.js'

/** A readable giving `n` chunks of 1 KiB (byte i of chunk k is k), counting how many it made. */
function source (n: number, opts: { failAt?: number, closeAt?: number } = {}): { stream: Readable, made: () => number, destroyed: () => boolean } {
  let k = 0
  const stream = new Readable({
    highWaterMark: 1024,
    read () {
      if (k === opts.failAt) { this.destroy(new Error('broken source')); return }
      if (k === opts.closeAt) { this.destroy(); return }
      if (k === n) { this.push(null); return }
      this.push(Buffer.alloc(1024, k++ & 0xff))
    }
  })
  return { stream, made: () => k, destroyed: () => stream.destroyed }
}

describe('util/readable-chunks: a readable stream read with data events', () => {
  it('gives every chunk in order, then ends', async () => {
    const s = source(50)
    const got: number[] = []
    for await (const c of readableChunks(s.stream)) got.push(c[0])
    expect(got).to.deep.equal(Array.from({ length: 50 }, (_, i) => i))
  })

  it('holds the stream back while the consumer is behind', async () => {
    const s = source(200)
    let consumed = 0
    let ahead = 0
    for await (const c of readableChunks(s.stream, 2)) {
      expect(c.length).to.equal(1024)
      consumed++
      // let the stream run as far as it is allowed to
      for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve))
      ahead = Math.max(ahead, s.made() - consumed)
    }
    expect(consumed).to.equal(200)
    // the queue (2) and the stream's own buffer (1 KiB: one chunk) and the chunk being pushed
    expect(ahead).to.be.at.most(4)
  })

  it('an error of the stream rejects the read after the chunks already given', async () => {
    const s = source(100, { failAt: 10 })
    const got: number[] = []
    let err: unknown
    try { for await (const c of readableChunks(s.stream)) got.push(c[0]) } catch (e) { err = e }
    expect((err as Error).message).to.equal('broken source')
    expect(got).to.deep.equal(Array.from({ length: 10 }, (_, i) => i))
  })

  it('a stream closed before its end rejects the read (ERR_STREAM_PREMATURE_CLOSE)', async () => {
    const s = source(100, { closeAt: 5 })
    let err: unknown
    try { for await (const c of readableChunks(s.stream)) expect(c.length).to.equal(1024) } catch (e) { err = e }
    expect((err as { code?: string }).code).to.equal('ERR_STREAM_PREMATURE_CLOSE')
  })

  it('leaving early destroys the stream', async () => {
    const s = source(100)
    for await (const c of readableChunks(s.stream)) if (c[0] === 3) break
    expect(s.destroyed()).to.equal(true)
  })

  it('an HTTP request left once its last bytes arrived is drained, not destroyed: the answer still goes out', async () => {
    const body = Buffer.alloc(3 * 1024 * 1024, 7)
    // the reader stops at the last byte, as a multipart reader stops at the closing delimiter
    const server = createServer((req, res) => {
      void (async () => {
        let n = 0
        for await (const c of readableChunks(req)) { n += c.length; if (n === body.length) break }
        res.end(String(n))
      })()
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as { port: number }).port
    try {
      for (let round = 0; round < 20; round++) {
        const answer = await new Promise<string>((resolve, reject) => {
          const r = request({ host: '127.0.0.1', port, method: 'POST', path: '/', headers: { 'content-length': String(body.length) } }, (res) => {
            let text = ''
            res.on('data', (d: Buffer) => { text += d.toString() })
            res.on('end', () => { resolve(text) })
            res.on('error', reject)
          })
          r.on('error', reject)
          r.end(body)
        })
        expect(answer).to.equal(String(body.length))
      }
    } finally {
      await new Promise<void>((resolve) => server.close(() => { resolve() }))
    }
  })
})
