import { expect } from 'chai'
import { runCommand } from './harness.js'

const A = 'bafybmi' + 'x'.repeat(52)
const Q = 'bafybmi' + 'q'.repeat(52)
const T = 'Qm' + 'a'.repeat(44)
const TX = 'ab'.repeat(32)
const ok = (result: unknown, message = 'ok'): { body: unknown } => ({ body: { status: true, message, result } })

describe('cli: operator verbs of the reference against a stub transport', function () {
  this.timeout(20_000)

  it('releaseAllLockedTokens posts the release and prints a line per token released or kept', async () => {
    const item = (state: string, reason: string): unknown => ({ token: T, did: A, value: 1, transaction_id: TX, record_state: state, reason })
    const r = await runCommand(['releaseAllLockedTokens'], () => ok({ released: [item('PREPARING', 'aborted')], kept: [item('SIGNING', 'may have signed')] }, 'Released 1 locked token(s); kept 1'))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests.map((q) => `${q.method} ${new URL(q.url).pathname}`)).to.deep.equal(['POST /svc/v1/tokens/release_locked'])
    expect(r.stdout.trim().split('\n')).to.deep.equal([`released ${T} ${A} 1 ${TX} PREPARING: aborted`, `kept ${T} ${A} 1 ${TX} SIGNING: may have signed`])
  })

  it('validatetokenchain sends -did -token -blockCount -sctValidation as the reference names them; an invalid chain exits 1', async () => {
    const good = await runCommand(['validatetokenchain', '-did', A, '-token', T, '-blockCount', '5', '-sctValidation'], () => ok({ did: A, checked: 1, valid: 1, invalid: 0, tokens: [{ token: T, valid: true, length: 3, bad_block: null }] }, 'token chain validated successfully (1 token(s))'))
    expect(good.code, good.stderr).to.equal(0)
    const u = new URL(good.requests[0]!.url)
    expect(u.pathname).to.equal('/svc/v1/tokens/validate_chain')
    expect(Object.fromEntries(u.searchParams)).to.deep.equal({ did: A, token: T, blockcount: '5', SCChainValidation: 'true' })
    expect(good.stdout.trim()).to.equal(`valid   ${T} (3 blocks)`)
    const bad = await runCommand(['validatetokenchain', '-did', A], () => ({ body: { status: false, message: `token ${T}: block 2 failed the signature check: nope`, result: null } }))
    expect(bad.code).to.equal(1)
    expect(bad.stderr).to.match(/block 2 failed the signature check/)
    const usage = await runCommand(['validatetokenchain', '-did', A, '-blockCount', 'x'], () => { throw new Error('no request expected') })
    expect(usage.code).to.equal(2)
  })

  it('checkQuorumStatus -quorumAddr asks the quorum status route; not set up exits 1', async () => {
    const up = await runCommand(['checkQuorumStatus', '-quorumAddr', Q], () => ok(null, 'Quorum is setup'))
    expect(up.code, up.stderr).to.equal(0)
    expect(new URL(up.requests[0]!.url).searchParams.get('quorumAddress')).to.equal(Q)
    expect(up.stderr).to.match(/Quorum is setup/)
    const down = await runCommand(['checkQuorumStatus', '-quorumAddr', Q], () => ({ body: { status: false, message: 'Quorum is not setup', result: null } }))
    expect(down.code).to.equal(1)
  })

  it('getpledgedtokendetails, get-by-node, run-unpledge, getalltokens and node-status call their routes', async () => {
    const pledged = await runCommand(['getpledgedtokendetails'], () => ok([{ did: Q, token: T, transaction_id: TX, token_state: [], release_at: '2026-01-01T00:00:00.000Z' }]))
    expect(pledged.stdout.trim()).to.equal(`${Q} ${T} ${TX} 2026-01-01T00:00:00.000Z`)
    const counts = await runCommand(['get-by-node'], () => ok([{ DID: A, TxnSend: 2, TxnReceived: 1 }]))
    expect(counts.stdout.trim()).to.equal(`${A} 2 1`)
    const unpledge = await runCommand(['run-unpledge'], () => ok({ released: 1, pledges_released: 1, tokens: [T], pledges_held: 0 }, 'Unpledging of pledged tokens was successful, Total Unpledge Amount: 1 RBT'))
    expect(unpledge.requests.map((q) => `${q.method} ${new URL(q.url).pathname}`)).to.deep.equal(['POST /svc/v1/quorums/run_unpledge'])
    expect(unpledge.stderr).to.match(/Total Unpledge Amount: 1 RBT/)
    const tokens = await runCommand(['getalltokens', '-did', A, '-type', 'FT'], () => ok([{ token_id: T, token_status: 'Free', token_status_code: 0, token_value: 0.001 }]))
    expect(Object.fromEntries(new URL(tokens.requests[0]!.url).searchParams)).to.deep.equal({ did: A, type: 'ft' })
    expect(tokens.stdout.trim()).to.equal(`${T} Free 0 0.001`)
    const status = await runCommand(['node-status'], () => ok({ version: '1', core_started: true, peer_id: null, listen: [], connected_peers: 0, peers: [], mdns: false, test_net: true, api: '', grpc: '' }, 'Node is up and running'))
    expect(status.code, status.stderr).to.equal(0)
    expect(new URL(status.requests[0]!.url).pathname).to.equal('/svc/v1/node/status')
  })

  it('self-transfer-rbt drops a peer id prefix, posts the self transfer and prints the transaction id', async () => {
    const r = await runCommand(['self-transfer-rbt', '-senderAddr', `12D3KooWabc.${A}`, '-transType', '2'], () => ok({ transactionID: TX, tokens: [T], amount: 1, remaining: 0 }, `Transfer finished successfully in 1.0s with trnxid ${TX}`))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0]!.body).to.deep.equal({ did: A })
    expect(new URL(r.requests[0]!.url).pathname).to.equal('/svc/v1/tx/self_transfer')
    expect(r.stdout.trim()).to.equal(TX)
  })
})
