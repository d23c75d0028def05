import { expect } from 'chai'
import { BufferPool } from '../../../src/util/buffer-pool.js'

describe('util/buffer-pool', () => {
  it('a buffer given back is the one handed out next; views of any part of it give it back', () => {
    const pool = new BufferPool(1024, 4)
    const a = pool.take(1000)
    expect(a.byteLength).to.equal(1000)
    pool.give(a.subarray(10, 20))
    const b = pool.take(500)
    expect(b.buffer).to.equal(a.buffer)
    expect(b.byteLength).to.equal(500)
  })

  it('ignores what it did not hand out, what came back already, and keeps at most `keep` free', () => {
    const pool = new BufferPool(64, 2)
    pool.give(new Uint8Array(64))
    expect(pool.held).to.equal(0)
    const xs = [pool.take(64), pool.take(64), pool.take(64)]
    for (const x of xs) pool.give(x)
    pool.give(xs[0])
    expect(pool.held).to.equal(2 * 64)
    // the two kept come back, the third is new
    const again = [pool.take(1), pool.take(1), pool.take(1)]
    expect(new Set(again.map((x) => x.buffer)).size).to.equal(3)
    expect(again.filter((x) => xs.some((y) => y.buffer === x.buffer))).to.have.length(2)
  })

  it('a request larger than its size gets a buffer of its own, never pooled', () => {
    const pool = new BufferPool(16, 4)
    const big = pool.take(17)
    expect(big.byteLength).to.equal(17)
    pool.give(big)
    expect(pool.held).to.equal(0)
    expect(() => new BufferPool(0, 1)).to.throw(RangeError)
  })
})
