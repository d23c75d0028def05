import { expect } from 'chai'
import { addSignature, createBlock, encodeBlockEnvelope, ftGenesis, ftGenesisComment } from '../../../src/tokenchain/block.js'
import { referenceDumpMap } from '../../../src/tokenchain/dump-map.js'

const CREATOR = 'bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina'
const FT = 'QmQ2UsVPPkMhoZdXq3XjUZHkxoCQMcU5gqE8yg231fRseV'

describe('tokenchain/dump-map: a block as the reference\'s dump.json holds it', () => {
  it('keeps the numeric content keys, adds "98" hash and "99" signatures, floats as numbers', () => {
    const block = addSignature(createBlock(ftGenesis({
      ftId: FT,
      creator: CREATOR,
      index: 0,
      parentIds: ['QmddtfTnv3yRsCSbJn8D5jF11H7yhymKTvWzJkPfJFxSVb'],
      value: 0.2,
      comment: ftGenesisComment('2025-01-22 11:44:48.452452437 +0530 IST m=+51997.497202936', 'testFT-1')
    })), CREATOR, 'ab12')
    const map = referenceDumpMap(encodeBlockEnvelope(block))
    expect(map['98']).to.equal('dddfeea488ac5b0b0be323d7277023518f29031671f7eccb11639ff88f1f9243')
    expect(map['99']).to.deep.equal({ [CREATOR]: 'ab12' })
    expect(map['3']).to.equal(CREATOR)
    expect(map['10']).to.equal(0.2)
    expect(Object.keys(map['4'] as object)).to.include.members(['1', '2'])
    // JSON all the way down: no byte arrays, maps or CBOR floats left
    expect(JSON.parse(JSON.stringify(map))).to.deep.equal(map)
  })
})
