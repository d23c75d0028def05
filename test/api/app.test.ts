import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import { routes } from '../../src/api/contract/routes.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { unusedConsensus } from './stub-consensus.js'
import { buildOverview } from '../../src/node/http/overview.js'

const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
const DID = 'bafybmi' + 'b'.repeat(52)

function stubServices (): ApiServices & { calls: unknown[] } {
  const calls: unknown[] = []
  let boot: string[] = []
  return {
    calls,
    node: {
      status: () => ({ version: 't', core_started: true, peer_id: PEER, listen: [], connected_peers: 0, peers: [], mdns: false, test_net: false, api: '', grpc: 'none' }),
      startCore: async () => 'Core started successfully',
      requestShutdown: () => { calls.push('shutdown') },
      overview: async () => await buildOverview({
        version: 't',
        startedAt: Date.parse('2026-01-01T00:00:00Z'),
        now: () => Date.parse('2026-01-01T01:00:05Z'),
        peerId: PEER,
        peers: [PEER],
        dids: async () => [{ did: DID, type: 4 }],
        rbt: async () => ({ balance: 10.1, locked: 0, pledged: 0.2, pinned: 0 }),
        isQuorum: () => true,
        quorumList: async () => [DID, DID],
        operations: () => [{ id: 'op', did: DID, operation: 'transfer', waiting: true, expiresAt: Date.parse('2026-01-01T01:03:00Z') }],
        openTransfers: async () => [{ txid: 'ab'.repeat(32), state: 'COMMITTING', sender: DID, receiver: DID, amountMilli: 1500, memo: '', epoch: 0, tokens: [], contract: '', asked: [], yes: [], signers: [], notified: [], createdAt: 0, updatedAt: 1000 }],
        recentLog: () => [{ time: 't', level: 'ERROR', component: 'p2p', msg: 'p2p: dial failed' }]
      }),
      peerId: () => PEER,
      ping: async (p) => {
        if (p !== PEER) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `peer ${p} unreachable`)
        return { rttMs: 1.5, message: 'Ping Received' }
      },
      addPeer: async (did, peerId, didType) => { calls.push({ did, peerId, didType }) }
    },
    ...unusedIdentity(),
    ...unusedConsensus(),
    ...unusedTokens(),
    bootstrap: {
      list: async () => boot,
      add: async (p) => { boot = [...new Set([...boot, ...p])]; return boot },
      remove: async (p) => { boot = boot.filter((x) => !p.includes(x)); return boot },
      removeAll: async () => { boot = []; return boot }
    }
  }
}

async function json (res: Response): Promise<{ status: boolean, message: string, result: any }> {
  expect(res.headers.get('content-type')).to.match(/application\/json/)
  return await res.json() as any
}

