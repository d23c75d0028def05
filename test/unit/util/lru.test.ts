import { expect } from 'chai'
import { BoundedSet } from '../../../src/util/lru.js'

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

  it('refuses a size that is not a positive integer', () => {
    for (const bad of [0, -1, 1.5, NaN]) expect(() => new BoundedSet(bad)).to.throw(RangeError)
  })
})
