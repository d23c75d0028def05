import { expect } from 'chai'
import { parseByteSize } from '../../../src/util/byte-size.js'

describe('util/byte-size', () => {
  it('reads bytes, binary and decimal units, case-insensitive', () => {
    expect(parseByteSize(1234)).to.equal(1234)
    expect(parseByteSize('1234')).to.equal(1234)
    expect(parseByteSize('4GiB')).to.equal(4 * 1024 ** 3)
    expect(parseByteSize('4G')).to.equal(4 * 1024 ** 3)
    expect(parseByteSize('4gb')).to.equal(4e9)
    expect(parseByteSize('500MiB')).to.equal(500 * 1024 ** 2)
    expect(parseByteSize(' 1.5 KiB ')).to.equal(1536)
    expect(parseByteSize('2TB')).to.equal(2e12)
  })
  it('refuses what is not a size', () => {
    for (const v of ['', 'x', '-1', '4 GiBs', '1e9', '4PiB', -5, 1.5]) expect(parseByteSize(v as string), String(v)).to.equal(undefined)
  })
})
