import { expect } from 'chai'
import { QuorumClaims } from '../../../src/consensus/quorum-claims.js'
import { claimDigest, type PeerGrant } from '../../../src/consensus/claim-proofs.js'
import type { ConsensusSigner, StateClaims } from '../../../src/consensus/ports.js'
import { silentLogger } from '../../../src/util/logger.js'

describe('consensus: a quorum\'s claims (QuorumClaims)', () => {
  const signer: ConsensusSigner = { did: 'bafybmiq1', pvtSign: async (m) => `sig:${m}`, signHash: async (h) => ({ keySig: h, shareSig: '', signType: 0 }) }
  const txid = 'a'.repeat(64)
  const state = 't@0-' + 'b'.repeat(64)
  const grant: PeerGrant = { peer: 'p', sig: 'ab', txid, quorum: 'bafybmiq1', nonce: 'a'.repeat(32), forTx: txid, states: ['x'] }

  function port (): { port: StateClaims, checked: number[], released: string[] } {
    const checked: number[] = []
    const released: string[] = []
    return {
      checked,
      released,
      port: {
        claimFor: async () => { throw new Error('a quorum never claims itself') },
        checkGrants: async (_txid, _q, _hashes, _burns, grants) => { checked.push(grants.length); return grants.some((g) => g.sig === 'ab') ? { granted: true, tallies: [] } : { granted: false, code: 'CLAIM_UNREACHABLE', reason: 'short', tallies: [] } },
        release: async (_txid, _q, _hashes, auth) => { released.push(auth.nonce) }
      }
    }
  }

  it('a vote\'s claim is signed over its own nonce; asked again, it shows the same (the arbiters see one claimant)', async () => {
    const qc = new QuorumClaims(port().port, silentLogger, () => signer)
    const a = await qc.proof('bafybmiq1', txid)
    expect(a?.sig).to.equal(`sig:${claimDigest(txid, 'bafybmiq1', a!.nonce)}`)
    const again = await qc.proof('bafybmiq1', txid, a!.nonce)
    expect(again).to.deep.equal(a)
    expect((await qc.proof('bafybmiq1', txid))?.nonce).to.not.equal(a!.nonce)
    // a quorum this node cannot sign for has no claim to give
    expect(await new QuorumClaims(port().port, silentLogger, () => undefined).proof('bafybmiq1', txid)).to.equal(undefined)
  })

  it('signs only with grants: none, or malformed ones, refuse before the port is asked; good grants are checked once per vote', async () => {
    const p = port()
    const qc = new QuorumClaims(p.port, silentLogger, () => signer)
    for (const grants of [undefined, [], [{ peer: 1 }], 'grants']) {
      const r = await qc.check('bafybmiq1', txid, [state], [], grants)
      expect(r.granted).to.equal(false)
    }
    expect(p.checked).to.deep.equal([])
    expect((await qc.check('bafybmiq1', txid, [state], [], [{ ...grant, sig: 'cd' }])).granted).to.equal(false)
    expect((await qc.check('bafybmiq1', txid, [state], [], [grant])).granted).to.equal(true)
    expect(qc.holds('bafybmiq1', txid)).to.equal(true)
    expect((await qc.check('bafybmiq1', txid, [state], [], [grant])).granted).to.equal(true)
    expect(p.checked).to.deep.equal([1, 1])
  })

  it('a vote released before signing gives its claim up signed over its nonce; a vote with no claim gives nothing', async () => {
    const p = port()
    const qc = new QuorumClaims(p.port, silentLogger, () => signer)
    qc.release('bafybmiq1', txid, [state], [], 'ff'.repeat(16))
    qc.release('bafybmiq1', 'c'.repeat(64), [state], [], undefined)
    const deadline = Date.now() + 2000
    while (p.released.length === 0 && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
    expect(p.released).to.deep.equal(['ff'.repeat(16)])
  })
})
