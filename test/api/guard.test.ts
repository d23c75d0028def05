import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import { createLegacy26App } from '../../src/api/server/legacy26/app.js'
import type { Legacy26Api } from '../../src/api/contract/legacy26.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { unusedConsensus } from './stub-consensus.js'

const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
const DID = 'bafybmi' + 'b'.repeat(52)

function services (calls: string[]): ApiServices {
  return {
    node: {
      status: () => ({ version: 't', core_started: true, peer_id: PEER, listen: [], connected_peers: 0, peers: [], mdns: false, test_net: false, api: '', grpc: 'none' }),
      startCore: async () => { calls.push('start'); return 'Core started successfully' },
      requestShutdown: () => { calls.push('shutdown') },
      peerId: () => PEER,
      ping: async () => ({ rttMs: 1, message: 'Ping Received' }),
      addPeer: async () => { calls.push('addPeer') }
    },
    ...unusedIdentity(),
    ...unusedConsensus(),
    ...unusedTokens(),
    bootstrap: { list: async () => [], add: async (p) => p, remove: async () => [], removeAll: async () => [] }
  }
}

interface Env { status: boolean, message: string, result: unknown }

describe('api: the browser guard (hosts, origins, content types, token, body limits)', () => {
  const calls: string[] = []
  const app = createApp(services(calls), { version: 't', maxJsonBytes: 1024 })
  const req = async (path: string, init: RequestInit & { host?: string } = {}): Promise<{ code: number, env: Env, headers: Headers }> => {
    const headers = new Headers(init.headers)
    if (init.host !== undefined) headers.set('host', init.host)
    const res = await app.request(`http://${init.host ?? 'localhost:20000'}${path}`, { ...init, headers })
    return { code: res.status, env: await res.json().catch(() => ({})) as Env, headers: res.headers }
  }
  beforeEach(() => { calls.length = 0 })

  it('serves loopback names only; any other Host (DNS rebinding) gets 403 and nothing runs', async () => {
    for (const host of ['localhost:20000', '127.0.0.1:20000', '[::1]:20000', 'LOCALHOST']) expect((await req('/svc/v1/node/peer_id', { host })).code, host).to.equal(200)
    for (const host of ['evil.example:20000', 'evil.example', '127.0.0.1.nip.io:20000']) {
      const r = await req('/svc/v1/node/shutdown', { host, method: 'POST' })
      expect(r.code, host).to.equal(403)
      expect(r.env.status).to.equal(false)
      expect(r.env.message).to.match(/allowHosts/)
    }
    expect(calls).to.deep.equal([])
    const allowed = createApp(services(calls), { version: 't', guard: { allowHosts: ['node.lan'] } })
    expect((await allowed.request('http://node.lan:20000/svc/v1/node/peer_id')).status).to.equal(200)
  })

  it('a page of another origin cannot call, not even the state-changing GETs an <img> would fetch', async () => {
    const post = await req('/svc/v1/node/shutdown', { method: 'POST', headers: { origin: 'http://evil.example', 'content-type': 'text/plain' }, body: '{}' })
    expect(post.code).to.equal(403)
    for (const path of ['/svc/v1/node/start', '/svc/v1/quorums/remove_all']) {
      const r = await req(path, { headers: { 'sec-fetch-site': 'cross-site', 'sec-fetch-mode': 'no-cors' } })
      expect(r.code, path).to.equal(403)
      expect((await req(path, { headers: { 'sec-fetch-site': 'same-site' } })).code, path).to.equal(403)
    }
    expect(calls).to.deep.equal([])
    // no CORS headers at all without configured origins
    expect((await req('/svc/v1/node/peer_id')).headers.get('access-control-allow-origin')).to.equal(null)
    // the node's own pages and tools without a browser still work
    expect((await req('/svc/v1/node/peer_id', { headers: { origin: 'http://localhost:20000', 'sec-fetch-site': 'same-origin' } })).code).to.equal(200)
    expect((await req('/svc/v1/node/peer_id', { headers: { 'sec-fetch-site': 'none' } })).code).to.equal(200)
  })

  it('an allowed origin gets CORS answers, preflight included', async () => {
    const cors = createApp(services(calls), { version: 't', guard: { corsOrigins: ['http://localhost:3000'] } })
    const pre = await cors.request('http://localhost:20000/svc/v1/node/add_peers', { method: 'OPTIONS', headers: { origin: 'http://localhost:3000', 'access-control-request-method': 'POST' } })
    expect(pre.status).to.equal(204)
    expect(pre.headers.get('access-control-allow-origin')).to.equal('http://localhost:3000')
    const res = await cors.request('http://localhost:20000/svc/v1/node/peer_id', { headers: { origin: 'http://localhost:3000', 'sec-fetch-site': 'same-site' } })
    expect(res.status).to.equal(200)
    expect(res.headers.get('access-control-allow-origin')).to.equal('http://localhost:3000')
    expect((await cors.request('http://localhost:20000/svc/v1/node/peer_id', { headers: { origin: 'http://localhost:3001' } })).status).to.equal(403)
  })

  it('JSON routes read only application/json bodies (415 otherwise); a POST without a body needs no type', async () => {
    const body = JSON.stringify({ DID, PeerID: PEER, DIDType: 4 })
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']) {
      const headers: Record<string, string> = type === '' ? {} : { 'content-type': type }
      const r = await req('/svc/v1/node/add_peers', { method: 'POST', headers, body: type === '' ? new Blob([body]) : body })
      expect(r.code, type).to.equal(415)
      expect(r.env.message).to.match(/application\/json/)
    }
    expect(calls).to.deep.equal([])
    expect((await req('/svc/v1/node/add_peers', { method: 'POST', headers: { 'content-type': 'application/json; charset=utf-8' }, body })).code).to.equal(200)
    expect((await req('/svc/v1/node/shutdown', { method: 'POST' })).code).to.equal(200)
    expect(calls).to.deep.equal(['addPeer', 'shutdown'])
  })

  it('bodies are limited while streaming: a declared or streamed body past the limit is refused without being read whole', async () => {
    const declared = await req('/svc/v1/node/add_peers', { method: 'POST', headers: { 'content-type': 'application/json', 'content-length': String(10 * 1024 * 1024) }, body: '{}' })
    expect(declared.code).to.equal(413)
    let pulled = 0
    const endless = new ReadableStream<Uint8Array>({
      pull (ctrl) { pulled++; ctrl.enqueue(new Uint8Array(256).fill(32)) }
    })
    const streamed = await app.request('http://localhost:20000/svc/v1/node/add_peers', { method: 'POST', headers: { 'content-type': 'application/json' }, body: endless, duplex: 'half' } as RequestInit)
    expect(streamed.status).to.equal(413)
    expect(pulled, 'chunks read before the cut').to.be.at.most(8)
  })

  it('with a token (run -apiAuth) every route needs it: 401 without or with a wrong one', async () => {
    const authed = createApp(services(calls), { version: 't', guard: { token: 'a'.repeat(64) } })
    const get = async (auth?: string): Promise<number> => (await authed.request('http://localhost/svc/v1/node/peer_id', { headers: auth !== undefined ? { authorization: auth } : {} })).status
    expect(await get()).to.equal(401)
    expect(await get('Bearer ' + 'b'.repeat(64))).to.equal(401)
    expect(await get('Bearer short')).to.equal(401)
    expect(await get('Bearer ' + 'a'.repeat(64))).to.equal(200)
    const env = await (await authed.request('http://localhost/svc/v1/node/peer_id')).json() as Env
    expect(env).to.include({ status: false })
  })

  it('the 2.6 port keeps the same rules', async () => {
    const api = { verifyPoW: async () => ({ ok: true, message: 'ok', data: null }) } as unknown as Legacy26Api
    const legacy = createLegacy26App(api, { maxJsonBytes: 1024 })
    const post = async (headers: Record<string, string>, body: string, host = 'localhost:1898'): Promise<number> =>
      (await legacy.request(`http://${host}/verifyPoW`, { method: 'POST', headers: { host, ...headers }, body })).status
    expect(await post({ 'content-type': 'application/json' }, '{}', 'evil.example:1898')).to.equal(403)
    expect(await post({ 'content-type': 'text/plain' }, '{}')).to.equal(415)
    expect(await post({ 'content-type': 'application/json', origin: 'http://evil.example' }, '{}')).to.equal(403)
    expect(await post({ 'content-type': 'application/json' }, ' '.repeat(2048))).to.equal(413)
  })
})
