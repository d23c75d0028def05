import { expect } from 'chai'
import { CborFloat, decodeCbor, decodeCborChecked, encodeCbor, float, isCanonicalCbor, type CborValue } from '../../../src/tokenchain/cbor.js'
import { isRbtError } from '../../../src/util/errors.js'
import { C1_CONTRACT_HEX, C2_CONTRACT_HEX } from './vectors.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const unhex = (h: string): Uint8Array => new Uint8Array(Buffer.from(h.replace(/\s+/g, ''), 'hex'))
const enc = (v: CborValue): string => hex(encodeCbor(v))

describe('tokenchain/cbor: canonical encoding', () => {
  describe('floats (shortest form that keeps the value)', () => {
    const table: Array<[number, string]> = [
      [1.0, 'f93c00'], // §4.1 examples
      [0.5, 'f93800'],
      [0.25, 'f93400'],
      [0.001, 'fb3f50624dd2f1a9fc'],
      [0.1, 'fb3fb999999999999a'],
      [0.2, 'fb3fc999999999999a'],
      [0, 'f90000'],
      [-0, 'f98000'],
      [1.5, 'f93e00'],
      [-4, 'f9c400'],
      [65504, 'f97bff'], // largest half
      [65505, 'fa477fe100'], // needs f32
      [100000, 'fa47c35000'],
      [2 ** -24, 'f90001'], // smallest half subnormal
      [2 ** -14, 'f90400'], // smallest half normal
      [3 * 2 ** -24, 'f90003'],
      [2 ** -25, 'fa33000000'], // below half range, exact in f32
      [3.4028234663852886e38, 'fa7f7fffff'],
      [1.1, 'fb3ff199999999999a'],
      [1e300, 'fb7e37e43c8800759c'],
      [NaN, 'f97e00'],
      [Infinity, 'f97c00'],
      [-Infinity, 'f9fc00']
    ]
    for (const [v, want] of table) {
      it(`float(${String(v)}) → ${want}`, () => expect(enc(float(v))).to.equal(want))
    }
    it('a non-integer JS number is a float without wrapping', () => {
      expect(enc(0.5)).to.equal('f93800')
      expect(enc(NaN)).to.equal('f97e00')
    })
    it('1.0 as a float is never emitted as the integer 1', () => {
      expect(enc(float(1))).to.equal('f93c00')
      expect(enc(1)).to.equal('01')
    })
  })

  describe('integers (smallest head)', () => {
    const table: Array<[number | bigint, string]> = [
      [0, '00'], [1, '01'], [10, '0a'], [23, '17'], [24, '1818'], [25, '1819'], [255, '18ff'],
      [256, '190100'], [1000, '1903e8'], [65535, '19ffff'], [65536, '1a00010000'],
      [4294967295, '1affffffff'], [4294967296, '1b0000000100000000'],
      [Number.MAX_SAFE_INTEGER, '1b001fffffffffffff'],
      [(1n << 64n) - 1n, '1bffffffffffffffff'],
      [-1, '20'], [-10, '29'], [-24, '37'], [-25, '3818'], [-256, '38ff'], [-257, '390100'], [-1000, '3903e7'],
      [-(1n << 64n), '3bffffffffffffffff'],
      [5n, '05']
    ]
    for (const [v, want] of table) {
      it(`${String(v)} → ${want}`, () => expect(enc(v)).to.equal(want))
    }
    it('rejects integers out of range and unsafe numbers', () => {
      expect(() => encodeCbor(1n << 64n)).to.throw(/out of range/)
      expect(() => encodeCbor(2 ** 60)).to.throw(/bigint/)
    })
  })

  describe('strings, bytes, arrays, simple values', () => {
    const table: Array<[CborValue, string]> = [
      ['', '60'], ['a', '6161'], ['IETF', '6449455446'], ['ü', '62c3bc'], ['水', '63e6b0b4'],
      ['x'.repeat(24), '7818' + '78'.repeat(24)],
      [new Uint8Array(0), '40'], [new Uint8Array([1, 2, 3, 4]), '4401020304'],
      [[], '80'], [[1, [2, 3], [4, 5]], '8301820203820405'],
      [true, 'f5'], [false, 'f4'], [null, 'f6'], [undefined, 'f7']
    ]
    for (const [v, want] of table) {
      it(`${JSON.stringify(v instanceof Uint8Array ? hex(v) : v) ?? 'undefined'} → ${want}`, () => expect(enc(v)).to.equal(want))
    }
    it('a 256-byte string uses a 2-byte length', () => {
      expect(enc('a'.repeat(256)).slice(0, 6)).to.equal('790100')
    })
  })

  describe('maps (keys sorted length-first, then byte-wise)', () => {
    it('orders text keys "1".."9", "10".., "98", "99", "epoch"', () => {
      const v = { epoch: 4, 99: 5, 10: 1, 2: 2, 1: 3, 98: 6 }
      expect(enc(v)).to.equal('a6' + '613103' + '613202' + '62313001' + '62393806' + '62393905' + '6565706f636804')
    })
    it('orders mixed keys by encoded length, then bytes', () => {
      const m = new Map<CborValue, CborValue>([['b', 1], [100, 2], [-1, 3], [1, 4]])
      // keys encode as 6162, 1864, 20, 01 → 01, 20, 1864, 6162
      expect(enc(m)).to.equal('a4' + '0104' + '2003' + '186402' + '616201')
    })
    it('orders equal-length keys byte-wise (QmWs… before QmX4…)', () => {
      const v = { QmX4: 1, QmWs: 2 }
      expect(enc(v)).to.equal('a2' + '64516d577302' + '64516d583401')
    })
    it('leaves out object properties whose value is undefined', () => {
      expect(enc({ a: 1, b: undefined })).to.equal('a1616101')
    })
    it('rejects duplicate keys after encoding', () => {
      expect(() => encodeCbor(new Map<CborValue, CborValue>([[1, 1], [1n, 2]]))).to.throw(/duplicate/)
    })
    it('empty map', () => expect(enc({})).to.equal('a0'))
  })
})

