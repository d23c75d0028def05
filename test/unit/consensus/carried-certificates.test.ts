import { expect } from 'chai'
import { ACCEPTED_CERTS } from '../../../src/consensus/carried-certificates.js'
import type { PeerSeal } from '../../../src/consensus/claim-proofs.js'
import type { DeliverRequest } from '../../../src/consensus/messages.js'
import { balance, twoQuorumSets } from './harness.js'

/**
 * Certificates kept with the chain (docs/security.md, "Carried certificates"): a receiver keeps the
 * seals it verified, a sender the certificate of its own decision, and a delivery carries them for
 * the earlier blocks of its chains, where the next receiver counts them as those blocks' own.
 */
describe('consensus: certificates carried with the chain', () => {
  it('bob keeps the certificate of the payment he accepted, and his payment to carol carries it for that earlier block', async function () {
    this.timeout(30_000)
    const n = await twoQuorumSets(true)
    const alice = await n.net.addDid(n.x)
    await n.net.mint(n.x, alice.did, 2)
    // alice pays bob half a token: she keeps the other half (change), bob takes his half
    const t1 = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 't1', quorums: n.set1 }, alice.owner)
    expect(t1.delivered).to.equal(true)
    const kept = await n.bobNode.ledger.record<PeerSeal[]>(ACCEPTED_CERTS, t1.txid)
    expect(kept, 'bob kept the seals he counted for T1').to.be.an('array').that.is.not.empty
    expect(kept!.every((g) => g.holder === t1.txid)).to.equal(true)
    // the sender keeps its own decision's certificate with the change
    expect(await n.x.ledger.record<PeerSeal[]>(ACCEPTED_CERTS, t1.txid), 'alice kept T1\'s certificate').to.be.an('array').that.is.not.empty
    // bob pays carol: the delivery carries T1's certificate
    const seen: DeliverRequest[] = []
    const deliver = n.carolNode.receiver.deliver.bind(n.carolNode.receiver)
    n.carolNode.receiver.deliver = async (r) => { seen.push(r); return await deliver(r) }
    const t2 = await n.bobNode.sender.transfer({ sender: n.bob.did, receiver: n.carol.did, amountMilli: 500, memo: 't2', quorums: n.set2 }, n.bob.owner)
    expect(t2.delivered).to.equal(true)
    expect(await balance(n.carolNode, n.carol.did)).to.equal(500)
    const carried = seen.flatMap((r) => r.earlier ?? [])
    expect(carried.filter((g) => g.holder === t1.txid).map((g) => g.sig).sort()).to.deep.equal(kept!.map((g) => g.sig).sort())
    // and carol's check of that earlier block counted them, as it counted the delivered block's
    // own certificate for the chain's last block (no arbiter asked again about it)
    expect(new Set(n.net.carriedSeen.filter((g) => g.holder === t1.txid).map((g) => g.sig))).to.have.property('size', kept!.length)
    expect(n.net.carriedSeen.filter((g) => g.holder === t2.txid)).to.not.be.empty
    // carol keeps both: T2's own and T1's, for her own deliveries
    expect(await n.carolNode.ledger.record<PeerSeal[]>(ACCEPTED_CERTS, t1.txid)).to.be.an('array').that.is.not.empty
    expect(await n.carolNode.ledger.record<PeerSeal[]>(ACCEPTED_CERTS, t2.txid)).to.be.an('array').that.is.not.empty
  })
})
