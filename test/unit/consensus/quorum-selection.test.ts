import { expect } from 'chai'
import { preferQuorums, rankQuorums, selectQuorums } from '../../../src/consensus/quorum-selection.js'
import type { PrepareRequest } from '../../../src/consensus/messages.js'
import { SimNet, type SimNode } from './harness.js'

const dids = Array.from({ length: 9 }, (_, i) => `did:q${i}`)

describe('consensus: quorum selection', function () {
  this.timeout(60_000)

  it('the signers of the anchor state\'s last block come first, in the anchor ranking; the same state gives the same order', () => {
    const ranked = rankQuorums(dids, 'state-a')
    const signers = [ranked[6], ranked[3], ranked[8]]
    const order = selectQuorums(dids, 'state-a', [], signers)
    expect(order).to.have.length(7)
    expect(order.slice(0, 3)).to.deep.equal([ranked[3], ranked[6], ranked[8]])
    expect(order.slice(3)).to.deep.equal(ranked.filter((d) => !signers.includes(d)).slice(0, 4))
    expect(selectQuorums([...dids].reverse(), 'state-a', [], [...signers].reverse())).to.deep.equal(order)
    // signers outside the list, and no signers: the plain ranking
    expect(selectQuorums(dids, 'state-a', [], ['did:elsewhere'])).to.deep.equal(ranked.slice(0, 7))
    expect(selectQuorums(dids, 'state-a', [ranked[0]])).to.deep.equal(ranked.slice(1, 8))
  })

  it('after the anchor, the quorums that know more of the tokens first, then the sender\'s usual ones', () => {
    const known = new Map([[dids[4], 3], [dids[1], 3], [dids[7], 1]])
    const order = preferQuorums(dids, 'did:sender', (d) => known.get(d) ?? 0)
    // the sender's usual order: SHA3(sender | DID), the form of the anchor ranking
    const usual = rankQuorums(dids, 'did:sender')
    expect(new Set(order.slice(0, 2))).to.deep.equal(new Set([dids[4], dids[1]]))
    expect(order[2]).to.equal(dids[7])
    expect(order.slice(3)).to.deep.equal(usual.filter((d) => !known.has(d)))
    // nothing known: the same order for every transaction of that sender
    expect(preferQuorums(dids.slice(2), 'did:sender', () => 0)).to.deep.equal(usual.filter((d) => dids.slice(2).includes(d)))
  })

  it('a wallet\'s payments are signed by the same quorums, and spending what they paid asks the quorums that know it', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    const carol = await net.addDid(a)
    const ids = await net.mint(a, alice.did, 4)
    const signed: string[][] = []
    for (let i = 0; i < ids.length; i++) {
      signed.push((await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: `${i}`, quorums: net.quorumDids }, alice.owner)).quorums)
    }
    // whichever anchor each payment had, four quorums signed all of them
    const always = net.quorumDids.filter((d) => signed.every((s) => s.includes(d)))
    expect(always.length).to.be.at.least(4)
    // bob spends the four tokens at once: besides the anchor, the asked quorums know every token
    const sentChains = new Map<SimNode, number>()
    for (const q of quorums) {
      const prepare = q.quorum.prepare.bind(q.quorum)
      q.quorum.prepare = async (r: PrepareRequest) => {
        sentChains.set(q, (sentChains.get(q) ?? 0) + Object.keys(r.bundle.chains).length)
        return await prepare(r)
      }
    }
    const out = await b.sender.transfer({ sender: bob.did, receiver: carol.did, amountMilli: 4000, memo: 'all', quorums: net.quorumDids }, bob.owner)
    const asked = quorums.filter((q) => sentChains.has(q))
    expect(asked).to.have.length(5)
    const withChains = asked.filter((q) => sentChains.get(q)! > 0)
    // the anchor may be a quorum that signed only the anchor token's payment; at most one other lacks some
    expect(withChains.length, withChains.map((q) => q.name).join(',')).to.be.at.most(2)
    expect(out.quorums.filter((d) => always.includes(d)).length).to.be.at.least(3)
  })
})