describe('tokenchain/cbor: decoding', () => {
  it('keeps floats and ints apart so re-encoding is byte-identical', () => {
    const v = decodeCbor(unhex('a2613101 6132f93c00')) as Record<string, CborValue>
    expect(v['1']).to.equal(1)
    expect(v['2']).to.be.instanceOf(CborFloat)
    expect((v['2'] as CborFloat).value).to.equal(1)
    expect(enc(v)).to.equal('a26131016132f93c00')
  })
  it('decodes half, single and double floats', () => {
    expect((decodeCbor(unhex('f90001')) as CborFloat).value).to.equal(2 ** -24)
    expect((decodeCbor(unhex('f9c400')) as CborFloat).value).to.equal(-4)
    expect((decodeCbor(unhex('fa47c35000')) as CborFloat).value).to.equal(100000)
    expect((decodeCbor(unhex('fb3fb999999999999a')) as CborFloat).value).to.equal(0.1)
    expect(Number.isNaN((decodeCbor(unhex('f97e00')) as CborFloat).value)).to.equal(true)
    expect((decodeCbor(unhex('f9fc00')) as CborFloat).value).to.equal(-Infinity)
  })
  it('decodes big integers as bigint and keeps small ones as numbers', () => {
    expect(decodeCbor(unhex('1bffffffffffffffff'))).to.equal((1n << 64n) - 1n)
    expect(decodeCbor(unhex('3bffffffffffffffff'))).to.equal(-(1n << 64n))
    expect(decodeCbor(unhex('1b001fffffffffffff'))).to.equal(Number.MAX_SAFE_INTEGER)
    expect(decodeCbor(unhex('390100'))).to.equal(-257)
  })
  it('returns text-keyed maps as objects and others as Map', () => {
    expect(decodeCbor(unhex('a16161f5'))).to.deep.equal({ a: true })
    const m = decodeCbor(unhex('a10102'))
    expect(m).to.be.instanceOf(Map)
    expect((m as Map<CborValue, CborValue>).get(1)).to.equal(2)
  })
  it('a "__proto__" key is data, not a prototype', () => {
    const v = decodeCbor(unhex('a1695f5f70726f746f5f5f01')) as Record<string, CborValue>
    expect(Object.keys(v)).to.deep.equal(['__proto__'])
    expect(Object.getPrototypeOf(v)).to.equal(Object.prototype)
  })
  const bad: Array<[string, string, RegExp]> = [
    ['truncated', '1a0001', /end of input/],
    ['trailing bytes', '0000', /trailing/],
    ['indefinite array', '9f01ff', /indefinite/],
    ['indefinite string', '7f6161ff', /indefinite/],
    ['a tag', 'c11a514b67b0', /tags/],
    ['invalid UTF-8', '62c328', /UTF-8/],
    ['duplicate text key', 'a2616101616102', /duplicate/],
    ['reserved info', '1c', /reserved/],
    ['length beyond input', '5a7fffffff00', /length|end of input/]
  ]
  for (const [name, h, re] of bad) {
    it(`rejects ${name}`, () => {
      try { decodeCbor(unhex(h)); expect.fail('should throw') } catch (e) {
        expect(isRbtError(e, 'INVALID_INPUT')).to.equal(true)
        expect((e as Error).message).to.match(re)
      }
    })
  }
  it('flags non-canonical input', () => {
    expect(isCanonicalCbor(unhex('fb3ff0000000000000'))).to.equal(false) // 1.0 as f64
    expect(isCanonicalCbor(unhex('1800'))).to.equal(false) // 0 with a 1-byte argument
    expect(isCanonicalCbor(unhex('a2613201613101'))).to.equal(false) // keys out of order
    expect(isCanonicalCbor(unhex('f93c00'))).to.equal(true)
  })
})

