import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import type { SyncApi } from '../../src/node/sync/sync-api.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'

const ALICE = 'bafybmi' + 'a'.repeat(52)
const TOKEN = 'Qm' + 'a'.repeat(44)

describe('api: sync routes', () => {
  const calls: unknown[] = []
  const sync: SyncApi = {
    recover: async (input) => { calls.push(input); return { status: true, message: 'Password needed', result: { id: 'x', mode: 4, hash: null, only_priv_key: true } } as never },
    transactionChains: async (input) => { calls.push(input); return { did: input.did, chains: [], count: 0, next_cursor: '' } }
  }
  const base = { ...unusedIdentity(), ...unusedTokens(), ...unusedConsensus(), node: {} as never, bootstrap: {} as never }
  const app = createApp({ ...base, sync } as unknown as ApiServices, { version: 't' })
  const post = async (a: ReturnType<typeof createApp>, path: string, body: unknown): Promise<{ status: number, env: { status: boolean, message: string, result: unknown } }> => {
    const res = await a.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, env: await res.json() as never }
  }

  it('POST /svc/v1/sync starts the two-step flow for a DID and refuses bad input', async () => {
    const ok = await post(app, '/svc/v1/sync', { did: ALICE })
    expect(ok.status).to.equal(200)
    expect(ok.env.message).to.equal('Password needed')
    expect(calls.pop()).to.deep.equal({ did: ALICE })
    const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
    for (const fullnode of [PEER, `/ip4/127.0.0.1/tcp/4010/p2p/${PEER}`, '']) {
      expect((await post(app, '/svc/v1/sync', { did: ALICE, fullnode })).status, fullnode).to.equal(200)
      expect(calls.pop()).to.deep.equal({ did: ALICE, fullnode })
    }
    // a malformed fullnode is bad input (400), refused before anything reaches the network
    for (const fullnode of ['not-a-peer', '12D3KooWshort', '/ip4/127.0.0.1/tcp/4010', `/ip4/127.0.0.1/tcp/4010/p2p/${PEER}x`, `${PEER}\n`, 'x'.repeat(401)]) {
      const bad = await post(app, '/svc/v1/sync', { did: ALICE, fullnode })
      expect(bad.status, fullnode).to.equal(400)
      expect(bad.env).to.deep.include({ status: false })
      expect(bad.env.message, fullnode).to.match(/fullnode/)
      const chains = await post(app, '/svc/v1/sync-transaction-chain', { did: ALICE, token_ids: [TOKEN], fullnode })
      expect(chains.status, fullnode).to.equal(400)
    }
    for (const body of [{}, { did: 'nope' }, { did: ALICE, fullnode: 5 }]) {
      const bad = await post(app, '/svc/v1/sync', body)
      expect(bad.status, JSON.stringify(body)).to.equal(400)
      expect(bad.env.status).to.equal(false)
    }
    expect(calls).to.have.length(0)
  })

  it('POST /svc/v1/sync-transaction-chain validates its body and accepts Go-style key case', async () => {
    const ok = await post(app, '/svc/v1/sync-transaction-chain', { DID: ALICE, Token_IDs: [TOKEN], exclude_transaction_ids: ['t1'] })
    expect(ok.status, ok.env.message).to.equal(200)
    expect(calls.pop()).to.deep.include({ did: ALICE, token_ids: [TOKEN], exclude_transaction_ids: ['t1'] })
    for (const body of [{ did: ALICE }, { did: ALICE, token_ids: [] }, { did: ALICE, token_ids: [TOKEN], limit: 0 }, { did: ALICE, token_ids: 'x' }]) {
      const bad = await post(app, '/svc/v1/sync-transaction-chain', body)
      expect(bad.status, JSON.stringify(body)).to.equal(400)
    }
  })

  it('answers 404 when the node serves no sync', async () => {
    const none = createApp(base as unknown as ApiServices, { version: 't' })
    const res = await post(none, '/svc/v1/sync', { did: ALICE })
    expect(res.status).to.equal(404)
    expect(res.env.status).to.equal(false)
  })
})
