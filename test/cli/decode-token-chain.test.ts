import { expect } from 'chai'
import { decodeTokenChain, goMarshalIndent, TOKEN_CHAIN_KEY_NAMES } from '../../src/cli/decode-token-chain.js'

describe('cli: decodetokenchain key rewrite', () => {
  it('prefixes numeric keys with the numeric path above them; other keys keep their name and pass the path on', () => {
    const [b] = decodeTokenChain([{ 4: { 1: 1, 2: { 2: 7, 9: 'x' } }, 5: { 10: { tok: { 4: '3', 6: 'u' } } }, epoch: 5, 13: 'new' }])
    expect(b).to.deep.equal({
      TCGenesisBlockKey: { GBTypeKey: 1, GBInfoKey: { GITokenNumberKey: 7, '4-2-9': 'x' } },
      TCTransInfoKey: { TICommitedTokensKey: { tok: { TTBlockNumberKey: '3', TTUnpledgedIDKey: 'u' } } },
      TCEpoch: 5,
      13: 'new'
    })
  })

  it('goes through arrays with the path of the key that holds them', () => {
    const [b] = decodeTokenChain([{ 11: [{ 1: 'a' }], 7: [{ 3: 'q' }] }])
    expect(b).to.deep.equal({ TCChildTokensKey: [{ '11-1': 'a' }], TCQuorumSignatureKey: [{ '7-3': 'q' }] })
  })

  it('has the reference\'s names for the top-level and transaction-token keys', () => {
    expect(TOKEN_CHAIN_KEY_NAMES['1']).to.equal('TCTokenTypeKey')
    expect(TOKEN_CHAIN_KEY_NAMES['5-6-4']).to.equal('TTBlockNumberKey')
    expect(TOKEN_CHAIN_KEY_NAMES['99']).to.equal('TCSignatureKey')
    expect(Object.keys(TOKEN_CHAIN_KEY_NAMES)).to.have.length(47)
  })

  it('writes JSON as Go\'s MarshalIndent: two-space indent, keys in byte order, <>& escaped, no final newline', () => {
    expect(goMarshalIndent([{ b: 1, a: [], Z: {}, '13': 'x<&>' }])).to.equal('[\n  {\n    "13": "x\\u003c\\u0026\\u003e",\n    "Z": {},\n    "a": [],\n    "b": 1\n  }\n]')
    expect(goMarshalIndent([])).to.equal('[]')
  })
})
