import { expect } from 'chai'
import { AckedWrites } from '../../../src/storage/acked-writes.js'

describe('storage: the latest acknowledged writes', () => {
  it('keeps the last value or deletion per key, in acknowledgement order, forgetting the oldest past the bound', () => {
    const a = new AckedWrites(3)
    a.record([{ type: 'put', collection: 'c', key: 'x', value: 1 }, { type: 'put', collection: 'c', key: 'y', value: 2 }])
    a.record([{ type: 'put', collection: 'c', key: 'x', value: 3 }, { type: 'del', collection: 'd', key: 'z' }])
    expect(a.entries()).to.deep.equal([
      ['c', 'y', { deleted: false, value: 2 }],
      ['c', 'x', { deleted: false, value: 3 }],
      ['d', 'z', { deleted: true }]
    ])
    a.record([{ type: 'put', collection: 'c', key: 'w', value: 4 }])
    // y was the oldest acknowledged; x's older put does not evict its newer one
    expect(a.entries().map(([c, k]) => `${c}/${k}`)).to.deep.equal(['c/x', 'd/z', 'c/w'])
    a.clear()
    expect(a.size).to.equal(0)
  })

  it('stays bounded over many writes to few and to many keys', () => {
    const a = new AckedWrites(100)
    for (let i = 0; i < 50_000; i++) a.record([{ type: 'put', collection: 'c', key: `k${i % 7 === 0 ? 'hot' : i}`, value: i }])
    expect(a.size).to.equal(100)
    const last = a.entries().at(-1)!
    expect(last[1]).to.equal('k49999')
  })
})
