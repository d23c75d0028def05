import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices, DidCreateInput, DidSetupInput } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedTokens } from './stub-tokens.js'
import { PEER, type Env, call } from './legacy-harness.js'

const DID = 'bafybmi' + 'b'.repeat(52)
const BROKEN = 'bafybmi' + 'c'.repeat(52)
const QUORUMS = ['d', 'e', 'f', 'g', 'h'].map((x) => 'bafybmi' + x.repeat(52))

function services (): { s: ApiServices, calls: unknown[], quorums: string[], boot: { peers: string[] } } {
  const calls: unknown[] = []
  const quorums: string[] = []
  const boot = { peers: [] as string[] }
  const s = {
    node: {
      status: () => ({ version: 't', core_started: true, peer_id: PEER, listen: [], connected_peers: 0, peers: [], mdns: false, test_net: false, api: '', grpc: 'none' }),
      startCore: async () => 'Setup Complete',
      requestShutdown: () => { calls.push('shutdown') },
      peerId: () => PEER,
      ping: async (p: string) => {
        if (p !== PEER) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `peer ${p} unreachable`)
        return { rttMs: 1, message: 'Ping Received' }
      },
      addPeer: async (did: string, peerId: string, didType?: number) => { calls.push({ did, peerId, didType }) }
    },
    identity: {
      list: async () => [DID, BROKEN],
      create: async (input: DidCreateInput) => { calls.push({ create: input }); return { did: DID, peer_id: PEER } },
      setup: async (input: DidSetupInput) => { calls.push({ setup: input.type }); return { did: DID, peer_id: PEER } },
      register: async (did: string) => {
        if (did !== DID) throw new RbtError(ErrorCode.NOT_FOUND, 'DID is not local, cannot register')
        return { status: true, message: 'Password needed', result: { id: 'op1', mode: 4, hash: null, only_priv_key: false } }
      }
    },
    signing: { complete: async () => { throw new Error('unused') } },
    ...unusedConsensus(),
    ...unusedTokens(),
    bootstrap: {
      list: async () => boot.peers,
      add: async (p: string[]) => { boot.peers = [...new Set([...boot.peers, ...p])]; return boot.peers },
      remove: async (p: string[]) => { boot.peers = boot.peers.filter((x) => !p.includes(x)); return boot.peers },
      removeAll: async () => { boot.peers = []; return boot.peers }
    }
  } as unknown as ApiServices
  s.tokens.accountInfo = async (did: string) => {
    if (did === BROKEN) throw new RbtError(ErrorCode.STORAGE, 'unreadable')
    return { did, did_type: 4, rbt_amount: 2.5, pledged_rbt: 0, locked_rbt: 0, pinned_rbt: 0 }
  }
  Object.assign(s.consensus, {
    quorumsList: () => [...quorums],
    quorumsAdd: async (did: string) => {
      if (quorums.includes(did)) throw new RbtError(ErrorCode.CONFLICT, 'already listed')
      quorums.push(did)
    },
    quorumsRemoveAll: async () => { quorums.length = 0 },
    quorumsSetup: async (did: string, pwd: string, priv: string) => { calls.push({ quorumSetup: did, pwd, priv }) },
    quorumStatus: async (did: string) => did === QUORUMS[0]
  })
  return { s, calls, quorums, boot }
}

function envelope (env: Env, status: boolean, extra: string[] = []): void {
  expect(Object.keys(env).sort()).to.deep.equal(['message', 'result', 'status', ...extra].sort())
  expect(env.status).to.equal(status)
  expect(env.message).to.be.a('string')
}

