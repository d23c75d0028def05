import { expect } from 'chai'
import { complete, createLiteDid, quorumNetwork, mintRbt, rbtBalance, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'

describe('e2e: operator features on real nodes (self transfer, chain validation, pledges, locked tokens)', function () {
  this.timeout(240_000)
  let net: QuorumNetwork
  let carol = ''

  before(async () => {
    net = await quorumNetwork()
    // a fresh DID: the network is shared with other suites
    carol = await createLiteDid(net.a.client, USER_PASSWORD)
    await mintRbt(net.a.client, carol, 2, 0, USER_PASSWORD)
  })

  it('a self transfer re-issues the tokens through the quorums: balance unchanged, chains valid and one block longer, the quorums pledge for it', async () => {
    const { a } = net
    const none = await a.client.call('txSelfTransfer', { body: { did: carol } })
    expect(none).to.deep.equal({ status: true, message: 'No tokens present for self transfer', result: null })
    const first = await a.client.call('txSelfTransfer', { body: { did: carol, min_age_seconds: 0 } })
    expect(first.message).to.equal('Password needed')
    const done = await complete(a.client, first, USER_PASSWORD)
    expect(done.status, done.message).to.equal(true)
    expect(done.message).to.match(/^Transfer finished successfully in [\d.]+s with trnxid [0-9a-f]{64}$/)
    const res = done.result as { transactionID: string, tokens: string[], amount: number }
    expect(res.tokens).to.have.length(2)
    expect(res.amount).to.equal(2)
    expect(await rbtBalance(a.client, carol)).to.equal(2)
    const tx = await a.client.call('txGet', { params: { tx_id: res.transactionID } })
    expect(tx.result!.status).to.equal('committed')
    const v = await a.client.call('tokensValidateChain', { query: { did: carol } })
    expect(v.status, v.message).to.equal(true)
    expect(v.result!.tokens.map((t) => [t.valid, t.length])).to.deep.equal([[true, 2], [true, 2]])
    // blockcount: only the newest block of each chain (the self transfer's, signed by five quorums)
    const newest = await a.client.call('tokensValidateChain', { query: { did: carol, blockcount: '1' } })
    expect(newest.status, newest.message).to.equal(true)
    expect(newest.result!.tokens.map((t) => [t.valid, t.length, t.validated_blocks])).to.deep.equal([[true, 2, 1], [true, 2, 1]])
    expect(v.result!.tokens.map((t) => t.validated_blocks)).to.deep.equal([2, 2])
    // the signers hold pledges for the self transfer
    let pledged = 0
    for (const q of net.quorums) pledged += (await q.client.call('quorumsPledgedTokens')).result!.filter((p) => p.transaction_id === res.transactionID).length
    expect(pledged).to.be.greaterThan(0)
  })

  it('release_locked and run_unpledge answer on a live node; nothing of a completed transfer is released', async () => {
    const r = await net.a.client.call('tokensReleaseLocked', { body: {} })
    expect(r.status).to.equal(true)
    expect(r.result!.released.filter((t) => t.did === carol)).to.deep.equal([])
    const u = await net.quorums[0]!.client.call('quorumsRunUnpledge')
    expect(u.status).to.equal(true)
    expect(u.result!.pledges_held).to.be.a('number')
    const counts = await net.a.client.call('nodeTxCounts')
    expect(counts.result!.find((c) => c.DID === carol)).to.deep.include({ TxnSend: 1 })
  })
})
