import { expect } from 'chai'
import { z } from 'zod'
import { normalizeKeys } from '../../src/api/contract/normalize-keys.js'

describe('api: case-insensitive JSON keys', () => {
  const schema = z.object({ DID: z.string(), tokens: z.object({ rbt: z.number(), ft: z.array(z.object({ ftName: z.string() })).optional() }).optional() })

  it('renames keys to the declared spelling at every depth', () => {
    expect(normalizeKeys({ did: 'x', TOKENS: { RBT: 1, Ft: [{ FTNAME: 'a' }] } }, schema)).to.deep.equal({ DID: 'x', tokens: { rbt: 1, ft: [{ ftName: 'a' }] } })
  })

  it('prefers the exact spelling when both are present and keeps unknown keys', () => {
    expect(normalizeKeys({ did: 'lower', DID: 'exact', extra: 1 }, schema)).to.deep.equal({ DID: 'exact', extra: 1 })
  })

  it('leaves non-objects alone', () => {
    expect(normalizeKeys('s', schema)).to.equal('s')
    expect(normalizeKeys(null, schema)).to.equal(null)
  })
})