describe('api: the reference /api identity and node routes', () => {
  const { s, calls } = services()
  const app = createApp(s, { version: 't' })

  it('GET /api/getalldid lists the DIDs in account_info (result null), zeros for an unreadable balance', async () => {
    const { status, env } = await call(app, 'GET', '/api/getalldid')
    expect(status).to.equal(200)
    envelope(env, true, ['account_info'])
    expect(env.message).to.equal('Got all DIDs')
    expect(env.result).to.equal(null)
    expect(env.account_info).to.deep.equal([
      { did: DID, did_type: 4, rbt_amount: 2.5, pledged_rbt: 0, locked_rbt: 0, pinned_rbt: 0 },
      { did: BROKEN, did_type: 0, rbt_amount: 0, pledged_rbt: 0, locked_rbt: 0, pinned_rbt: 0 }
    ])
    expect((await call(app, 'POST', '/api/getalldid')).status).to.equal(405)
  })

  it('while the core is starting, GET /api/getalldid answers from the store at once and a route that needs the network waits for the core', async () => {
    const { s: starting } = services()
    let up = false
    let release: () => void = () => {}
    const core = new Promise<void>((resolve) => { release = () => { up = true; resolve() } })
    starting.node.starting = () => !up
    starting.node.untilUp = async () => { await core }
    const slow = createApp(starting, { version: 't' })
    const early = await call(slow, 'GET', '/api/getalldid')
    expect(early.status).to.equal(200)
    expect(early.env.account_info).to.have.length(2)
    // the peer id needs the core: its answer comes once the core is up, not a 503
    let answered = false
    const peer = call(slow, 'GET', '/api/get-peer-id').then((r) => { answered = true; return r })
    await new Promise((resolve) => setTimeout(resolve, 50))
    expect(answered).to.equal(false)
    release()
    const r = await peer
    expect(r.status).to.equal(200)
    expect(r.env.message).to.equal(PEER)
  })

  it('a route that needs the network answers 503 "starting" when the core is not up in time', async () => {
    const { s: starting } = services()
    starting.node.starting = () => true
    starting.node.untilUp = async () => { throw new RbtError(ErrorCode.NOT_RUNNING, 'the node is starting: its core is not up yet; retry') }
    const slow = createApp(starting, { version: 't' })
    const r = await call(slow, 'GET', '/api/get-peer-id')
    expect(r.status).to.equal(503)
    expect(r.env.message).to.match(/starting/)
  })

  it('POST /api/createdid takes the multipart did_config and answers {did, peer_id}', async () => {
    const form = new FormData()
    form.set('did_config', JSON.stringify({ type: 4, priv_pwd: 'pw' }))
    const { status, env } = await call(app, 'POST', '/api/createdid', form)
    expect(status).to.equal(200)
    envelope(env, true)
    expect(env.message).to.equal('DID created successfully')
    expect(env.result).to.deep.equal({ did: DID, peer_id: PEER })
    expect(calls).to.deep.include({ create: { type: 4, password: 'pw', files: {} } })
  })

  it('POST /api/createdid with a did_config that does not parse: HTTP 200, status false', async () => {
    const form = new FormData()
    form.set('did_config', '{')
    const { status, env } = await call(app, 'POST', '/api/createdid', form)
    expect(status).to.equal(200)
    envelope(env, false)
    expect(env.message).to.equal('failed to parse did configuration')
  })

  it('POST /api/register-did answers the challenge; a DID not hosted here is status false on 200', async () => {
    let r = await call(app, 'POST', '/api/register-did', { did: DID })
    expect(r.status).to.equal(200)
    envelope(r.env, true)
    expect(r.env.message).to.equal('Password needed')
    expect(r.env.result).to.have.keys('id', 'mode', 'hash', 'only_priv_key')
    r = await call(app, 'POST', '/api/register-did', { DID: QUORUMS[0] })
    expect(r.status).to.equal(200)
    envelope(r.env, false)
    r = await call(app, 'POST', '/api/register-did', { did: 'nope' })
    expect(r.status).to.equal(400)
  })

  it('POST /api/setup-did answers the DID as result', async () => {
    const form = new FormData()
    form.set('did_config', JSON.stringify({ type: 4, priv_pwd: 'pw' }))
    const { status, env } = await call(app, 'POST', '/api/setup-did', form)
    expect(status).to.equal(200)
    envelope(env, true)
    expect(env.message).to.equal('DID added successfully')
    expect(env.result).to.equal(DID)
  })

  it('GET /api/get-peer-id carries the peer id in message', async () => {
    const { status, env } = await call(app, 'GET', '/api/get-peer-id')
    expect(status).to.equal(200)
    envelope(env, true)
    expect(env).to.deep.equal({ status: true, message: PEER, result: null })
  })

  it('GET /api/start, POST /api/shutdown, GET /api/node-status', async () => {
    expect(await call(app, 'GET', '/api/start')).to.deep.equal({ status: 200, env: { status: true, message: 'Setup Complete', result: null } })
    expect(await call(app, 'GET', '/api/node-status')).to.deep.equal({ status: 200, env: { status: true, message: 'Node is up and running', result: null } })
    expect(await call(app, 'POST', '/api/shutdown')).to.deep.equal({ status: 200, env: { status: true, message: 'Shutting down...', result: null } })
    expect(calls).to.include('shutdown')
    expect((await call(app, 'GET', '/api/shutdown')).status).to.equal(405)
  })

  it('GET /api/ping?peerID=: the remote message; an unreachable peer is status false on 200', async () => {
    expect(await call(app, 'GET', `/api/ping?peerID=${PEER}`)).to.deep.equal({ status: 200, env: { status: true, message: 'Ping Received', result: null } })
    const other = '12D3KooWRu7hAogMFH84j7AEri39EsPSAdUDsTUykUuvtCj3J4wD'
    const r = await call(app, 'GET', `/api/ping?peerID=${other}`)
    expect(r.status).to.equal(200)
    envelope(r.env, false)
    expect(r.env.message).to.match(/unreachable/)
    expect((await call(app, 'GET', '/api/ping?peerID=x')).status).to.equal(400)
  })

  it('POST /api/add-peer-details takes the Go names in any case', async () => {
    const r = await call(app, 'POST', '/api/add-peer-details', { did: DID, didtype: 4, peerid: PEER })
    expect(r).to.deep.equal({ status: 200, env: { status: true, message: 'Peers added successfully', result: null } })
    expect(calls).to.deep.include({ did: DID, peerId: PEER, didType: 4 })
    expect((await call(app, 'POST', '/api/add-peer-details', { DID, PeerID: PEER, DIDType: 7 })).status).to.equal(400)
  })
})

