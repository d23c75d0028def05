import { expect } from 'chai'
import { BoundedSet, Lru } from '../../../src/util/lru.js'

describe('util: bounded set', () => {
  it('keeps at most max entries, dropping the least recently used (a hit counts as a use)', () => {
    const s = new BoundedSet(3)
    s.add('a').add('b').add('c')
    expect(s.has('a')).to.equal(true) // a is now the most recent
    s.add('d') // drops b
    expect([s.has('b'), s.has('a'), s.has('c'), s.has('d'), s.size]).to.deep.equal([false, true, true, true, 3])
    s.add('c') // present: refreshed, nothing dropped
    expect(s.size).to.equal(3)
    for (let i = 0; i < 1000; i++) s.add(`k${i}`)
    expect(s.size).to.equal(3)
    expect([s.has('k999'), s.has('k998'), s.has('k997'), s.has('k996')]).to.deep.equal([true, true, true, false])
  })

  it('keeps the exact order at a large size, through many evictions and hits', () => {
    const s = new BoundedSet(10_000)
    for (let i = 0; i < 10_000; i++) s.add(`k${i}`)
    // the oldest half is used again: the next 5,000 additions drop the other half
    for (let i = 0; i < 5000; i++) expect(s.has(`k${i}`)).to.equal(true)
    for (let i = 10_000; i < 15_000; i++) s.add(`k${i}`)
    expect(s.size).to.equal(10_000)
    expect([s.has('k0'), s.has('k4999'), s.has('k5000'), s.has('k9999'), s.has('k14999')]).to.deep.equal([true, true, false, false, true])
  })

  it('refuses a size that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, NaN]) expect(() => new BoundedSet(bad)).to.throw(RangeError)
  })
})

describe('util: LRU memo bounded by bytes', () => {
  it('drops the least recently used entries once their counted bytes pass the bound, whatever their number', () => {
    const m = new Lru<string>(1000, { maxBytes: 100, sizeOf: (v, k) => k.length + v.length })
    for (let i = 0; i < 50; i++) m.set(`k${i}`.padEnd(20, '.'), 'v')
    expect(m.bytes).to.be.at.most(100)
    expect(m.size).to.equal(4)
    expect(m.get('k49'.padEnd(20, '.'))).to.equal('v')
    expect(m.get('k0'.padEnd(20, '.'))).to.equal(undefined)
    // an entry larger than the whole bound is not kept
    m.set('big', 'x'.repeat(200))
    expect(m.get('big')).to.equal(undefined)
    expect([...m.entries()].map(([k]) => k.trim())).to.have.length(4)
  })

  it('refuses a byte bound that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5]) expect(() => new Lru<string>(10, { maxBytes: bad, sizeOf: () => 1 })).to.throw(RangeError)
  })
})