describe('tokenchain/cbor: round trips', () => {
  it('re-encodes the public contract envelopes C1 and C2 byte for byte', () => {
    for (const h of [C1_CONTRACT_HEX, C2_CONTRACT_HEX]) {
      const outer = decodeCbor(unhex(h)) as Record<string, CborValue>
      expect(enc(outer)).to.equal(h)
      for (const k of ['1', '2', '3']) {
        const inner = outer[k] as Uint8Array
        expect(hex(encodeCbor(decodeCbor(inner)))).to.equal(hex(inner))
      }
    }
  })

  it('decode(encode(v)) re-encodes identically for random values (seeded)', () => {
    let seed = 0x2545f491
    const rnd = (): number => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 2 ** 32 }
    const gen = (depth: number): CborValue => {
      const r = rnd()
      if (depth > 3 || r < 0.35) {
        const k = Math.floor(rnd() * 8)
        switch (k) {
          case 0: return Math.floor(rnd() * 2 ** 40) - 2 ** 39
          case 1: return float([0, 1, 0.5, 0.1, 2 ** -20, 65504, 1e10, -3.25][Math.floor(rnd() * 8)]!)
          case 2: return float(rnd() * 1000)
          case 3: return 'k' + Math.floor(rnd() * 1e6).toString(36)
          case 4: return new Uint8Array(Array.from({ length: Math.floor(rnd() * 40) }, () => Math.floor(rnd() * 256)))
          case 5: return rnd() < 0.5
          case 6: return null
          default: return BigInt(Math.floor(rnd() * 2 ** 31)) << 32n
        }
      }
      if (r < 0.65) return Array.from({ length: Math.floor(rnd() * 5) }, () => gen(depth + 1))
      const o: Record<string, CborValue> = {}
      for (let i = 0; i < Math.floor(rnd() * 6); i++) o[String(Math.floor(rnd() * 120))] = gen(depth + 1)
      return o
    }
    for (let i = 0; i < 300; i++) {
      const v = gen(0)
      const bytes = encodeCbor(v)
      const again = encodeCbor(decodeCbor(bytes))
      expect(hex(again)).to.equal(hex(bytes))
      expect(isCanonicalCbor(bytes)).to.equal(true)
      expect(decodeCborChecked(bytes).canonical).to.equal(true)
    }
  })
})

describe('tokenchain/cbor: canonical form checked while decoding', () => {
  it('finds each kind of non-canonical item the re-encoding finds', () => {
    const cases: Array<[string, string]> = [
      ['fb3ff0000000000000', 'a double that fits a half'],
      ['fa3f800000', 'a single that fits a half'],
      ['fb3fb99999a0000000', 'a double that fits a single'],
      ['f97e01', 'a NaN other than f9 7e00'],
      ['fa7fc00000', 'NaN as a single'],
      ['1800', '0 with a 1-byte argument'],
      ['190017', '23 with a 2-byte argument'],
      ['1a000000ff', '255 with a 4-byte argument'],
      ['1b00000000ffffffff', '2^32 - 1 with an 8-byte argument'],
      ['3800', '-1 with a 1-byte argument'],
      ['5800', 'an empty byte string with a 1-byte length'],
      ['a2613201613101', 'keys out of order'],
      ['a2623130016132 01', 'a longer key first'],
      ['a16131f7', 'an undefined member (the encoder leaves it out)'],
      ['63efbbbf', 'text starting with a byte-order mark']
    ]
    for (const [h, what] of cases) {
      const bytes = unhex(h)
      expect(decodeCborChecked(bytes).canonical, what).to.equal(false)
      expect(isCanonicalCbor(bytes), what).to.equal(false)
    }
    expect(decodeCborChecked(unhex('a2613101613202')).canonical).to.equal(true)
    expect(decodeCborChecked(unhex('f97e00')).canonical).to.equal(true)
    expect(decodeCborChecked(unhex('1b0000000100000000')).canonical).to.equal(true)
  })

  it('never claims canonical form for bytes that do not encode back the same (mutated contracts, seeded)', () => {
    let seed = 0x1f2e3d4c
    const rnd = (): number => { seed ^= seed << 13; seed ^= seed >>> 17; seed ^= seed << 5; return (seed >>> 0) / 2 ** 32 }
    const sources = [C1_CONTRACT_HEX, C2_CONTRACT_HEX].flatMap((h) => {
      const outer = decodeCbor(unhex(h)) as Record<string, CborValue>
      return ['1', '2', '3'].map((k) => outer[k] as Uint8Array).concat([unhex(h)])
    })
    let claimed = 0
    for (let i = 0; i < 4000; i++) {
      const b = sources[i % sources.length]!.slice()
      const flips = 1 + Math.floor(rnd() * 3)
      for (let j = 0; j < flips; j++) b[Math.floor(rnd() * b.length)] = Math.floor(rnd() * 256)
      let checked: { value: CborValue, canonical: boolean }
      try { checked = decodeCborChecked(b) } catch { continue }
      if (!checked.canonical) continue
      claimed++
      expect(hex(encodeCbor(checked.value)), `mutation ${i}`).to.equal(hex(b))
    }
    expect(claimed).to.be.greaterThan(100)
  })
})
