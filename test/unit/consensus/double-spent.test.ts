import { expect } from 'chai'
import { SimNet } from './harness.js'
import { TransferSender } from '../../../src/consensus/sender.js'

describe('consensus: a quorum refusing a double spend tells the node which token states were spent', function () {
  this.timeout(60_000)

  it('a stale copy of a wallet spends a token the original spent: refused, and the node hears of the spent states (to check their chains)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const [token] = await net.mint(a, alice.did, 1)
    const copy = net.addNode('A-copy', a.ledger.clone())
    copy.dids.set(alice.did, alice)
    const heard: Array<{ states: Array<{ tokenId: string, blockId: string }>, reason: string }> = []
    const base = copy.sender as unknown as { opts: ConstructorParameters<typeof TransferSender>[0] }
    const sender = new TransferSender({ ...base.opts, onDoubleSpent: (states, reason) => { heard.push({ states, reason }) } })
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'original', quorums: net.quorumDids }, alice.owner)
    expect(first.delivered).to.equal(true)
    const held = (await copy.ledger.token(token))!
    expect(held.status).to.equal('Free')
    const stale = await sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'copy', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: Error) => e)
    expect(stale?.message).to.match(/double spent \(spent by |held by transaction /)
    expect(heard).to.have.length(1)
    expect(heard[0].states).to.deep.equal([{ tokenId: token, blockId: held.latestBlockId }])
    expect(heard[0].reason).to.include(first.txid)
    expect(b).to.not.equal(undefined)
  })
})
