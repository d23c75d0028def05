import { expect } from 'chai'
import { QuorumClaims } from '../../../src/consensus/quorum-claims.js'
import type { ClaimAuth } from '../../../src/consensus/claim-proofs.js'
import type { ConsensusSigner, StateClaims } from '../../../src/consensus/ports.js'
import { silentLogger } from '../../../src/util/logger.js'

describe('consensus: a quorum\'s claims (QuorumClaims)', () => {
  const signer: ConsensusSigner = { did: 'bafybmiq1', pvtSign: async (m) => `sig:${m}`, signHash: async (h) => ({ keySig: h, shareSig: '', signType: 0 }) }

  it('a vote that claims again (a refused claim retried at SIGN, a recruit asked again) uses one nonce: its retries add no claimant to the arbiters\' records, which are never freed once full', async () => {
    const nonces: string[] = []
    const released: string[] = []
    let grant = false
    const port: StateClaims = {
      claim: async (_txid, _q, hashes, _burns, auth: ClaimAuth) => { nonces.push(auth.nonce); return grant ? { granted: true, tallies: [] } : { granted: false, code: 'CLAIM_UNREACHABLE', reason: 'cut', tallies: [] } },
      release: async (_txid, _q, _hashes, auth) => { released.push(auth.nonce) }
    }
    const qc = new QuorumClaims(port, silentLogger, () => signer)
    const txid = 'a'.repeat(64)
    for (let i = 0; i < 20; i++) await qc.claim('bafybmiq1', txid, ['t@0-' + 'b'.repeat(64)], [], new Uint8Array([1]))
    grant = true
    expect((await qc.claim('bafybmiq1', txid, ['t@0-' + 'b'.repeat(64)], [], new Uint8Array([1]))).granted).to.equal(true)
    expect(new Set(nonces).size, 'each retry made a new claimant').to.equal(1)
    // released, then voted again: a new nonce, so the old release (replayed) frees nothing of the new claim
    qc.release('bafybmiq1', txid, ['t@0-' + 'b'.repeat(64)])
    const deadline = Date.now() + 2000
    while (released.length === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
    expect(released).to.deep.equal([nonces[0]])
    await qc.claim('bafybmiq1', txid, ['t@0-' + 'b'.repeat(64)], [], new Uint8Array([1]))
    expect(nonces[nonces.length - 1]).to.not.equal(nonces[0])
  })
})
