import { expect } from 'chai'
import { claimedAncestors, LINEAGE_RESET_LEVELS } from '../../../src/consensus/burn-claims.js'
import { deepChange } from '../../../src/consensus/lineage-reset.js'
import { splitToken } from '../../../src/consensus/part-split.js'
import type { StateClaims } from '../../../src/consensus/ports.js'
import { balance, twoQuorumSets, type SimDid, type SimNode } from './harness.js'

/**
 * A wallet that pays again and again from its change burns the change at its genesis each time: the
 * line of burns a spend claims and seals grows by one per payment. The change is reset by a self
 * transfer once its line reaches LINEAGE_RESET_LEVELS, and the next payment claims a short line.
 */
describe('consensus: the line of burns of a wallet\'s change, and its reset', function () {
  this.timeout(120_000)

  /** Burns the token `levels` times at its genesis into the rest and 1 milli, set aside (no quorum): the deepest part. */
  async function burnDown (node: SimNode, alice: SimDid, id: string, levels: number): Promise<string> {
    let cur = id
    for (let i = 0; i < levels; i++) {
      const t = node.ledger.tokens.get(cur)!
      const chain = node.ledger.blocks.get(cur)!
      const res = await splitToken(t, chain[chain.length - 1]!, t.valueMilli - 1, alice.owner, Date.now())
      await node.ledger.commit((w) => {
        w.putToken(res.parent)
        w.putBlock(cur, res.burnBlock.number, res.burnBlock.envelope)
        for (const p of res.parts) { w.putToken(p.token); w.putBlock(p.token.tokenId, 0, p.genesis) }
      })
      cur = res.parts[0]!.token.tokenId
      // the 1 milli parts are not chosen by the payments below
      node.ledger.tokens.get(res.parts[1]!.token.tokenId)!.status = 'Pledged'
    }
    return cur
  }

  it('a payment from a deep change names the change due for a reset; after the self transfer the next payment claims one burnt ancestor, and every payment is paid', async () => {
    const n = await twoQuorumSets(true)
    const alice = await n.net.addDid(n.x)
    const [id] = await n.net.mint(n.x, alice.did, 1)
    const chainOf = async (t: string): Promise<Uint8Array[]> => await n.x.ledger.chain(t)
    const deep = await burnDown(n.x, alice, id!, LINEAGE_RESET_LEVELS)
    const deepToken = n.x.ledger.tokens.get(deep)!
    expect(await claimedAncestors(deep, deepToken.latestBlockId, chainOf)).to.equal(LINEAGE_RESET_LEVELS)

    // what the payment's claims carried: every burnt state of the line, and then some
    const port = (n.x.sender as unknown as { ctx: { claims: { port: StateClaims } } }).ctx.claims.port
    const claimFor = port.claimFor.bind(port)
    const burnsClaimed: number[] = []
    port.claimFor = async (txid, claimants, hashes, burns, contract, paths) => { burnsClaimed.push(burns.length); return await claimFor(txid, claimants, hashes, burns, contract, paths) }

    const pay = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 10, memo: 'p1', quorums: n.set1 }, alice.owner)
    expect(pay.delivered).to.equal(true)
    expect(Math.max(...burnsClaimed)).to.equal(LINEAGE_RESET_LEVELS + 1)
    const due = await n.x.sender.deepChange(pay.txid)
    expect(due.tokens).to.have.length(1)
    expect(due.amountMilli).to.equal(deepToken.valueMilli - 10)
    // nothing is due after a payment of a shallow line
    expect((await deepChange(n.x.ledger, alice.did, [id!], LINEAGE_RESET_LEVELS)).tokens).to.deep.equal([])

    const reset = await n.x.sender.transfer({ sender: alice.did, receiver: alice.did, amountMilli: due.amountMilli, memo: 'lineage reset', quorums: n.set2, selfTokens: due.tokens }, alice.owner)
    expect(reset.delivered).to.equal(true)
    burnsClaimed.length = 0
    const again = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 20, memo: 'p2', quorums: n.set1 }, alice.owner)
    expect(again.delivered).to.equal(true)
    // the change was transferred since: the payment's part rests on the one burn that made it
    expect(burnsClaimed).to.deep.equal([1])
    expect((await n.x.sender.deepChange(again.txid)).tokens).to.deep.equal([])
    expect(await balance(n.bobNode, n.bob.did)).to.equal(30)
  })
})
