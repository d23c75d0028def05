import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import { routes } from '../../src/api/contract/routes.js'
import type { ApiServices, DidCreateInput } from '../../src/api/server/services.js'
import { NOT_DONE } from '../../src/api/server/routes/legacy/other.routes.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'

const DID = 'bafybmi' + 'b'.repeat(52)
const KEY = '02' + 'ab'.repeat(32)

describe('api: the reference /api routes of its §9', () => {
  const created: DidCreateInput[] = []
  const s = { ...unusedIdentity(), ...unusedConsensus(), ...unusedTokens(), node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  s.identity.create = async (input) => {
    if (input.public_key === '03' + 'cd'.repeat(32)) throw new RbtError(ErrorCode.INVALID_INPUT, 'public_key is not a point of secp256k1')
    created.push(input)
    return { did: DID, peer_id: null }
  }
  const setups: unknown[] = []
  s.services = { setup: async (input: unknown) => { setups.push(input); return {} as never }, get: () => ({}) as never }
  const app = createApp(s, { version: 't' })

  it('POST /api/setup-service: the explorer service over services/setup (db_user_name is the user)', async () => {
    const body = { service_name: 'explorer_service', db_type: 'SQLite', db_name: 'x.db', db_user_name: 'u', db_password: 'p' }
    const res = await app.request('/api/setup-service', { method: 'POST', body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    expect(res.status).to.equal(200)
    expect(await res.json()).to.deep.equal({ status: true, message: 'Service enabled successfully', result: null })
    expect(setups).to.deep.equal([{ service_name: 'explorer_service', db_type: 'SQLite', db_name: 'x.db', db_username: 'u', db_password: 'p' }])
  })

  it('POST /api/request-did-for-pubkey {public_key}: {did} without the envelope; a refused key is the envelope, status false', async () => {
    let res = await app.request('/api/request-did-for-pubkey', { method: 'POST', body: JSON.stringify({ public_key: KEY }), headers: { 'content-type': 'application/json' } })
    expect(res.status).to.equal(200)
    expect(await res.json()).to.deep.equal({ did: DID })
    expect(created).to.deep.equal([{ type: 4, public_key: KEY }])
    res = await app.request('/api/request-did-for-pubkey', { method: 'POST', body: JSON.stringify({ public_key: '03' + 'cd'.repeat(32) }), headers: { 'content-type': 'application/json' } })
    expect(res.status).to.equal(200)
    expect(await res.json()).to.deep.equal({ status: false, message: 'public_key is not a point of secp256k1', result: null })
    res = await app.request('/api/request-did-for-pubkey', { method: 'POST', body: JSON.stringify({ public_key: 'zz' }), headers: { 'content-type': 'application/json' } })
    expect(res.status).to.equal(400)
  })

  it('every route the node does not do answers its method with status false on 200 and the alternative', async () => {
    for (const [id, message] of Object.entries(NOT_DONE)) {
      const r = routes[id as keyof typeof routes]
      const res = await app.request(r.path, { method: r.method, ...(r.method === 'POST' ? { body: '{}', headers: { 'content-type': 'application/json' } } : {}) })
      expect(res.status, r.path).to.equal(200)
      expect(await res.json(), r.path).to.deep.equal({ status: false, message, result: null })
      expect(message, r.path).to.match(/\/api\/|\/svc\/v1\/|-apiAuth|docs\/api\.md/)
    }
    expect(Object.keys(NOT_DONE)).to.have.length(21)
  })
})
