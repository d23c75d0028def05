import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { PEER, ALICE, CHALLENGE, type Env, call } from './legacy-harness.js'

const SC = 'Qm' + 's'.repeat(44)

function services (): { s: ApiServices, calls: unknown[] } {
  const calls: unknown[] = []
  const s = { ...unusedIdentity(), ...unusedConsensus(), ...unusedTokens(), node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  s.contracts = {
    generate: async (did: string, binary?: Uint8Array, raw?: Uint8Array) => {
      calls.push({ generate: did, binary: Buffer.from(binary ?? []).toString(), raw: Buffer.from(raw ?? []).toString() })
      return SC
    },
    list: async () => [],
    chain: async (id: string) => id === SC
      ? [{ transactionId: 't0', initiator: ALICE, epoch: 10, data: 'init', block_id: 'b0', transaction_type: 'deploy', state: 's0', output: '', stateHash: 'h0' },
          { transactionId: 't1', initiator: ALICE, epoch: 20, data: 'inc', block_id: 'b1', transaction_type: 'execute', state: 's1', output: 'o', stateHash: 'h1' }]
      : [],
    transact: async (body: unknown) => { calls.push({ transact: body }); return CHALLENGE },
    subscribe: async (id: string) => { calls.push({ subscribe: id }) },
    fetch: async () => ({ message: 'Smart contract fetched successfully', path: '/x' }),
    registerCallback: async (url: string, id: string) => { calls.push({ callback: url, id }) }
  } as never
  Object.assign(s.tokens, { chain: async () => ({ blocks: [{ envelope: 'AAEC' }], next_block_id: '' }) })
  return { s, calls }
}

describe('api: the reference /api smart-contract routes', () => {
  const { s, calls } = services()
  const app = createApp(s, { version: 't' })

  it('POST /api/generate-smart-contract (multipart did, binaryCodePath, rawCodePath, schemaFilePath): the id as result', async () => {
    const form = new FormData()
    form.set('did', ALICE)
    form.set('binaryCodePath', new Blob(['wasm']), 'c.wasm')
    form.set('rawCodePath', new Blob(['src']), 'lib.rs')
    form.set('schemaFilePath', new Blob(['{}']), 'schema.json')
    expect(await call(app, 'POST', '/api/generate-smart-contract', form)).to.deep.equal({ status: 200, env: { status: true, message: 'Smart contract generated successfully', result: SC } })
    expect(calls).to.deep.include({ generate: ALICE, binary: 'wasm', raw: 'src' })
  })

  it('POST /api/deploy-smart-contract and /api/execute-smart-contract: the challenge, over the contract transaction', async () => {
    expect(await call(app, 'POST', '/api/deploy-smart-contract', { smartContractToken: SC, deployerAddr: `${PEER}.${ALICE}`, rbtAmount: 1, quorumType: 2, comment: 'c' })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ transact: { initiator: ALICE, smartContract: [{ smartContractId: SC, value: 1 }], memo: 'c' } })
    expect(await call(app, 'POST', '/api/execute-smart-contract', { smartContractToken: SC, executorAddr: ALICE, quorumType: 2, smartContractData: 'inc' })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ transact: { initiator: ALICE, smartContract: [{ smartContractId: SC, value: 0, data: 'inc' }] } })
    const low = await call(app, 'POST', '/api/deploy-smart-contract', { smartContractToken: SC, deployerAddr: ALICE, rbtAmount: 0 })
    expect(low.status).to.equal(400)
    expect(low.env.message).to.match(/Minimum RBT amount should be 0.001/)
  })

  it('POST /api/subscribe-smart-contract, GET /api/fetch-smart-contract, POST /api/register-callback-url', async () => {
    expect(await call(app, 'POST', '/api/subscribe-smart-contract', { smartContractToken: SC })).to.deep.equal({ status: 200, env: { status: true, message: 'Smart contract subscribed successfully', result: null } })
    expect(await call(app, 'GET', `/api/fetch-smart-contract?smartContractToken=${SC}`)).to.deep.equal({ status: 200, env: { status: true, message: 'Smart contract fetched successfully', result: null } })
    expect(await call(app, 'POST', '/api/register-callback-url', { smartcontracttoken: SC, callbackurl: 'http://127.0.0.1:9/cb' })).to.deep.equal({ status: 200, env: { status: true, message: 'Call back URL registered successfully', result: null } })
    expect(calls).to.deep.include({ callback: 'http://127.0.0.1:9/cb', id: SC })
  })

  it('POST /api/get-smart-contract-token-chain-data {Token, Latest}: SCTDataReply', async () => {
    let r = await call(app, 'POST', '/api/get-smart-contract-token-chain-data', { token: SC, latest: false })
    expect(r).to.deep.equal({ status: 200, env: { status: true, message: 'Fetched Smart contract data', result: null, SCTDataReply: [{ BlockNo: 0, BlockId: 'b0', SmartContractData: 'init', Epoch: 10 }, { BlockNo: 1, BlockId: 'b1', SmartContractData: 'inc', Epoch: 20 }] } })
    r = await call(app, 'POST', '/api/get-smart-contract-token-chain-data', { Token: SC, Latest: true })
    expect(r.env).to.deep.equal({ status: true, message: 'Fetched latest block smart contract data', result: null, SCTDataReply: [{ BlockNo: 1, BlockId: 'b1', SmartContractData: 'inc', Epoch: 20 }] })
    r = await call(app, 'POST', '/api/get-smart-contract-token-chain-data', { Token: 'Qm' + 'z'.repeat(44) })
    expect(r.env).to.deep.equal({ status: false, message: 'Failed to get smart contract token data, token does not exist', result: null, SCTDataReply: null })
  })

  it('POST /api/dump-smart-contract-token-chain {token, block_id}: blocks and next_block_id', async () => {
    expect(await call(app, 'POST', '/api/dump-smart-contract-token-chain', { token: SC, block_id: '' })).to.deep.equal({ status: 200, env: { status: true, message: 'Successfully got the smart contract token chain block', result: null, next_block_id: '', blocks: ['AAEC'] } })
  })
})
