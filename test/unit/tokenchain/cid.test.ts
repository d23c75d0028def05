import { expect } from 'chai'
import { cidV0ForContent, textMemoSize, TEXT_MEMO_BYTES } from '../../../src/tokenchain/cid.js'

describe('tokenchain/cid: the memo of text CIDs', () => {
  it('holds at most its stated characters however many token contents were hashed (4,096 contents of about 1,000 characters held 4 MiB)', () => {
    const text = (i: number): string => `${i}:`.padEnd(1000, 'x')
    const first = cidV0ForContent(text(0))
    for (let i = 1; i < 3000; i++) cidV0ForContent(text(i))
    const held = textMemoSize()
    expect(held.bytes, `${held.entries} texts held`).to.be.at.most(TEXT_MEMO_BYTES)
    expect(held.entries).to.be.above(100)
    // a text forgotten is hashed again, to the same id
    expect(cidV0ForContent(text(0))).to.equal(first)
  })
})
