import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import type { OperatorApi } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { PEER, CHALLENGE, type Env, call } from './legacy-harness.js'

const DID = 'bafybmi' + 'b'.repeat(52)
const EMPTY = 'bafybmi' + 'c'.repeat(52)
const TOKEN = 'Qm' + 'a'.repeat(44)

function services (operator: boolean): { s: ApiServices, calls: unknown[] } {
  const calls: unknown[] = []
  const s = { ...unusedIdentity(), ...unusedConsensus(), ...unusedTokens(), node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  Object.assign(s.tokens, {
    generateLocalRbt: async (input: unknown) => { calls.push({ mint: input }); return CHALLENGE },
    list: async (did: string, type?: string) => {
      calls.push({ list: did, type })
      if (!['rbt', 'smartcontract'].includes(String(type).toLowerCase())) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid token type "${String(type)}"`)
      return did === DID ? [{ token_id: TOKEN, token_status_code: 0 }, { token_id: 'Qm' + 'b'.repeat(44), token_status_code: 2 }] : []
    },
    chain: async (token: string, opts: { afterBlockId?: string }) => {
      calls.push({ chain: token, ...opts })
      if (token !== TOKEN) throw new RbtError(ErrorCode.NOT_FOUND, 'Failed to get token chain block, token does not exist')
      return { blocks: [{ envelope: 'AAEC' }, { envelope: 'AwQF' }], next_block_id: '' }
    }
  })
  Object.assign(s.consensus, { faucet: async (did: string, count: number) => { calls.push({ faucet: did, count }); return CHALLENGE } })
  if (operator) {
    const op = {
      releaseLocked: async () => ({ released: [], kept: [] }),
      validateChains: async (did: string, token?: string, opts?: { blockCount?: number }) => {
        calls.push({ validate: token ?? null, blockCount: opts?.blockCount })
        return ({ did, checked: 1, valid: token === TOKEN ? 1 : 0, invalid: token === TOKEN ? 0 : 1, tokens: [token === TOKEN ? { token, valid: true, length: 2, bad_block: null } : { token: token ?? 'x', valid: false, length: 2, bad_block: { token: token ?? 'x', block_number: 1, block_id: null, check: 'hash', reason: 'block hash does not match' } }] }) as never
      },
      pledgedTokens: async () => [{ did: DID, token: TOKEN, transaction_id: 't1', token_state: ['s'], release_at: '2026-01-01T00:00:00.000Z' }],
      txCounts: async () => [{ DID, TxnSend: 2, TxnReceived: 1 }],
      runUnpledge: async () => ({ released: 1.5, pledges_released: 1, tokens: [TOKEN], pledges_held: 0 }),
      selfTransfer: async (did: string) => { calls.push({ self: did }); return CHALLENGE as never }
    } as unknown as OperatorApi
    s.operator = op
  }
  return { s, calls }
}

function keys (env: Env, extra: string[] = []): void {
  expect(Object.keys(env).sort()).to.deep.equal(['message', 'result', 'status', ...extra].sort())
}

describe('api: the reference /api RBT token and diagnostic routes', () => {
  const { s, calls } = services(true)
  const app = createApp(s, { version: 't' })

  it('POST /api/generate-test-token {number_of_tokens, did}: the challenge; a fraction is 400', async () => {
    const r = await call(app, 'POST', '/api/generate-test-token', { Number_Of_Tokens: 2, did: DID })
    expect(r).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ mint: { did: DID, number_of_tokens: 2 } })
    const bad = await call(app, 'POST', '/api/generate-test-token', { number_of_tokens: 1.5, did: DID })
    expect(bad.status).to.equal(400)
    expect(bad.env.message).to.match(/whole number and greater than 0/)
  })

  it('POST /api/generate-faucettest-token {token_count, did}: the challenge', async () => {
    expect(await call(app, 'POST', '/api/generate-faucettest-token', { token_count: 3, did: DID })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ faucet: DID, count: 3 })
  })

  it('POST /api/initiate-self-transfer takes the sender address (peer.did too) and answers the challenge', async () => {
    expect(await call(app, 'POST', '/api/initiate-self-transfer', { sender: `${PEER}.${DID}`, receiver: '', tokenCOunt: 0, type: 2 })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ self: DID })
  })

  it('GET /api/getalltokens?did=&type=: token_detials [{token, status}], result null; DT and unknown types status false', async () => {
    let r = await call(app, 'GET', `/api/getalltokens?did=${DID}&type=RBT`)
    expect(r.status).to.equal(200)
    keys(r.env, ['token_detials'])
    expect(r.env).to.deep.include({ status: true, message: 'Got all tokens', result: null })
    expect(r.env.token_detials).to.deep.equal([{ token: TOKEN, status: 0 }, { token: 'Qm' + 'b'.repeat(44), status: 2 }])
    r = await call(app, 'GET', `/api/getalltokens?did=${EMPTY}`)
    expect(r.env.token_detials).to.deep.equal([])
    await call(app, 'GET', `/api/getalltokens?did=${DID}&type=SC`)
    expect(calls).to.deep.include({ list: DID, type: 'smartContract' })
    for (const type of ['DT', 'XYZ']) {
      r = await call(app, 'GET', `/api/getalltokens?did=${DID}&type=${type}`)
      expect(r.status).to.equal(200)
      keys(r.env, ['token_detials'])
      expect(r.env.status).to.equal(false)
      expect(r.env.token_detials).to.equal(null)
    }
    expect((await call(app, 'GET', '/api/getalltokens?did=x')).status).to.equal(400)
  })

  it('POST /api/dump-token-chain {token, block_id}: blocks (base64) and next_block_id', async () => {
    let r = await call(app, 'POST', '/api/dump-token-chain', { token: TOKEN, block_id: '' })
    expect(r.status).to.equal(200)
    keys(r.env, ['next_block_id', 'blocks'])
    expect(r.env).to.deep.equal({ status: true, message: 'Successfully got the token chain block', result: null, next_block_id: '', blocks: ['AAEC', 'AwQF'] })
    await call(app, 'POST', '/api/dump-token-chain', { token: TOKEN, block_id: 'b1' })
    expect(calls).to.deep.include({ chain: TOKEN, afterBlockId: 'b1' })
    r = await call(app, 'POST', '/api/dump-token-chain', { token: 'Qm' + 'z'.repeat(44) })
    expect(r.status).to.equal(200)
    expect(r.env).to.deep.equal({ status: false, message: 'Failed to get token chain block, token does not exist', result: null, next_block_id: '', blocks: null })
  })

  it('DELETE /api/check-pinned-state: not done here, status false on 200 naming the alternative', async () => {
    const r = await call(app, 'DELETE', `/api/check-pinned-state?tokenstatehash=Qm${'d'.repeat(44)}`)
    expect(r.status).to.equal(200)
    keys(r.env)
    expect(r.env.status).to.equal(false)
    expect(r.env.message).to.match(/not done by this node.*get-pledgedtoken-details.*run-unpledge/)
    expect((await call(app, 'GET', '/api/check-pinned-state')).status).to.equal(405)
  })

  it('GET /api/get-by-node: TxnCount', async () => {
    const r = await call(app, 'GET', '/api/get-by-node')
    expect(r.status).to.equal(200)
    keys(r.env, ['TxnCount'])
    expect(r.env.status).to.equal(true)
    expect(r.env.TxnCount).to.deep.equal([{ DID, TxnSend: 2, TxnReceived: 1 }])
  })

  it('GET /api/get-pledgedtoken-details: token_state_details', async () => {
    const r = await call(app, 'GET', '/api/get-pledgedtoken-details')
    expect(r.status).to.equal(200)
    keys(r.env, ['token_state_details'])
    expect(r.env).to.deep.include({ status: true, message: 'Got pledged tokens with token states info successfully', result: null })
    expect(r.env.token_state_details).to.have.length(1)
    expect((r.env.token_state_details as any[])[0]).to.include({ did: DID, token: TOKEN })
  })

  it('POST /api/run-unpledge, GET /api/release-all-locked-tokens: the reference texts', async () => {
    let r = await call(app, 'POST', '/api/run-unpledge')
    expect(r.status).to.equal(200)
    keys(r.env)
    expect(r.env.message).to.equal('Unpledging of pledged tokens was successful, Total Unpledge Amount: 1.5 RBT')
    r = await call(app, 'GET', '/api/release-all-locked-tokens')
    expect(r.status).to.equal(200)
    keys(r.env)
    expect(r.env.message).to.equal('All Locked Tokens Releases Successfully Or NO Locked Tokens to release')
    expect(r.env.result).to.deep.equal({ released: [], kept: [] })
  })

  it('GET /api/validate-token-chain: valid, and an invalid chain as status false on 200', async () => {
    let r = await call(app, 'GET', `/api/validate-token-chain?did=${DID}&token=${TOKEN}&blockcount=0&SCChainValidation=false`)
    expect(r.status).to.equal(200)
    keys(r.env)
    expect(r.env).to.deep.include({ status: true, message: 'token chain validated successfully' })
    r = await call(app, 'GET', `/api/validate-token-chain?did=${DID}&token=Qm${'c'.repeat(44)}`)
    expect(r.status).to.equal(200)
    expect(r.env.status).to.equal(false)
    expect(r.env.message).to.match(/block hash does not match/)
    expect((await call(app, 'GET', `/api/validate-token-chain?did=${DID}&blockcount=x`)).env.message).to.match(/Failed to convert blockCount/)
    // blockcount reaches the service: the newest N blocks; absent is 0, the whole chain
    await call(app, 'GET', `/api/validate-token-chain?did=${DID}&token=${TOKEN}&blockcount=3`)
    await call(app, 'GET', `/api/validate-token-chain?did=${DID}&token=${TOKEN}`)
    expect(calls.filter((c) => (c as { validate?: unknown }).validate !== undefined).slice(-2)).to.deep.equal([{ validate: TOKEN, blockCount: 3 }, { validate: TOKEN, blockCount: 0 }])
  })
})

describe('api: the reference /api operator routes on a node without the operator features', () => {
  const app = createApp(services(false).s, { version: 't' })
  it('answer status false on 200 with the sibling key empty', async () => {
    const r = await call(app, 'GET', '/api/get-by-node')
    expect(r).to.deep.equal({ status: 200, env: { status: false, message: 'operator features are not served by this node', result: null, TxnCount: null } })
    expect((await call(app, 'POST', '/api/run-unpledge')).env.status).to.equal(false)
  })
})