describe('api: app routes (app.request)', () => {
  const s = stubServices()
  const app = createApp(s, { version: 'test' })
  const post = async (path: string, body: string): Promise<Response> => await app.request(path, { method: 'POST', body, headers: { 'content-type': 'application/json' } })

  it('answers the peer id in result and in message', async () => {
    const res = await app.request('/svc/v1/node/peer_id')
    expect(res.status).to.equal(200)
    expect(await json(res)).to.deep.equal({ status: true, message: PEER, result: PEER })
  })

  it('matches JSON keys case-insensitively', async () => {
    for (const body of [{ DID, PeerID: PEER }, { did: DID, peerid: PEER }, { Did: DID, peerID: PEER, didtype: 4 }]) {
      const res = await post('/svc/v1/node/add_peers', JSON.stringify(body))
      expect(res.status).to.equal(200)
      expect((await json(res)).message).to.equal('Peers added successfully')
    }
    expect(s.calls.at(-1)).to.deep.equal({ did: DID, peerId: PEER, didType: 4 })
  })

  it('malformed JSON → 400 envelope', async () => {
    const res = await post('/svc/v1/bootstrap/add', '{"peers":')
    expect(res.status).to.equal(400)
    expect(await json(res)).to.deep.include({ status: false, message: 'Invalid input: request body is not valid JSON' })
  })

  it('wrong types and missing fields → 400 with the field named', async () => {
    let res = await post('/svc/v1/bootstrap/add', JSON.stringify({ peers: 'x' }))
    expect(res.status).to.equal(400)
    expect((await json(res)).message).to.match(/peers/)
    res = await post('/svc/v1/bootstrap/add', '{}')
    expect(res.status).to.equal(400)
    expect((await json(res)).message).to.match(/peers is required/)
    res = await post('/svc/v1/node/add_peers', JSON.stringify({ DID: 'nope', PeerID: PEER }))
    expect(res.status).to.equal(400)
    expect((await json(res)).message).to.match(/Invalid DID/)
  })

  it('bad multiaddrs → 400', async () => {
    const res = await post('/svc/v1/bootstrap/add', JSON.stringify({ peers: ['ip4/127.0.0.1/tcp/1'] }))
    expect(res.status).to.equal(400)
    expect((await json(res)).message).to.match(/starts with \//)
  })

  it('missing or bad peerID on ping → 400; unreachable → 502', async () => {
    let res = await app.request('/svc/v1/node/ping')
    expect(res.status).to.equal(400)
    expect((await json(res)).message).to.match(/peerID is required/)
    res = await app.request('/svc/v1/node/ping?peerID=abc')
    expect(res.status).to.equal(400)
    expect((await json(res)).message).to.match(/Invalid PeerID/)
    res = await app.request(`/svc/v1/node/ping?peerid=${PEER}`)
    expect(res.status).to.equal(200)
    expect(await json(res)).to.deep.equal({ status: true, message: 'Ping Received', result: { peerID: PEER, rtt_ms: 1.5 } })
    res = await app.request('/svc/v1/node/ping?peerID=12D3KooWSQ94HRDzFf6W2rp7P8gzP6efZQHTaSU8uaQjskVBHiWP')
    expect(res.status).to.equal(502)
    expect(await json(res)).to.include({ status: false })
  })

  it('unknown routes → 404 envelope; wrong methods → 405 envelope', async () => {
    let res = await app.request('/svc/v1/nothing')
    expect(res.status).to.equal(404)
    expect(await json(res)).to.include({ status: false })
    res = await app.request('/')
    expect(res.status).to.equal(404)
    res = await app.request('/svc/v1/bootstrap/add')
    expect(res.status).to.equal(405)
    expect(res.headers.get('allow')).to.equal('POST')
    expect((await json(res)).message).to.match(/not allowed/)
    res = await app.request('/svc/v1/node/peer_id', { method: 'PUT' })
    expect(res.status).to.equal(405)
  })

  it('bootstrap add/list/remove/remove_all round trip', async () => {
    const a = '/ip4/127.0.0.1/tcp/4003/p2p/' + PEER
    await post('/svc/v1/bootstrap/add', JSON.stringify({ peers: [a] }))
    expect((await json(await app.request('/svc/v1/bootstrap'))).result).to.deep.equal({ peers: [a] })
    await post('/svc/v1/bootstrap/remove', JSON.stringify({ peers: [a] }))
    expect((await json(await app.request('/svc/v1/bootstrap'))).result).to.deep.equal({ peers: [] })
    const res = await post('/svc/v1/bootstrap/remove_all', '')
    expect(res.status).to.equal(200)
  })

  it('shutdown answers before the node stops', async () => {
    const res = await post('/svc/v1/node/shutdown', '')
    expect(await json(res)).to.deep.equal({ status: true, message: 'Shutting down...', result: null })
    expect(s.calls).to.include('shutdown')
  })

  it('serves an OpenAPI document listing every route of the contract', async () => {
    const res = await app.request('/svc/v1/openapi.json')
    expect(res.status).to.equal(200)
    const doc = await res.json() as { openapi: string, paths: Record<string, Record<string, unknown>> }
    expect(doc.openapi).to.match(/^3\./)
    for (const [id, r] of Object.entries(routes)) {
      const p = r.path.replace(/:([A-Za-z_]+)/g, '{$1}')
      expect(doc.paths[p], `route ${id} missing from OpenAPI`).to.have.property(r.method.toLowerCase())
    }
    expect(JSON.stringify(doc.paths['/svc/v1/bootstrap/add'])).to.match(/peers/)
  })

  it('GET /svc/v1/node/overview gathers DIDs with balances, the quorum role, pending operations, open transfers and the last errors', async () => {
    const res = await app.request('/svc/v1/node/overview')
    expect(res.status).to.equal(200)
    const { result } = await json(res)
    expect(result).to.deep.include({ version: 't', core_started: true, peer_id: PEER, started_at: '2026-01-01T00:00:00.000Z', uptime_s: 3605, connected_peers: 1 })
    expect(result.dids).to.deep.equal([{ did: DID, did_type: 4, quorum: true, rbt: { balance: 10.1, locked: 0, pledged: 0.2, pinned: 0 } }])
    expect(result.quorum).to.deep.equal({ role: true, dids: [DID], pledged: 0.2, list_size: 2 })
    expect(result.pending_operations).to.deep.equal([{ id: 'op', did: DID, operation: 'transfer', waiting: true, expires_at: '2026-01-01T01:03:00.000Z' }])
    expect(result.transfers_in_flight).to.deep.equal([{ transactionID: 'ab'.repeat(32), status: 'delivery_pending', sender: DID, receiver: DID, amount: 1.5, started_at: '1970-01-01T00:00:00.000Z', updated_at: '1970-01-01T00:00:01.000Z' }])
    expect(result.last_errors).to.deep.equal([{ time: 't', level: 'ERROR', component: 'p2p', msg: 'p2p: dial failed' }])
  })

  it('every route answers with an envelope, never a crash', async () => {
    for (const r of Object.values(routes)) {
      if (r.path.endsWith('/shutdown') || r.path.endsWith('openapi.json')) continue
      const res = await app.request(r.path.replace(/:([A-Za-z_]+)/g, 'x'), { method: r.method, body: r.method === 'POST' ? '{}' : undefined })
      expect(res.status, r.path).to.be.lessThan(500)
      const env = await json(res)
      // the reference's /api envelopes may carry sibling keys (account_info, token_detials, …)
      expect(env).to.include.all.keys(['status', 'message', 'result'])
    }
  })
})
