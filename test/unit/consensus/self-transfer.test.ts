import { expect } from 'chai'
import { validateChain } from '../../../src/tokenchain/validate.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { decodeContract } from '../../../src/tokenchain/contract.js'
import type { OutgoingRecord } from '../../../src/consensus/records.js'
import { unb64 } from '../../../src/consensus/records.js'
import { SimNet, balance } from './harness.js'

describe('consensus: self transfer (a DID re-issues its own tokens to itself through consensus)', function () {
  this.timeout(60_000)

  it('spends exactly the named tokens to the sender: balance unchanged, tokens Free at the new block, chains valid, the spent states free their old pledges', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(b, bob.did, 2)
    // alice receives 2 RBT: quorums pledge for those states
    const first = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, bob.owner)
    await b.sender.notifyQuorums(first.txid)
    const pledgesBefore = (await Promise.all(quorums.map(async (q) => await q.quorum.pledgeSummary()))).flat().filter((p) => p.txid === first.txid)
    expect(pledgesBefore.length).to.be.greaterThan(0)
    const ids = (await a.ledger.tokensOf(alice.did, 'Free')).map((t) => t.tokenId).sort()
    expect(ids).to.have.length(2)

    const r = await a.sender.transfer({ sender: alice.did, receiver: alice.did, amountMilli: 2000, memo: 'self', quorums: net.quorumDids, selfTokens: ids }, alice.owner)
    expect(r.delivered).to.equal(true)
    await a.sender.notifyQuorums(r.txid)
    expect(await balance(a, alice.did)).to.equal(2000)
    const rec = (await a.sender.record(r.txid))!
    expect(rec.state).to.equal('COMMITTED')
    expect(rec.tokens.sort()).to.deep.equal(ids)
    const contract = decodeContract(unb64(rec.contract))
    expect(contract.content.transInfo.receiver).to.equal(alice.did)
    const verifier = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    for (const id of ids) {
      const t = (await a.ledger.token(id))!
      expect(t.status).to.equal('Free')
      expect(t.owner).to.equal(alice.did)
      expect(t.latestBlockId).to.equal(r.blockId.replace(/^\d+/, t.latestBlockId.split('-')[0]!))
      const res = await validateChain(await a.ledger.chain(id), { tokenId: id, verifier, tokenContent: t.content })
      expect(res.tip.owner).to.equal(alice.did)
      expect(res.length).to.equal(3)
    }
    // the quorums learn the spend (the node gossips it) and release the pledges that backed the old states
    const spent = Object.entries(contract.content.transInfo.transTokens ?? {}).map(([id, t]) => `${id}@${t.blockId ?? ''}`)
    for (const q of quorums) await q.quorum.tokensMovedOn(spent, { chain: async function * (id: string, from: number) { yield (await a.ledger.chain(id)).slice(from) } })
    const pledgesAfter = (await Promise.all(quorums.map(async (q) => await q.quorum.pledgeSummary()))).flat().filter((p) => p.txid === first.txid)
    expect(pledgesAfter).to.deep.equal([])
    // the new transaction is pledged for in turn
    expect((await Promise.all(quorums.map(async (q) => await q.quorum.pledgeSummary()))).flat().filter((p) => p.txid === r.txid).length).to.be.greaterThan(0)
  })

  it('sender = receiver is still refused without named tokens, and a named token that is not Free refuses the whole transfer', async () => {
    const { net, a, alice } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 2)
    try {
      await a.sender.transfer({ sender: alice.did, receiver: alice.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
      expect.fail('should refuse')
    } catch (e) { expect((e as Error).message).to.match(/same DID/) }
    const t = (await a.ledger.token(ids[1]))!
    await a.ledger.commit((w) => { w.putToken({ ...t, status: 'Locked', txid: 'x' }) })
    try {
      await a.sender.transfer({ sender: alice.did, receiver: alice.did, amountMilli: 2000, memo: '', quorums: net.quorumDids, selfTokens: ids }, alice.owner)
      expect.fail('should refuse')
    } catch (e) { expect((e as Error).message).to.match(/Locked/) }
    expect((await a.ledger.token(ids[0]))!.status).to.equal('Free')
  })
})
