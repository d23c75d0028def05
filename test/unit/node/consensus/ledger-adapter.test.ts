import { expect } from 'chai'
import { consensusLedger } from '../../../../src/node/consensus/ledger-adapter.js'
import { ringSigner, tokenEnv, type TokenEnv } from '../../tokens/helpers.js'

describe('node: the consensus ledger over LevelDB, choosing tokens', function () {
  this.timeout(60_000)
  let env: TokenEnv
  beforeEach(async () => { env = await tokenEnv() })
  afterEach(async () => { await env.close() })

  it('holdings list the owner index (ids and values) and tokensById reads the same records tokensOf does', async () => {
    const did = env.ring.newDid()
    const signer = ringSigner(env.ring, did)
    const minted = await env.service.mintLocalRbt({ did, count: 3, startIndex: 0 }, signer)
    await env.service.splitToken(minted.token_ids[0]!, 250, signer)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const full = await ledger.tokensOf(did, 'Free')
    const held = await ledger.holdings(did, 'Free')
    expect(held).to.deep.equal(full.map((t) => ({ tokenId: t.tokenId, valueMilli: t.valueMilli })))
    expect(held.map((h) => h.valueMilli).sort((a, b) => a - b)).to.deep.equal([250, 750, 1000, 1000])
    const picked = [held[2]!.tokenId, 'QmUnknown', held[0]!.tokenId]
    const got = await ledger.tokensById(picked)
    expect(got[0]).to.deep.equal(full[2])
    expect(got[1]).to.equal(undefined)
    expect(got[2]).to.deep.equal(full[0])
    // the burnt parent is not Free, so it is not held
    expect(held.some((h) => h.tokenId === minted.token_ids[0])).to.equal(false)
  })
})