describe('api: the reference /api bootstrap and quorum routes', () => {
  const { s, calls, quorums, boot } = services()
  const app = createApp(s, { version: 't' })
  const ADDR = `/ip4/127.0.0.1/tcp/4002/p2p/${PEER}`

  it('bootstrap: add (entries ending with "/"), get-all, remove, remove-all', async () => {
    expect(await call(app, 'POST', '/api/add-bootstrap', { peers: [ADDR + '/'] })).to.deep.equal({ status: 200, env: { status: true, message: 'Bootstrap peers added successfully', result: null } })
    expect(boot.peers).to.deep.equal([ADDR])
    expect(await call(app, 'GET', '/api/get-all-bootstrap')).to.deep.equal({ status: 200, env: { status: true, message: 'Got all the bootstrap peers successfully', result: { peers: [ADDR] } } })
    expect(await call(app, 'POST', '/api/remove-bootstrap', { peers: [ADDR + '/'] })).to.deep.equal({ status: 200, env: { status: true, message: 'Bootstrap peers removed successfully', result: null } })
    expect(boot.peers).to.deep.equal([])
    await call(app, 'POST', '/api/add-bootstrap', { peers: [ADDR] })
    expect(await call(app, 'POST', '/api/remove-all-bootstrap')).to.deep.equal({ status: 200, env: { status: true, message: 'All bootstrap peers removed successfully', result: null } })
    expect(boot.peers).to.deep.equal([])
    const bad = await call(app, 'POST', '/api/add-bootstrap', { peers: ['ip4/1.2.3.4/'] })
    expect(bad.status).to.equal(200)
    envelope(bad.env, false)
    expect((await call(app, 'POST', '/api/add-bootstrap', { peers: [] })).status).to.equal(400)
  })

  it('addquorum takes the array of {type, address}, at least 5, and adds those not listed yet', async () => {
    const list = QUORUMS.map((q, i) => ({ type: 2, address: i === 0 ? `${PEER}.${q}` : q }))
    expect(await call(app, 'POST', '/api/addquorum', list)).to.deep.equal({ status: 200, env: { status: true, message: 'Quorums added successfully', result: null } })
    expect(quorums).to.deep.equal(QUORUMS)
    expect((await call(app, 'POST', '/api/addquorum', list)).env.status).to.equal(true)
    expect(quorums).to.deep.equal(QUORUMS)
    const short = await call(app, 'POST', '/api/addquorum', list.slice(0, 4))
    expect(short.status).to.equal(400)
    expect(short.env.message).to.match(/atleast 5/)
    const bad = await call(app, 'POST', '/api/addquorum', [...list.slice(1), { type: 2, address: 'a.b.c' }])
    expect(bad.status).to.equal(200)
    envelope(bad.env, false)
    expect(bad.env.message).to.equal('Invalid quorum DID : a.b.c')
  })

  it('getallquorum (GET), removeallquorum (GET)', async () => {
    expect(await call(app, 'GET', '/api/getallquorum')).to.deep.equal({ status: 200, env: { status: true, message: 'Got all quorums successfully', result: QUORUMS } })
    expect(await call(app, 'GET', '/api/removeallquorum')).to.deep.equal({ status: 200, env: { status: true, message: 'Removed all quorums successfully', result: null } })
    expect(quorums).to.deep.equal([])
  })

  it('setup-quorum {did, password, priv_password}', async () => {
    expect(await call(app, 'POST', '/api/setup-quorum', { did: DID, password: 'q', priv_password: 'p' })).to.deep.equal({ status: 200, env: { status: true, message: 'Quorum setup done successfully', result: null } })
    expect(calls).to.deep.include({ quorumSetup: DID, pwd: 'q', priv: 'p' })
  })

  it('check-quorum-status?quorumAddress=: Quorum is setup / status false Quorum is not setup, both on 200', async () => {
    expect(await call(app, 'GET', `/api/check-quorum-status?quorumAddress=${QUORUMS[0]}`)).to.deep.equal({ status: 200, env: { status: true, message: 'Quorum is setup', result: null } })
    expect(await call(app, 'GET', `/api/check-quorum-status?quorumAddress=${QUORUMS[1]}`)).to.deep.equal({ status: 200, env: { status: false, message: 'Quorum is not setup', result: null } })
  })
})
