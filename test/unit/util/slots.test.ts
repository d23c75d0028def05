import { expect } from 'chai'
import { Slots } from '../../../src/util/slots.js'

describe('util/slots', () => {
  it('holds at most its size at once, and hands freed slots to the waiters in order', async () => {
    const slots = new Slots(2)
    const order: string[] = []
    await slots.take()
    await slots.take()
    expect(slots.held).to.equal(2)
    const a = slots.take().then(() => { order.push('a') })
    const b = slots.take().then(() => { order.push('b') })
    await Promise.resolve()
    expect(order).to.deep.equal([])
    slots.give()
    await a
    expect(order).to.deep.equal(['a'])
    expect(slots.held).to.equal(2)
    slots.give()
    await b
    expect(order).to.deep.equal(['a', 'b'])
    slots.give()
    slots.give()
    expect(slots.held).to.equal(0)
  })

  it('does not count below zero when freed more often than taken', async () => {
    const slots = new Slots(1)
    slots.give()
    expect(slots.held).to.equal(0)
    await slots.take()
    expect(slots.held).to.equal(1)
  })

  it('refuses a size that is not a positive integer', () => {
    for (const n of [0, -1, 1.5, Number.NaN]) expect(() => new Slots(n)).to.throw(RangeError)
  })
})
