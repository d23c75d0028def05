import { expect } from 'chai'
import { joinPieces } from '../../../src/util/pieces.js'

describe('util/pieces', () => {
  it('copies the pieces one after the other into the buffer given, and returns it', () => {
    const out = new Uint8Array(6)
    expect(joinPieces([Uint8Array.of(1, 2), Uint8Array.of(), Uint8Array.of(3, 4, 5, 6)], out)).to.equal(out)
    expect([...out]).to.deep.equal([1, 2, 3, 4, 5, 6])
  })

  it('refuses pieces longer or shorter than the buffer', () => {
    expect(() => joinPieces([new Uint8Array(4), new Uint8Array(3)], new Uint8Array(6))).to.throw(RangeError)
    expect(() => joinPieces([new Uint8Array(5)], new Uint8Array(6))).to.throw(RangeError)
  })
})
