import { expect } from 'chai'
import { SimNet } from './harness.js'

describe('consensus: the pledge evidence a delivery carries', function () {
  this.timeout(120_000)

  it('grows with the logarithm of the pledges a quorum made, not with their number (its split tokens form a balanced tree)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const deliver = b.receiver.deliver.bind(b.receiver)
    const perQuorum: number[] = []
    b.receiver.deliver = async (r) => {
      const blocks = Object.values(r.pledges?.chains ?? {}).reduce((n, c) => n + c.length, 0)
      perQuorum.push(blocks / 5)
      return await deliver(r)
    }
    // 80 payments: each quorum pledges about 57 times, cutting 8 pieces a split (about 7 splits)
    for (let i = 0; i < 80; i++) await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await b.ledger.tokensOf(bob.did)).to.have.length(80)
    // before: one line of splits, a level deeper every 8 pledges: 3 blocks a quorum at first, 16 at the
    // end and growing; now 5
    const last = perQuorum.slice(-10)
    expect(Math.max(...last), perQuorum.join(" ")).to.be.at.most(9)
  })
})
