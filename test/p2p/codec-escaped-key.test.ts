import { expect } from 'chai'
import { decodeFrame, BINARY_FRAME_MARK } from '../../src/p2p/codec.js'

/** A binary frame from a header text and its trailing bytes, as a peer would craft it. */
function binaryFrame (header: string, data: Uint8Array): Uint8Array {
  const h = new TextEncoder().encode(header)
  const out = new Uint8Array(5 + h.byteLength + data.byteLength)
  out[0] = BINARY_FRAME_MARK
  new DataView(out.buffer).setUint32(1, h.byteLength)
  out.set(h, 5)
  out.set(data, 5 + h.byteLength)
  return out
}

describe('p2p codec: a byte-string key written with a JSON escape (review)', () => {
  it('JSON frame: {"\\u0024b64": ...} decodes to bytes, as the reviver did', () => {
    const f = decodeFrame(new TextEncoder().encode('{"sig":{"\\u0024b64":"AQID"}}')) as Record<string, unknown>
    expect(f.sig).to.be.instanceOf(Uint8Array)
  })

  it('JSON frame: the same sub-object decodes the same whether or not another field names "$b64"', () => {
    const a = decodeFrame(new TextEncoder().encode('{"sig":{"\\u0024b64":"AQID"}}')) as Record<string, unknown>
    const b = decodeFrame(new TextEncoder().encode('{"sig":{"\\u0024b64":"AQID"},"memo":"$b64"}')) as Record<string, unknown>
    expect(b.sig).to.be.instanceOf(Uint8Array)
    expect(a.sig instanceof Uint8Array).to.equal(b.sig instanceof Uint8Array)
  })

  it('binary frame: {"\\u0024bin": [0, 3]} decodes to bytes, as the reviver did', () => {
    const f = decodeFrame(binaryFrame('{"sig":{"\\u0024bin":[0,3]}}', new Uint8Array([1, 2, 3]))) as Record<string, unknown>
    expect(f.sig).to.be.instanceOf(Uint8Array)
  })

  it('binary frame: an escaped reference out of the frame is refused, as the reviver did', () => {
    expect(() => decodeFrame(binaryFrame('{"sig":{"\\u0024bin":[0,99999]}}', new Uint8Array(0)))).to.throw(/out of the frame/)
  })

  it('a frame nested 100,000 levels deep is refused as malformed (as the reviver did), not handed on', () => {
    const deep = '{"a":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}'
    expect(() => decodeFrame(new TextEncoder().encode(deep))).to.throw(/malformed frame/)
    expect(() => decodeFrame(binaryFrame(deep, new Uint8Array(0)))).to.throw(/malformed frame/)
  })
})
