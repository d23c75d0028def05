import { expect } from 'chai'
import { formatAmount, parseAmount } from '../../../src/tokenchain/index.js'
import { selectTokens, type Holding } from '../../../src/tokens/select.js'
import { splitValues } from '../../../src/tokens/part-split.js'
import { isRbtError } from '../../../src/util/errors.js'

/** Deterministic PRNG so a failure can be replayed. */
function prng (seed: number): (n: number) => number {
  let s = seed >>> 0
  return (n) => { s = (s * 1664525 + 1013904223) >>> 0; return s % n }
}

describe('tokens: selectTokens (part-token arithmetic)', () => {
  it('takes whole tokens first, then parts largest first, then splits the closest token', () => {
    const h = (id: string, v: string): Holding => ({ tokenId: id, value: parseAmount(v) })
    const free = [h('a', '1'), h('b', '1'), h('c', '0.5'), h('d', '0.25'), h('e', '0.7')]
    const s = selectTokens(free, parseAmount('2.25'))
    expect(s.take.map((t) => t.tokenId)).to.deep.equal(['a', 'b', 'd'])
    expect(s.split).to.equal(undefined)
    const s2 = selectTokens(free, parseAmount('1.2'))
    expect(s2.take.map((t) => t.tokenId)).to.deep.equal(['a'])
    expect(s2.split?.token.tokenId).to.equal('d')
    expect(s2.split?.need).to.equal(200)
    expect(s2.split?.rest).to.equal(50)
  })

  it('keeps the wallet healthy: an exact part first, a part cut before a whole token, the shallowest of equal tokens', () => {
    const h = (id: string, v: string, depth?: number): Holding => ({ tokenId: id, value: parseAmount(v), ...(depth !== undefined ? { depth } : {}) })
    // an exact part moves alone: nothing is split, no smaller parts are used up
    const exact = selectTokens([h('w', '1'), h('big', '0.6'), h('small', '0.2'), h('fit', '0.3')], parseAmount('0.3'))
    expect(exact.take.map((t) => t.tokenId)).to.deep.equal(['fit'])
    expect(exact.split).to.equal(undefined)
    // a part serves: the whole token stays whole
    const cut = selectTokens([h('w', '1'), h('p', '0.6')], parseAmount('0.7'))
    expect(cut.take.map((t) => t.tokenId)).to.deep.equal(['p'])
    expect(cut.split?.token.tokenId).to.equal('w')
    const part = selectTokens([h('w', '1'), h('p', '0.6')], parseAmount('0.5'))
    expect(part.split?.token.tokenId).to.equal('p')
    // of two parts of the same value the shallower is cut, whatever their ids
    const shallow = selectTokens([h('a', '0.5', 40), h('b', '0.5', 2)], parseAmount('0.1'))
    expect(shallow.split?.token.tokenId).to.equal('b')
  })

  it('refuses more than the free total', () => {
    try { selectTokens([{ tokenId: 'a', value: 1000 }], 1001); expect.fail('should throw') } catch (e) { expect(isRbtError(e, 'INSUFFICIENT_BALANCE')).to.equal(true) }
  })

  it('property: over random holdings and 3-decimal amounts, what is taken plus the split part equals the amount', () => {
    const rnd = prng(42)
    for (let run = 0; run < 2000; run++) {
      const n = 1 + rnd(12)
      const free: Holding[] = Array.from({ length: n }, (_, i) => ({ tokenId: `t${i}`, value: rnd(3) === 0 ? 1000 : 1 + rnd(999) }))
      const total = free.reduce((s, x) => s + x.value, 0)
      const amount = 1 + rnd(total)
      // amounts go through the decimal text and back without loss
      expect(parseAmount(formatAmount(amount))).to.equal(amount)
      const sel = selectTokens(free, amount)
      const taken = sel.take.reduce((s, x) => s + x.value, 0)
      expect(taken + (sel.split?.need ?? 0)).to.equal(amount)
      if (sel.split !== undefined) {
        expect(sel.split.need + sel.split.rest).to.equal(sel.split.token.value)
        expect(sel.split.need).to.be.greaterThan(0)
        expect(sel.split.rest).to.be.greaterThan(0)
        expect(sel.take.map((t) => t.tokenId)).to.not.include(sel.split.token.tokenId)
      }
      expect(new Set(sel.take.map((t) => t.tokenId)).size).to.equal(sel.take.length)
    }
  })
})

describe('tokens: split values', () => {
  it('cuts the share as many times as asked and fits, then the rest', () => {
    expect(splitValues(1000, 300)).to.deep.equal([300, 700])
    expect(splitValues(1000, 200, 8)).to.deep.equal([200, 200, 200, 200, 200])
    expect(splitValues(1000, 300, 8)).to.deep.equal([300, 300, 300, 100])
    expect(splitValues(1000, 1, 3)).to.deep.equal([1, 1, 1, 997])
  })

  it('cuts the rest into parts of about the same value when asked, never into parts of nothing', () => {
    expect(splitValues(1000, 1, 8, 2)).to.deep.equal([1, 1, 1, 1, 1, 1, 1, 1, 496, 496])
    expect(splitValues(1000, 1, 3, 2)).to.deep.equal([1, 1, 1, 499, 498])
    expect(splitValues(1000, 300, 3, 4)).to.deep.equal([300, 300, 300, 25, 25, 25, 25])
    expect(splitValues(1000, 499, 2, 3)).to.deep.equal([499, 499, 1, 1])
    expect(splitValues(1000, 200, 5, 2)).to.deep.equal([200, 200, 200, 200, 200])
  })
})
