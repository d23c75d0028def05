import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import { applyTxFilters, createConsensusApi, type TxView } from '../../src/node/consensus/consensus-api.js'
import { createOperatorApi, type OperatorApiDeps } from '../../src/node/consensus/operator-api.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'

const ALICE = 'bafybmi' + 'a'.repeat(52)
const BOB = 'bafybmi' + 'b'.repeat(52)

function view (id: string, epoch: number, over: Partial<TxView> = {}): TxView {
  return { transactionID: id, transaction_type: 'transfer', token_type: 'rbt', sender: ALICE, receiver: BOB, amount: 1, tokens: [], quorums: [], memo: '', epoch, block_ids: [], status: 'committed', ...over }
}

const TXID = 'ef'.repeat(32)
const stored = [{ txId: TXID, kind: 'transfer', initiator: ALICE, receiver: BOB, amount: 1500, tokens: ['t1'], comment: 'legacy', epoch: 1764000000, blockIds: ['1-b'], status: 'committed' }]

describe('api: transaction and quorum routes', () => {
  const started: unknown[] = []
  const quorums: string[] = []
  // the node's self transfer over token records: CAROL holds one Free token older than the pledge period, ALICE none
  const CAROL = 'bafybmi' + 'c'.repeat(52)
  const OLD = Date.now() - 8 * 24 * 3600 * 1000
  const selfStarted: Array<{ did: string, operation?: string }> = []
  const operator = createOperatorApi({
    repos: {
      owners: { list: async (did: string) => did === CAROL ? [{ tokenId: 'QmOld' }] : [] },
      tokens: { getMany: async (ids: string[]) => ids.map((tokenId) => ({ tokenId, owner: CAROL, status: 'Free', value: 1000, updatedAt: OLD })) }
    },
    didRecord: async (did: string) => did === ALICE || did === CAROL ? { type: 4 } : undefined,
    twoStep: { start: async (did: string, mode: number, _op: unknown, operation?: string) => { selfStarted.push({ did, operation }); return { status: true, message: 'Password needed', result: { id: 's', mode, hash: null, only_priv_key: false } } } }
  } as unknown as OperatorApiDeps)
  const consensus = createConsensusApi({
    service: () => { throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started') },
    registry: {
      list: () => [...quorums],
      add: async (d: string[]) => { for (const x of d) { if (quorums.includes(x)) throw new RbtError(ErrorCode.CONFLICT, `Failed to add quorums, quorum ${x} already exists`); quorums.push(x) } return quorums },
      removeAll: async () => { quorums.length = 0 }
    } as never,
    repos: { transactions: { get: async (id: string) => stored.find((t) => t.txId === id), list: async () => stored, byDid: async (did: string) => stored.filter((t) => t.initiator === did || t.receiver === did) } } as never,
    identity: { record: async (did) => did === ALICE ? { type: 4 } : undefined, isLocal: async (did) => did === ALICE },
    twoStep: { start: async (did, mode) => { started.push({ did, mode }); return { status: true, message: 'Password needed', result: { id: 'x', mode, hash: null, only_priv_key: false } } } },
    remoteQuorumStatus: async () => true,
    requestFaucet: async () => ({ txid: 't', count: 1 }),
    selfTransfer: async (did) => await operator.selfTransfer(did, {})
  })
  const services = { ...unusedIdentity(), ...unusedTokens(), consensus, node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  const app = createApp(services, { version: 't' })
  const post = async (path: string, body: unknown): Promise<{ status: number, env: { status: boolean, message: string, result: unknown } }> => {
    const res = await app.request(path, { method: 'POST', body: typeof body === 'string' ? body : JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    return { status: res.status, env: await res.json() as never }
  }

  it('POST /svc/v1/tx starts the two-step flow for a valid RBT transfer', async () => {
    const r = await post('/svc/v1/tx', { initiator: ALICE, owner: BOB, tokens: { rbt: 1.5 }, memo: 'm' })
    expect(r.status).to.equal(200)
    expect(r.env.message).to.equal('Password needed')
    expect(started).to.deep.equal([{ did: ALICE, mode: 4 }])
  })

  it('refuses bad transfers with 4xx and starts nothing', async () => {
    started.length = 0
    const cases: Array<[unknown, number, RegExp]> = [
      [{ initiator: ALICE, owner: BOB, tokens: { rbt: 1.2345 } }, 400, /3 decimal/],
      [{ initiator: ALICE, owner: BOB, tokens: { rbt: 0 } }, 400, /below the minimum 0\.001/],
      [{ initiator: ALICE, owner: BOB, tokens: { rbt: -1 } }, 400, /.+/],
      [{ initiator: 'nope', owner: BOB, tokens: { rbt: 1 } }, 400, /Invalid DID/],
      [{ initiator: ALICE, owner: ALICE, tokens: { rbt: 1, ft: [{ ftName: 'gold', numberOfFts: 1, creatorDID: ALICE }] } }, 400, /receiver other than the sender/],
      [{ initiator: BOB, owner: ALICE, tokens: { rbt: 1 } }, 403, /not hosted on this node/],
      [{ initiator: ALICE, owner: BOB }, 400, /tokens is required/],
      [{ initiator: ALICE, owner: BOB, tokens: { rbt: 1, nft: [{ nftId: 'x', value: 1 }] } }, 400, /not available/],
      ['{"initiator":', 400, /not valid JSON/]
    ]
    for (const [body, status, re] of cases) {
      const r = await post('/svc/v1/tx', body)
      expect(r.status, JSON.stringify(body)).to.equal(status)
      expect(r.env.status).to.equal(false)
      expect(r.env.message, JSON.stringify(body)).to.match(re)
    }
    expect(started).to.have.length(0)
  })

  it('a transfer whose sender is its receiver is the self transfer on /svc/v1/tx and /api/initiate-rbt-transfer; the amount is not used', async () => {
    started.length = 0
    // nothing due: the reference's success with nothing done, whatever the amount says
    for (const rbt of [1, 0, '2.5', 1.2345]) {
      const r = await post('/svc/v1/tx', { initiator: ALICE, owner: ALICE, tokens: { rbt } })
      expect(r.status, JSON.stringify(rbt)).to.equal(200)
      expect(r.env).to.deep.equal({ status: true, message: 'No tokens present for self transfer', result: null })
    }
    const legacy = await post('/api/initiate-rbt-transfer', { comment: 'c', receiver: ALICE, sender: ALICE, tokenCOunt: 3, type: 2 })
    expect(legacy.env).to.deep.include({ status: true, message: 'No tokens present for self transfer', result: null })
    expect(started, 'no transfer was started').to.have.length(0)
    expect(selfStarted).to.have.length(0)
    // tokens due: the self transfer's challenge (the DID signs its contract)
    const due = await post('/svc/v1/tx', { initiator: CAROL, owner: CAROL, tokens: { rbt: 7 } })
    expect(due.env.message).to.equal('Password needed')
    expect(selfStarted).to.deep.equal([{ did: CAROL, operation: 'self-transfer' }])
    const dueLegacy = await post('/api/initiate-rbt-transfer', { comment: 'c', receiver: CAROL, sender: CAROL, tokenCOunt: 1, type: 2 })
    expect(dueLegacy.env.message).to.equal('Password needed')
    expect(selfStarted).to.have.length(2)
    expect(started).to.have.length(0)
    // a DID not hosted here: the self transfer's refusal
    const foreign = await post('/svc/v1/tx', { initiator: BOB, owner: BOB, tokens: { rbt: 1 } })
    expect(foreign.status).to.equal(403)
    expect(foreign.env.message).to.match(/DID does not have an access/)
  })

  it('legacy initiate-rbt-transfer uses the same rules (tokenCOunt spelled so)', async () => {
    started.length = 0
    let r = await post('/api/initiate-rbt-transfer', { comment: 'c', receiver: BOB, sender: ALICE, tokenCOunt: 2, type: 2 })
    expect(r.env.message).to.equal('Password needed')
    r = await post('/api/initiate-rbt-transfer', { comment: 'c', receiver: BOB, sender: ALICE, tokenCOunt: 0.0001, type: 2 })
    expect(r.status).to.equal(400)
    expect(started).to.have.length(1)
  })

  it('legacy initiate-rbt-transfer takes the reference\'s "<peer id>.<DID>" addresses', async () => {
    started.length = 0
    const peer = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
    const r = await post('/api/initiate-rbt-transfer', { comment: 'c', receiver: `${peer}.${BOB}`, sender: `${peer}.${ALICE}`, tokenCOunt: 1.5, type: 2 })
    expect(r.status, r.env.message).to.equal(200)
    expect(r.env.message).to.equal('Password needed')
    expect(started).to.deep.equal([{ did: ALICE, mode: 4 }])
    for (const bad of [`x.${BOB}`, `${peer}.${peer}.${BOB}`, 'nope']) {
      const refused = await post('/api/initiate-rbt-transfer', { comment: 'c', receiver: bad, sender: ALICE, tokenCOunt: 1, type: 2 })
      expect(refused.status, bad).to.equal(400)
      expect(refused.env.message).to.match(/Invalid receiver address/)
    }
  })

  it('legacy get-by-txnId, get-by-did and get-by-comment answer the reference\'s TxnDetails', async () => {
    const details = { TransactionID: TXID, TransactionType: 'transfer', BlockID: '1-b', Mode: 0, SenderDID: ALICE, ReceiverDID: BOB, Amount: 1.5, TotalTime: 0, Comment: 'legacy', DateTime: new Date(1764000000 * 1000).toISOString(), Status: true, DeployerDID: '', Epoch: 1764000000 }
    const get = async (q: string): Promise<{ status: boolean, message: string, TxnDetails: unknown[] }> => await (await app.request(q)).json() as never
    const one = await get(`/api/get-by-txnId?txnID=${TXID}`)
    expect(one).to.deep.include({ status: true, message: 'Retrieved Txn Details', TxnDetails: [details] })
    const none = await get(`/api/get-by-txnId?txnID=${'cd'.repeat(32)}`)
    expect(none).to.deep.include({ status: true, message: `no records present for this Transaction ID : ${'cd'.repeat(32)}`, TxnDetails: [] })
    expect((await get(`/api/get-by-did?DID=${ALICE}&Role=sender`)).TxnDetails).to.deep.equal([details])
    expect((await get(`/api/get-by-did?DID=${BOB}&Role=RECEIVER`)).TxnDetails).to.deep.equal([details])
    expect((await get(`/api/get-by-did?DID=${BOB}`)).TxnDetails).to.deep.equal([details])
    expect(await get(`/api/get-by-did?DID=${BOB}&Role=Sender`)).to.deep.include({ status: true, message: `no records present for this DID : ${BOB}`, TxnDetails: [] })
    expect((await get('/api/get-by-comment?Comment=legacy')).TxnDetails).to.deep.equal([details])
  })

  it('quorums add / list / duplicate / remove_all', async () => {
    expect((await post('/svc/v1/quorums/add', { did: ALICE })).env.message).to.equal('Quorums added successfully')
    const dup = await post('/svc/v1/quorums/add', { DID: ALICE })
    expect(dup.status).to.equal(409)
    expect(dup.env.message).to.match(/already exists/)
    expect((await post('/svc/v1/quorums/add', { did: 'x' })).status).to.equal(400)
    const list = await (await app.request('/svc/v1/quorums')).json() as { result: string[] }
    expect(list.result).to.deep.equal([ALICE])
    expect((await app.request('/svc/v1/quorums/remove_all')).status).to.equal(200)
    expect(quorums).to.have.length(0)
  })

  it('quorum status asks the network for a remote DID; bad DID → 400', async () => {
    const ok = await (await app.request(`/svc/v1/quorums/status?quorumAddress=${BOB}`)).json() as { status: boolean, message: string }
    expect(ok).to.include({ status: true, message: 'Quorum is setup' })
    expect((await app.request('/svc/v1/quorums/status?quorumAddress=zz')).status).to.equal(400)
  })

  it('transaction queries validate their inputs', async () => {
    expect((await app.request(`/svc/v1/tx/${ALICE}/gold`)).status).to.equal(400)
    expect((await app.request(`/svc/v1/tx/${ALICE}/rbt?latest=0`)).status).to.equal(400)
    expect((await app.request(`/svc/v1/tx/${ALICE}/rbt?start_epoch=abc`)).status).to.equal(400)
    expect((await app.request(`/svc/v1/tx/${ALICE}/rbt?start_date=2026-13-40`)).status).to.equal(400)
    expect((await app.request(`/svc/v1/tx/${ALICE}/rbt?latest=2`)).status).to.equal(200)
    const missing = await app.request('/svc/v1/tx/' + 'ab'.repeat(32))
    expect(missing.status).to.equal(404)
    expect((await app.request('/api/get-by-did?DID=' + ALICE + '&Role=Thief')).status).to.equal(400)
  })

  it('date filters are inclusive UTC days; epoch filters inclusive; latest takes the most recent', () => {
    const day = Date.parse('2026-11-20T00:00:00Z') / 1000
    const list = [view('a', day - 1), view('b', day), view('c', day + 86_399), view('d', day + 86_400)]
    expect(applyTxFilters(list, { start_date: '2026-11-20', end_date: '2026-11-20' }).map((t) => t.transactionID)).to.deep.equal(['c', 'b'])
    expect(applyTxFilters(list, { start_epoch: day, end_epoch: day }).map((t) => t.transactionID)).to.deep.equal(['b'])
    expect(applyTxFilters(list, { latest: 2 }).map((t) => t.transactionID)).to.deep.equal(['d', 'c'])
    expect(() => applyTxFilters(list, { start_date: '20-11-2026' })).to.throw(/YYYY-MM-DD/)
  })
})
