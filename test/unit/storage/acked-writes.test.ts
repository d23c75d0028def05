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

  it('keeps its queue within the bound when the same few records are written again and again (it grew an entry per write)', () => {
    const a = new AckedWrites(4096)
    // a node's balances and a handful of records rewritten at every step: never more keys than the limit
    for (let i = 0; i < 100_000; i++) a.record([{ type: 'put', collection: 'balances', key: `did${i % 5}`, value: i }, { type: 'put', collection: 'cs-outgoing', key: `tx${i % 3}`, value: i }])
    expect(a.size).to.equal(8)
    expect(a.queued).to.be.at.most(2 * 4096 + 1024)
    expect(a.entries().map(([c, k, v]) => `${c}/${k}=${String(v.value)}`)).to.deep.equal([
      'balances/did0=99995', 'balances/did1=99996', 'balances/did2=99997', 'cs-outgoing/tx1=99997',
      'balances/did3=99998', 'cs-outgoing/tx2=99998', 'balances/did4=99999', 'cs-outgoing/tx0=99999'
    ])
    // forgetting the oldest still follows acknowledgement order once new keys come
    for (let i = 0; i < 4096; i++) a.record([{ type: 'put', collection: 'c', key: `n${i}`, value: i }])
    expect(a.size).to.equal(4096)
    expect(a.entries().some(([c]) => c !== 'c'), 'the rewritten records were the oldest acknowledged').to.equal(false)
  })
})
