import { expect } from 'chai'
import { settle } from '../../../bench/chaos/outcome.js'
import { ApiError } from '../../../src/client/api-error.js'

const first = { status: true, message: 'password needed', result: { id: 'x' } }

describe('chaos: what an operation came to', () => {
  it('a completing call cut on the way (the node killed mid-request) stays unknown: the node may have committed', async () => {
    // the soak once counted this as a refusal and then reported the committed transfer as a problem
    const s = await settle(first, async () => { throw new ApiError('request to http://127.0.0.1:1 failed: other side closed', 0) })
    expect(s.outcome).to.equal('unknown')
    expect(s.cut).to.equal(true)
    expect(s.detail).to.match(/other side closed/)
  })

  it("the node's refusal counts as one, with its code; a decided transfer still finishing is pending", async () => {
    const refused = await settle(first, async () => { throw new ApiError('consensus failed: 2 of 5 quorums agreed', 400, 'CONSENSUS_FAILED', { code: 'CONSENSUS_FAILED' }) })
    expect(refused).to.include({ outcome: 'failed', code: 'CONSENSUS_FAILED' })
    const answered = await settle(first, async () => ({ status: false, message: 'receiver unreachable', result: { code: 'DELIVERY_PENDING', transactionID: 't' } }))
    expect(answered).to.include({ outcome: 'pending', code: 'DELIVERY_PENDING', detail: 'receiver unreachable' })
    const full = await settle(first, async () => ({ status: false, message: 'disk full', result: { code: 'INSUFFICIENT_STORAGE', transactionID: 't' } }))
    expect(full.outcome).to.equal('unknown')
    expect(full.cut).to.equal(undefined)
  })

  it('a first answer that refuses is settled without the second step; a done one is ok', async () => {
    const s = await settle({ status: false, message: 'insufficient balance', result: null }, async () => { throw new Error('not called') })
    expect(s).to.include({ outcome: 'failed', detail: 'insufficient balance' })
    expect(await settle(first, async () => ({ status: true, message: 'done', result: {} }))).to.deep.equal({ outcome: 'ok', code: undefined })
  })
})
