import { expect } from 'chai'
import { base58btc } from 'multiformats/bases/base58'
import { base58btcEncode } from '../../../src/tokenchain/base58.js'

describe('tokenchain/base58', () => {
  it('encodes as the multiformats encoder does: empty, zeros, leading zeros, multihashes, random lengths', () => {
    const cases: Uint8Array[] = [new Uint8Array(0), new Uint8Array(1), new Uint8Array(34), Uint8Array.of(0, 0, 1), Uint8Array.of(255), Uint8Array.of(57), Uint8Array.of(58)]
    let seed = 7
    const rnd = (): number => { seed = (seed * 1103515245 + 12345) % 2147483648; return seed }
    for (let i = 0; i < 500; i++) {
      const b = new Uint8Array(i % 3 === 0 ? 34 : rnd() % 80)
      for (let k = 0; k < b.length; k++) b[k] = rnd() & 0xff
      if (i % 3 === 0) { b[0] = 0x12; b[1] = 32 }
      if (i % 5 === 0) b.fill(0, 0, Math.min(b.length, 1 + (i % 4)))
      cases.push(b)
    }
    for (const b of cases) expect(base58btcEncode(b), Buffer.from(b).toString('hex')).to.equal(base58btc.baseEncode(b))
  })
})
