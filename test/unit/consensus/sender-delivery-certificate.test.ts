import { expect } from 'chai'
import { readOutgoing } from '../../../src/consensus/records.js'
import { balance, twoQuorumSets } from './harness.js'
import { walletOnTwoNodes } from './owner-tricks.js'

/**
 * A transfer decided on the first arbiters' seals (docs/protocol.md, "A signer's own seal") and
 * delivered to a receiver that counts more arbiters than the sender: the certificate the decision
 * kept is short there, and the sender gathers the other arbiters' seals only then, and delivers
 * again at once. A receiver that finds it enough costs no gathering at all.
 */
describe('sender: a certificate grown when a receiver finds it short', () => {
  it('a receiver counting more arbiters than the sender is shown the grown certificate and pays; one that counts the same asks for nothing more', async () => {
    const n = await twoQuorumSets(true)
    const arbiters = n.net.nodes.length
    const { alice } = await walletOnTwoNodes(n.net, n.x, n.y)
    n.x.sealsFirst = arbiters - 2
    // the first receiver counts as the sender does
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'same count', quorums: n.net.quorumDids.slice(0, 5) }, alice.owner)
    expect(first.delivered).to.equal(true)
    expect(n.net.grown, 'grown for a receiver that found it enough').to.deep.equal([])
    // the second counts every arbiter: the decision's certificate is short there
    n.carolNode.certificateNeeds = arbiters
    await n.net.mint(n.x, alice.did, 1)
    const second = await n.x.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'one more', quorums: n.net.quorumDids.slice(0, 5) }, alice.owner)
    expect(second.delivered, 'delivered with the grown certificate').to.equal(true)
    expect(n.net.grown).to.deep.equal([second.txid])
    expect(await balance(n.carolNode, n.carol.did)).to.equal(1000)
    expect((await readOutgoing(n.x.ledger, second.txid))?.state).to.equal('COMMITTED')
  })
})
