import { expect } from 'chai'
import { createBlock, decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, nextTokenEntry, setSignature } from '../../../src/tokenchain/block.js'
import { TransactionType } from '../../../src/tokenchain/types.js'
import { SimNet, balance, twoQuorumSets, type SimDid, type SimNode } from './harness.js'
import { launderToOwnNode, walletOnTwoNodes } from './owner-tricks.js'

/**
 * Laundering through a receiver of the owner's own, reviewed: the receiver's check of earlier
 * blocks looks only at the chains of the tokens its block moves, so a laundered state one level up
 * (a parent burnt into parts) escapes it.
 */
describe('consensus: a cheating owner launders a spent state (review of the earlier-block check)', function () {
  this.timeout(120_000)

  const wallet = walletOnTwoNodes

  /** The owner pays bob, then spends the same state again to mallory on his node M (own quorums, own receiver). */
  async function laundered (): Promise<{ n: Awaited<ReturnType<typeof twoQuorumSets>>, m: SimNode, mallory: SimDid }> {
    const n = await twoQuorumSets(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    const { m, mallory } = await launderToOwnNode(n, alice)
    return { n, m, mallory }
  }

  it('a laundered parent paid on in parts: mallory pays carol half of the token (the parent burnt into parts) through honest quorums: carol is not paid', async () => {
    const { n, m, mallory } = await laundered()
    await m.sender.transfer({ sender: mallory.did, receiver: n.carol.did, amountMilli: 500, memo: 'm', quorums: n.set2 }, mallory.owner).catch(() => undefined)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
    expect(await balance(n.carolNode, n.carol.did), 'one state paid to bob, and through mallory half of it to carol').to.equal(0)
  })

  it('a receiver that held the token before (on another fork): bob was paid, paid dave on, then mallory (laundered) pays bob the same token through honest quorums: bob is not paid again while dave holds it', async () => {
    const { n, m, mallory } = await laundered()
    const dave = await n.net.addDid(n.carolNode)
    const on = await n.bobNode.sender.transfer({ sender: n.bob.did, receiver: dave.did, amountMilli: 1000, memo: 'b', quorums: n.set1 }, n.bob.owner)
    expect(on.delivered).to.equal(true)
    expect(await balance(n.carolNode, dave.did)).to.equal(1000)
    await m.sender.transfer({ sender: mallory.did, receiver: n.bob.did, amountMilli: 1000, memo: 'm', quorums: n.set2 }, mallory.owner).catch(() => undefined)
    expect(await balance(n.bobNode, n.bob.did), 'one state paid to dave through bob, and through mallory to bob again').to.equal(0)
  })

  it('a second spend written as an "executed" block (owner changed, no contract) carrying the first spend\'s transaction id, signed by the owner\'s own five: mallory pays carol through honest quorums: carol is not paid', async () => {
    const n = await twoQuorumSets(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    const bobChain = n.bobNode.ledger.blocks.get(id)!
    const t1 = decodeBlockEnvelope(bobChain[bobChain.length - 1]!).content.transInfo.tid!
    const m = n.net.addNode('M')
    const mallory = await n.net.addDid(m)
    // the owner writes the second spend by hand on his copy: an "08" block, new owner mallory, the tid of T1
    const chain = [...n.y.ledger.blocks.get(id)!]
    const prev = decodeBlockEnvelope(chain[chain.length - 1]!)
    const signers = n.set2.slice(0, 5).map((d) => n.net.nodeOf(d).dids.get(d)!)
    const credits = await Promise.all(signers.map(async (q) => ({ did: q.did, hash: t1, signType: '0', signature: '', privSignature: await q.quorum.pvtSign(t1) })))
    const init = { hash: t1, signType: 0, initiatorDid: alice.did, privSignature: await alice.owner.pvtSign(t1), nlssShareSignature: '' }
    let b = createBlock({ tokenType: prev.content.tokenType, transactionType: TransactionType.EXECUTED, owner: mallory.did, transInfo: { tokens: { [id]: nextTokenEntry(prev, id) }, tid: t1, sender: alice.did, receiver: mallory.did }, quorumSignatures: credits, initiatorSignature: init, childTokens: [] } as never)
    for (const q of signers) b = setSignature(b, q.did, await q.quorum.pvtSign(b.hash))
    chain.push(encodeBlockEnvelope(b))
    m.ledger.blocks.set(id, chain)
    m.ledger.tokens.set(id, { ...n.y.ledger.tokens.get(id)!, owner: mallory.did, latestBlockId: formatBlockId(chain.length - 1, b.hash) })
    await m.sender.transfer({ sender: mallory.did, receiver: n.carol.did, amountMilli: 1000, memo: 'm', quorums: n.set2 }, mallory.owner).catch(() => undefined)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
    expect(await balance(n.carolNode, n.carol.did), 'one state paid to bob, and through an "08" block to mallory and on to carol').to.equal(0)
  })
})
