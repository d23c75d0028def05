import { expect } from 'chai'
import { gzipSync } from 'node:zlib'
import { RbtError } from '../../../src/util/errors.js'
import { ResponseParser, canonicalHeaderKey, writeRequest } from '../../../src/p2p/kubo/http1.js'

const pattern = (n: number): Buffer => { const b = Buffer.alloc(n); for (let i = 0; i < n; i++) b[i] = (i * 7) % 256; return b }

/** Feeds `bytes` to a parser in pieces of `step` bytes. */
function parse (bytes: Buffer, step: number, end = false): ResponseParser {
  const p = new ResponseParser()
  for (let off = 0; off < bytes.length && !p.done; off += step) p.push(bytes.subarray(off, off + step))
  if (end) p.end()
  return p
}

function chunked (body: Buffer, size: number): Buffer {
  const parts: Buffer[] = []
  for (let off = 0; off < body.length; off += size) {
    const c = body.subarray(off, off + size)
    parts.push(Buffer.from(`${c.length.toString(16)}\r\n`), c, Buffer.from('\r\n'))
  }
  parts.push(Buffer.from('0\r\n\r\n'))
  return Buffer.concat(parts)
}

describe('p2p/kubo/http1: HTTP/1.1 framing for /x/ streams', () => {
  describe('writeRequest', () => {
    it("writes a POST as Go's net/http client does", () => {
      const r = writeRequest({ method: 'POST', path: '/api/get-peer-info?did=x', host: 'localhost:22011', headers: { 'content-type': 'application/json', 'x-b': '1' }, body: '{"a":1}' })
      expect(r.toString('latin1')).to.equal(
        'POST /api/get-peer-info?did=x HTTP/1.1\r\nHost: localhost:22011\r\nUser-Agent: Go-http-client/1.1\r\nConnection: close\r\n' +
        'Content-Length: 7\r\nContent-Type: application/json\r\nX-B: 1\r\nAccept-Encoding: gzip\r\n\r\n{"a":1}')
    })

    it('writes a GET without a length, and an empty POST with Content-Length: 0', () => {
      expect(writeRequest({ method: 'GET', path: '/api/ping', host: 'h' }).toString()).to.not.include('Content-Length')
      expect(writeRequest({ method: 'POST', path: '/p', host: 'h' }).toString()).to.include('Content-Length: 0\r\n')
    })

    it('refuses a header with a line break and a path with a space', () => {
      expect(() => writeRequest({ method: 'GET', path: '/a b', host: 'h' })).to.throw(RbtError)
      expect(() => writeRequest({ method: 'GET', path: '/', host: 'h', headers: { a: 'x\r\nInjected: 1' } })).to.throw(RbtError)
    })

    it('canonical header keys', () => {
      expect(canonicalHeaderKey('content-type')).to.equal('Content-Type')
      expect(canonicalHeaderKey('X-BODY-sha256')).to.equal('X-Body-Sha256')
    })
  })

  describe('ResponseParser', () => {
    const body = pattern(200_000)

    for (const step of [997, 7, 4096, 1 << 20]) {
      it(`reads a Content-Length body over 64 KiB in pieces of ${step} bytes`, () => {
        const bytes = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`), body])
        const p = parse(bytes, step)
        expect(p.done).to.equal(true)
        expect(p.response.status).to.equal(200)
        expect(p.response.headers['content-type']).to.equal('application/json')
        expect(p.response.body.equals(body)).to.equal(true)
      })
    }

    for (const step of [3, 1000, 65_536]) {
      it(`reads a chunked body over 64 KiB (pieces of ${step} bytes), with chunk extensions and trailers`, () => {
        const enc = chunked(body, 10_000).toString('latin1').replace('2710\r\n', '2710;name=v\r\n')
        const bytes = Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'), Buffer.from(enc.replace(/0\r\n\r\n$/, '0\r\nX-Trailer: t\r\n\r\n'), 'latin1')])
        const p = parse(bytes, step)
        expect(p.done).to.equal(true)
        expect(p.response.body.equals(body)).to.equal(true)
      })
    }

    it('reads a body that runs to the end of the stream', () => {
      const p = parse(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nConnection: close\r\n\r\n'), body]), 5000)
      expect(p.done).to.equal(false)
      p.end()
      expect(p.response.body.equals(body)).to.equal(true)
    })

    it('skips a 100 Continue and unpacks a gzip body', () => {
      const gz = gzipSync(body)
      const bytes = Buffer.concat([Buffer.from(`HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${gz.length}\r\n\r\n`), gz])
      const p = parse(bytes, 1000)
      expect(p.response.body.equals(body)).to.equal(true)
      expect(p.response.headers['content-encoding']).to.equal(undefined)
    })

    it('a response cut short is a PROTOCOL error, never a short body', () => {
      const bytes = Buffer.concat([Buffer.from(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`), body.subarray(0, 70_000)])
      expect(() => parse(bytes, 4096, true)).to.throw(RbtError).with.property('code', 'PROTOCOL')
      const cut = chunked(body, 10_000).subarray(0, 50_000)
      expect(() => parse(Buffer.concat([Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n'), cut]), 4096, true)).to.throw(RbtError).with.property('code', 'PROTOCOL')
      expect(() => new ResponseParser().end()).to.throw(RbtError)
    })

    it('refuses a bad status line, a bad chunk size and a body past its limit', () => {
      expect(() => parse(Buffer.from('HTTP/2 200 OK\r\n\r\n'), 100)).to.throw(RbtError)
      expect(() => parse(Buffer.from('HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n'), 100)).to.throw(RbtError)
      const small = new ResponseParser(1000)
      expect(() => small.push(Buffer.from('HTTP/1.1 200 OK\r\nContent-Length: 5000\r\n\r\n'))).to.throw(RbtError)
    })

    it('a 204 and a Content-Length of 0 are whole at once', () => {
      expect(parse(Buffer.from('HTTP/1.1 204 No Content\r\n\r\n'), 100).done).to.equal(true)
      const p = parse(Buffer.from('HTTP/1.1 500 Internal Server Error\r\nContent-Length: 0\r\n\r\n'), 100)
      expect(p.response.status).to.equal(500)
      expect(p.response.reason).to.equal('Internal Server Error')
    })
  })
})
