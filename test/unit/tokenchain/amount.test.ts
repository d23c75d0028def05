import { expect } from 'chai'
import {
  addAmounts, ceilFloat3, floatToMilli, floatToMilliExact, formatAmount, milliToFloat, parseAmount,
  parseTransferAmount, pledgePerQuorum, roundFloat3, splitAmount, subtractAmount
} from '../../../src/tokenchain/amount.js'
import { isRbtError } from '../../../src/util/errors.js'

describe('tokenchain/amount', () => {
  it('parses strings and numbers into milli-RBT', () => {
    expect(parseAmount('1')).to.equal(1000)
    expect(parseAmount('0.001')).to.equal(1)
    expect(parseAmount('12.5')).to.equal(12500)
    expect(parseAmount('12.500')).to.equal(12500)
    expect(parseAmount(' 7.25 ')).to.equal(7250)
    expect(parseAmount('+3')).to.equal(3000)
    expect(parseAmount(0.2)).to.equal(200)
    expect(parseAmount(0.1 + 0.2 - 0.3 + 1)).to.equal(1000) // 1 in shortest form
    expect(parseAmount(1.005)).to.equal(1005)
    expect(parseAmount(0)).to.equal(0)
  })

  const rejects: Array<[unknown, RegExp]> = [
    ['-1', /negative/], [-0.5, /negative/], [-0, /negative/], [NaN, /not a number/], [Infinity, /finite/],
    ['1.0001', /more than 3 decimal/], [0.1 + 0.2, /more than 3 decimal/], [1e-7, /more than 3 decimal/],
    ['1e3', /plain decimal/], ['abc', /plain decimal/], ['', /empty/], ['.5', /plain decimal/], ['1.', /plain decimal/],
    ['0x10', /plain decimal/], [1e21, /too large/], ['99999999999999', /too large/], [null, /number or a decimal string/]
  ]
  for (const [input, re] of rejects) {
    it(`rejects ${String(input)} with a clear message`, () => {
      try { parseAmount(input as number); expect.fail('should throw') } catch (e) {
        expect(isRbtError(e, 'INVALID_INPUT')).to.equal(true)
        expect((e as Error).message).to.match(re)
      }
    })
  }

  it('transfer amounts must be at least 0.001', () => {
    expect(parseTransferAmount('0.001')).to.equal(1)
    expect(() => parseTransferAmount('0')).to.throw(/below the minimum 0.001/)
    expect(() => parseTransferAmount(0.0001)).to.throw(/more than 3 decimal/)
  })

  it('formats back', () => {
    expect(formatAmount(0)).to.equal('0')
    expect(formatAmount(1)).to.equal('0.001')
    expect(formatAmount(250)).to.equal('0.25')
    expect(formatAmount(1000)).to.equal('1')
    expect(formatAmount(123456)).to.equal('123.456')
    expect(formatAmount(1500, { fixed: true })).to.equal('1.500')
    expect(() => formatAmount(1.5)).to.throw(/milli/)
  })

  it('converts to the float the reference stores', () => {
    expect(milliToFloat(200)).to.equal(0.2)
    expect(milliToFloat(1)).to.equal(0.001)
    expect(milliToFloat(1000)).to.equal(1)
    for (let m = 0; m <= 5000; m += 7) expect(parseAmount(milliToFloat(m))).to.equal(m)
  })

  it('rounds floats as the reference does (half away from zero at 3 decimals)', () => {
    expect(floatToMilli(0.0005)).to.equal(1)
    expect(floatToMilli(0.0004)).to.equal(0)
    expect(floatToMilli(-0.0005)).to.equal(-1)
    expect(floatToMilli(0.1 + 0.2)).to.equal(300)
    expect(floatToMilli(2.675)).to.equal(2675)
    expect(roundFloat3(1 / 3)).to.equal(0.333)
    expect(ceilFloat3(0.0011)).to.equal(0.002)
    expect(floatToMilliExact(0.2)).to.equal(200)
    expect(floatToMilliExact(0.1 + 0.2)).to.equal(undefined)
    expect(floatToMilliExact(-1)).to.equal(undefined)
  })

  it('adds, subtracts, splits and computes pledges exactly', () => {
    expect(addAmounts(100, 200, 700)).to.equal(1000)
    expect(subtractAmount(1000, 1)).to.equal(999)
    try { subtractAmount(1, 2); expect.fail('should throw') } catch (e) { expect(isRbtError(e, 'INSUFFICIENT_BALANCE')).to.equal(true) }
    expect(splitAmount(1000, 250)).to.deep.equal([250, 750])
    expect(() => splitAmount(1000, 1000)).to.throw(/at least 0.001/)
    expect(() => splitAmount(1000, 0)).to.throw(/at least 0.001/)
    expect(pledgePerQuorum(1000)).to.equal(200)
    expect(pledgePerQuorum(3)).to.equal(1)
    expect(pledgePerQuorum(1001)).to.equal(201)
  })

  it('property: splitting and summing random 3-decimal amounts never creates or loses value', () => {
    let s = 20240917
    const rnd = (): number => { s = (Math.imul(s, 1664525) + 1013904223) >>> 0; return s / 2 ** 32 }
    for (let c = 0; c < 500; c++) {
      const text = `${Math.floor(rnd() * 10_000)}.${String(Math.floor(rnd() * 1000)).padStart(3, '0')}`
      const total = parseAmount(text)
      if (total < 2) continue
      // repeated splits, as transfers cut tokens again and again
      let parts = [total]
      for (let k = 0; k < 1 + Math.floor(rnd() * 6); k++) {
        const i = Math.floor(rnd() * parts.length)
        const p = parts[i]!
        if (p < 2) continue
        const need = 1 + Math.floor(rnd() * (p - 1))
        const [a, b] = splitAmount(p, need)
        parts.splice(i, 1, a, b)
      }
      expect(addAmounts(...parts)).to.equal(total)
      // through the float the chain stores and back: unchanged
      parts = parts.map(p => parseAmount(formatAmount(p))).map(p => floatToMilli(milliToFloat(p)))
      expect(addAmounts(...parts)).to.equal(total)
      expect(formatAmount(addAmounts(...parts))).to.equal(formatAmount(total))
      expect(parseAmount(formatAmount(total))).to.equal(total)
    }
  })
})
