import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { PEER, ALICE, BOB, CHALLENGE, type Env, call } from './legacy-harness.js'

const CAROL = 'bafybmi' + 'c'.repeat(52)
const FT = 'Qm' + 'f'.repeat(44)

function services (): { s: ApiServices, calls: unknown[] } {
  const calls: unknown[] = []
  const s = { ...unusedIdentity(), ...unusedConsensus(), ...unusedTokens(), node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  s.fts = { mint: async (req: unknown) => { calls.push({ mint: req }); return CHALLENGE }, list: async () => [] } as never
  Object.assign(s.tokens, {
    ftBalance: async (did: string) => did === ALICE
      ? [{ name: 'gold', creator: CAROL, count: 5, value: 0.5 }, { name: 'twin', creator: CAROL, count: 1, value: 0.1 }, { name: 'twin', creator: BOB, count: 1, value: 0.1 }]
      : [],
    chain: async (token: string) => {
      if (token !== FT) throw new RbtError(ErrorCode.NOT_FOUND, 'Failed to get token chain block, token does not exist')
      return { blocks: [{ number: 0, block_id: '0-x', type_name: 'mint', owner: CAROL, envelope: 'AAEC' }], next_block_id: '' }
    }
  })
  Object.assign(s.consensus, { transfer: async (body: unknown) => { calls.push({ transfer: body }); return CHALLENGE } })
  return { s, calls }
}

describe('api: the reference /api FT routes', () => {
  const { s, calls } = services()
  const app = createApp(s, { version: 't' })

  it('POST /api/create-ft {did, ft_name, ft_count, token_count}: the challenge', async () => {
    expect(await call(app, 'POST', '/api/create-ft', { did: ALICE, ft_name: 'gold', ft_count: 10, token_count: 1 })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ mint: { did: ALICE, ftName: 'gold', ftCount: 10, tokenCount: 1, startIndex: 0 } })
    expect((await call(app, 'POST', '/api/create-ft', { did: ALICE, ft_name: 'gold', ft_count: 0, token_count: 1 })).status).to.equal(400)
  })

  it('POST /api/initiate-ft-transfer: the creator implied by the balance or named; ambiguity and sender = receiver are status false', async () => {
    let r = await call(app, 'POST', '/api/initiate-ft-transfer', { sender: `${PEER}.${ALICE}`, receiver: BOB, ft_name: 'gold', ft_count: 2, comment: 'c', quorum_type: 2 })
    expect(r).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ transfer: { initiator: ALICE, owner: BOB, rbt: 0, memo: 'c', hasFt: true, referenceMessage: true, ft: [{ ftName: 'gold', numberOfFts: 2, creatorDID: CAROL }] } })
    r = await call(app, 'POST', '/api/initiate-ft-transfer', { sender: ALICE, receiver: BOB, ft_name: 'twin', ft_count: 1 })
    expect(r.status).to.equal(200)
    expect(r.env).to.deep.equal({ status: false, message: 'There are same FTs with different creators, use -creatorDID flag to specify creatorDID', result: null })
    r = await call(app, 'POST', '/api/initiate-ft-transfer', { sender: ALICE, receiver: BOB, ft_name: 'twin', ft_count: 1, creatorDID: BOB })
    expect(r.env).to.deep.equal(CHALLENGE)
    r = await call(app, 'POST', '/api/initiate-ft-transfer', { sender: ALICE, receiver: ALICE, ft_name: 'gold', ft_count: 1 })
    expect(r.env).to.deep.equal({ status: false, message: 'Sender and receiver cannot be same', result: null })
  })

  it('GET /api/get-ft-info-by-did?did=: ft_info [{ft_name, ft_count, creator_did}]', async () => {
    let r = await call(app, 'GET', `/api/get-ft-info-by-did?did=${ALICE}`)
    expect(r.status).to.equal(200)
    expect(Object.keys(r.env).sort()).to.deep.equal(['ft_info', 'message', 'result', 'status'])
    expect(r.env).to.deep.include({ status: true, message: 'Got FT info successfully', result: null })
    expect((r.env.ft_info as unknown[])[0]).to.deep.equal({ ft_name: 'gold', ft_count: 5, creator_did: CAROL })
    r = await call(app, 'GET', `/api/get-ft-info-by-did?did=${BOB}`)
    expect(r.env).to.deep.equal({ status: true, message: 'No FTs found', result: null, ft_info: [] })
  })

  it('GET /api/get-ft-token-chain?tokenID=: TokenChainData with readable fields; dump-ft-token-chain: base64 blocks', async () => {
    let r = await call(app, 'GET', `/api/get-ft-token-chain?tokenID=${FT}`)
    expect(r.status).to.equal(200)
    expect(r.env).to.deep.equal({ status: true, message: 'FT tokenchain data fetched successfully', result: null, TokenChainData: [{ number: 0, block_id: '0-x', type_name: 'mint', owner: CAROL }] })
    r = await call(app, 'GET', `/api/get-ft-token-chain?tokenID=Qm${'z'.repeat(44)}`)
    expect(r.env).to.deep.equal({ status: false, message: 'Failed to get token chain block, token does not exist', result: null, TokenChainData: null })
    r = await call(app, 'POST', '/api/dump-ft-token-chain', { token: FT, block_id: '' })
    expect(r.env).to.deep.equal({ status: true, message: 'Successfully got the token chain block', result: null, next_block_id: '', blocks: ['AAEC'] })
  })
})
