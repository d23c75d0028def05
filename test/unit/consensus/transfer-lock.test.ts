import { expect } from 'chai'
import { lockTokens, type LockContext } from '../../../src/consensus/transfer-lock.js'
import type { OutgoingRecord } from '../../../src/consensus/records.js'
import { SimNet } from './harness.js'

describe('consensus/transfer-lock: what a transfer locks before consensus', function () {
  this.timeout(60_000)

  it('locks the chosen tokens and writes the PREPARING record in one commit, and says so in the same turn', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 2)
    const locked: string[] = []
    const ctx: LockContext = { ledger: a.ledger, clock: net.clock, fault: () => {}, locked: (txid) => { locked.push(txid) } }
    const rec = await lockTokens(ctx, { sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'one', quorums: net.quorumDids }, alice.owner)
    expect(rec.state).to.equal('PREPARING')
    expect(rec.tokens).to.have.length(1)
    expect(locked).to.deep.equal([rec.txid])
    expect(await a.ledger.record<OutgoingRecord>('cs-outgoing', rec.txid)).to.include({ state: 'PREPARING', amountMilli: 1000 })
    const states = ids.map((id) => a.ledger.tokens.get(id))
    expect(states.filter((t) => t?.status === 'Locked' && t.txid === rec.txid)).to.have.length(1)
    expect(states.filter((t) => t?.status === 'Free')).to.have.length(1)
  })

  it('a commit that fails locks nothing and writes no record', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 1)
    const locked: string[] = []
    const ctx: LockContext = { ledger: a.ledger, clock: net.clock, fault: () => {}, locked: (txid) => { locked.push(txid) } }
    a.ledger.failNextCommit = true
    const err = await lockTokens(ctx, { sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: Error) => e)
    expect(err?.message).to.match(/injected commit failure/)
    expect(locked).to.deep.equal([])
    expect(a.ledger.tokens.get(ids[0])?.status).to.equal('Free')
    expect(a.ledger.recs.get('cs-outgoing')?.size ?? 0).to.equal(0)
  })

  it('refuses a transfer the quorum list cannot serve before anything is locked', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 1)
    const ctx: LockContext = { ledger: a.ledger, clock: net.clock, fault: () => {}, locked: () => {} }
    const err = await lockTokens(ctx, { sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids.slice(0, 4) }, alice.owner).then(() => undefined, (e: Error) => e)
    expect(err?.message).to.match(/not enough quorums: 4 usable/)
    expect(a.ledger.tokens.get(ids[0])?.status).to.equal('Free')
  })
})
