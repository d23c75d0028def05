import { expect } from 'chai'
import { createHash } from 'node:crypto'
import { generateProof, powSeed, verifyProof, type UnpledgeProof } from '../../../src/consensus/unpledge-pow.js'
import type { PledgeRecord } from '../../../src/consensus/records.js'
import { RbtError } from '../../../src/util/errors.js'
import { SimNet, balance } from './harness.js'
import { waitFor } from '../../helpers/wait.js'

const sha3 = (h: string): string => createHash('sha3-256').update(h, 'latin1').digest('hex')
const TOKEN = 'Qm' + 'a'.repeat(44)
const PLEDGER = 'bafybmi' + 'b'.repeat(52)
const TXID = sha3('some transaction')

describe('unpledge proof of work', function () {
  this.timeout(60_000)

  it('generates a chain from the seed to the transaction id suffix, with checkpoints', async () => {
    const p = await generateProof(TOKEN, PLEDGER, TXID, { level: 3, every: 50 })
    expect(p.hashes[0]).to.equal(powSeed(TOKEN, PLEDGER, TXID))
    expect(p.hashes[0]).to.equal(createHash('sha256').update(TOKEN + PLEDGER + TXID).digest('hex'))
    const final = p.hashes[p.hashes.length - 1]
    expect(final.slice(-3)).to.equal(TXID.slice(-3))
    // re-walk the whole chain: checkpoints every 50 steps, the final hash is the first match
    let h = p.hashes[0]
    let n = 0
    const seen = [h]
    while (!h.endsWith(TXID.slice(-3))) { h = sha3(h); n++; if (n % 50 === 0 && !h.endsWith(TXID.slice(-3))) seen.push(h) }
    seen.push(h)
    expect(p.hashes).to.deep.equal(seen)
    expect(verifyProof(p, { token: TOKEN, pledger: PLEDGER, txid: TXID }, { minLevel: 3, full: true })).to.deep.equal({ valid: true })
    expect(verifyProof(p, { token: TOKEN, pledger: PLEDGER, txid: TXID }, { minLevel: 3 })).to.deep.equal({ valid: true })
  })

  it('rejects tampered proofs', async () => {
    const p = await generateProof(TOKEN, PLEDGER, TXID, { level: 3, every: 20 })
    expect(p.hashes.length).to.be.greaterThan(4)
    const exp = { token: TOKEN, pledger: PLEDGER, txid: TXID }
    const tamper = (f: (q: UnpledgeProof) => void): UnpledgeProof => { const q = structuredClone(p); f(q); return q }
    const mid = Math.floor(p.hashes.length / 2)
    const cases: Array<[string, UnpledgeProof]> = [
      ['a middle checkpoint', tamper((q) => { q.hashes[mid] = sha3(q.hashes[mid]) })],
      ['the final hash', tamper((q) => { q.hashes[q.hashes.length - 1] = 'f'.repeat(61) + TXID.slice(-3) })],
      ['the seed', tamper((q) => { q.hashes[0] = sha3('other seed') })],
      ['a dropped checkpoint', tamper((q) => { q.hashes.splice(1, 1) })],
      ['the interval', tamper((q) => { q.every = 21 })]
    ]
    for (const [what, q] of cases) {
      const r = verifyProof(q, exp, { minLevel: 3, full: true })
      expect(r.valid, what).to.equal(false)
      expect(r.reason, what).to.be.a('string')
    }
    // the proof is bound to its token, pledger and transaction
    expect(verifyProof(p, { ...exp, token: 'Qm' + 'c'.repeat(44) }, { minLevel: 3 }).valid).to.equal(false)
    expect(verifyProof(p, { ...exp, txid: sha3('another transaction') }, { minLevel: 3 }).valid).to.equal(false)
    expect(verifyProof(tamper((q) => { q.pledger = 'x' }), exp, { minLevel: 3 }).valid).to.equal(false)
    // a sampled check still catches a forged chain: every segment but the sampled ones is random
    const forged = tamper((q) => { for (let i = 1; i < q.hashes.length - 1; i++) q.hashes[i] = sha3(`forged ${i}`) })
    for (let i = 0; i < 5; i++) expect(verifyProof(forged, exp, { minLevel: 3 }).valid).to.equal(false)
  })

  it('difficulty: the level is the suffix length, and a verifier refuses a level below its own', async () => {
    const low = await generateProof(TOKEN, PLEDGER, TXID, { level: 1, every: 1000 })
    const high = await generateProof(TOKEN, PLEDGER, TXID, { level: 3, every: 1000 })
    expect(low.hashes[low.hashes.length - 1].slice(-1)).to.equal(TXID.slice(-1))
    expect(high.hashes[high.hashes.length - 1].slice(-3)).to.equal(TXID.slice(-3))
    const exp = { token: TOKEN, pledger: PLEDGER, txid: TXID }
    expect(verifyProof(low, exp, { minLevel: 1 }).valid).to.equal(true)
    expect(verifyProof(low, exp, { minLevel: 2 }).valid).to.equal(false)
    expect(verifyProof(low, exp).reason).to.match(/below the required 6/)
    // claiming a higher level than was worked for fails the suffix rule
    expect(verifyProof({ ...low, level: 3 }, exp, { minLevel: 3, full: true }).valid).to.equal(low.hashes[low.hashes.length - 1].slice(-3) === TXID.slice(-3))
    await generateProof(TOKEN, PLEDGER, TXID, { level: 0 }).then(() => expect.fail('level 0 accepted'), (e) => expect(e).to.be.instanceOf(RbtError))
    await generateProof(TOKEN, PLEDGER, 'not-hex', { level: 2 }).then(() => expect.fail('non-hex txid accepted'), (e) => expect(e).to.be.instanceOf(RbtError))
  })

  it('a quorum releases a pledged token with a valid proof, atomically; a tampered proof changes nothing', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const { txid } = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1500, memo: 'pow', quorums: net.quorumDids }, alice.owner)
    expect(await balance(b, bob.did)).to.equal(1500)
    // a quorum that pledged for this transaction (FINALIZE reaches the quorums in the background)
    let q: (typeof quorums)[number] | undefined
    const pledge = await waitFor(() => {
      for (const n of quorums) {
        for (const [, p] of n.ledger.recs.get('cs-pledges') ?? new Map<string, unknown>()) if ((p as PledgeRecord).txid === txid) { q = n; return p as PledgeRecord }
      }
      return undefined
    }, { what: 'a pledge for the transaction' })
    const token = pledge.tokens[0]
    const held = await q!.quorum.pledgeHolding(token)
    expect(held?.txid).to.equal(txid)
    const before = q!.ledger.clone()

    const proof = await generateProof(token, pledge.quorumDid, txid, { level: 2, every: 10 })
    const forged = structuredClone(proof)
    forged.hashes[forged.hashes.length - 1] = 'e'.repeat(62) + txid.slice(-2)
    await q!.quorum.releaseByProof(forged, 2).then(() => expect.fail('forged proof accepted'), (e) => expect((e as RbtError).code).to.equal('VERIFICATION_FAILED'))
    await q!.quorum.releaseByProof(proof, 3).then(() => expect.fail('low-level proof accepted'), (e) => expect((e as RbtError).code).to.equal('VERIFICATION_FAILED'))
    expect([...q!.ledger.tokens]).to.deep.equal([...before.tokens])
    expect([...(q!.ledger.recs.get('cs-pledges') ?? [])]).to.deep.equal([...(before.recs.get('cs-pledges') ?? [])])

    await q!.quorum.releaseByProof(proof, 2)
    expect((await q!.ledger.token(token))?.status).to.equal('Free')
    expect(await q!.quorum.pledgeHolding(token)).to.equal(undefined)
    const rec = await q!.ledger.record<PledgeRecord>('cs-pledges', `${pledge.quorumDid}/${txid}`)
    if (pledge.tokens.length === 1) expect(rec).to.equal(undefined)
    else expect(rec?.tokens).to.not.include(token)
    expect(await q!.quorum.storedProof(token, txid)).to.deep.equal(proof)
    // a second release of the same token is refused
    await q!.quorum.releaseByProof(proof, 2).then(() => expect.fail('released twice'), (e) => expect((e as RbtError).code).to.equal('CONFLICT'))
  })
})
