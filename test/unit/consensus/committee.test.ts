import { expect } from 'chai'
import { arbitersFor, checkCertificate, committeeOf, committeeUnsafe, doubleGranters, type Certificate } from '../../../src/consensus/committee.js'
import { grantDigest } from '../../../src/consensus/claim-proofs.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import type { SignatureVerifier } from '../../../src/tokenchain/validate.js'

const sign = (did: string, msg: string): string => sha3Hex(`${did}|${msg}`)
const verifier: SignatureVerifier = { verify: async (did, msg, sig) => sig === sign(did, msg) }
const S = 'QmState'
const TX1 = '1'.repeat(64)
const TX2 = '2'.repeat(64)
const grant = (arbiter: string, txid: string): Certificate['grants'][number] => ({ arbiter, txid, quorum: 'q', forTx: txid, states: [S], sig: sign(arbiter, grantDigest(arbiter, txid, 'q', txid, [S])) })

describe('consensus: the arbiter committee and its certificates', () => {
  it('every node computes the same committee and the same arbiters of a state, whatever order it learnt the members in', () => {
    const dids = Array.from({ length: 30 }, (_, i) => `did${i}`)
    const a = committeeOf(dids)
    const b = committeeOf([...dids].reverse().concat('did3'))
    expect(a.id).to.equal(b.id)
    expect(arbitersFor(S, a)).to.deep.equal(arbitersFor(S, b))
    expect(arbitersFor(S, a)).to.have.length(20)
    expect(arbitersFor(S, committeeOf(dids.slice(0, 7)))).to.have.length(7)
    expect(committeeUnsafe(committeeOf(['a', 'b', 'c']))).to.match(/only 3 arbiter/)
    expect(committeeUnsafe(committeeOf(['a', 'b', 'c', 'd']))).to.equal(undefined)
  })

  it('a certificate holds with q(n) valid grants of distinct arbiters of the state; forged, foreign or repeated grants do not count', async () => {
    const c = committeeOf(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    const five = ['a', 'b', 'c', 'd', 'e'].map((d) => grant(d, TX1))
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: five }, c, verifier)).to.equal(undefined)
    const four = five.slice(0, 4)
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: [...four, four[0]!] }, c, verifier)).to.match(/4 valid grant\(s\) of its 7 arbiters, 5 needed/)
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: [...four, { ...grant('e', TX1), sig: 'bad' }] }, c, verifier)).to.match(/4 valid/)
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: [...four, grant('stranger', TX1)] }, c, verifier)).to.match(/4 valid/)
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: [...four, grant('e', TX2)] }, c, verifier)).to.match(/4 valid/)
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: five }, committeeOf(['a', 'b', 'c']), verifier)).to.match(/at least 4/)
  })

  it('a forged grant naming an arbiter, put ahead of that arbiter\'s real grant, does not hide the real one', async () => {
    const c = committeeOf(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    const five = ['a', 'b', 'c', 'd', 'e'].map((d) => grant(d, TX1))
    const forged = five.map((g) => ({ ...g, sig: 'forged' }))
    expect(await checkCertificate({ stateHash: S, txid: TX1, grants: [...forged, ...five] }, c, verifier)).to.equal(undefined)
  })

  it('two certificates of one state for two transactions name the arbiters that granted twice (at least ⌊(n−1)/3⌋+1 of them)', async () => {
    const c = committeeOf(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    const c1: Certificate = { stateHash: S, txid: TX1, grants: ['a', 'b', 'c', 'd', 'e'].map((d) => grant(d, TX1)) }
    const c2: Certificate = { stateHash: S, txid: TX2, grants: ['c', 'd', 'e', 'f', 'g'].map((d) => grant(d, TX2)) }
    expect(await checkCertificate(c2, c, verifier)).to.equal(undefined)
    expect(await doubleGranters(c1, c2, c, verifier)).to.deep.equal(['c', 'd', 'e'])
    expect(await doubleGranters(c1, c1, c, verifier)).to.deep.equal([])
  })
})
