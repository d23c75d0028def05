import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { createLegacy26App } from '../../src/api/server/legacy26/app.js'
import { Legacy26Service } from '../../src/node/legacy26/legacy-service.js'
import { DidStore } from '../../src/node/identity/did-store.js'
import { IdentityService } from '../../src/node/identity/identity-service.js'
import { TwoStepEngine } from '../../src/node/signing/two-step.js'
import { LevelStore } from '../../src/storage/level-store.js'
import { NodeConfigStore } from '../../src/storage/node-config-store.js'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { generateProof, powSeed } from '../../src/consensus/unpledge-pow.js'
import { parsePublicKeyPem } from '../../src/wallet/keys.js'
import { unsealPrivateKey } from '../../src/wallet/seal.js'
import { isValidDid } from '../../src/wallet/did-string.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { sha3Hex } from '../../src/tokenchain/hash.js'

interface Env { data: any, message: string, status: string }

interface Harness {
  app: Hono
  identity: IdentityService
  config: NodeConfigStore
  transfers: unknown[]
  post: (path: string, body: unknown) => Promise<{ code: number, env: Env }>
  close: () => Promise<void>
}

async function harness (freeMilli = 2000): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'rbt-legacy26-'))
  mkdirSync(join(dir, 'dids'))
  const kv = new LevelStore(join(dir, 'db'))
  await kv.open()
  const config = new NodeConfigStore(join(dir, 'node.json'))
  await config.open()
  const identity = new IdentityService({ store: new DidStore(join(dir, 'dids'), kv), kv, peers: { get: () => undefined, set: async () => {} }, network: () => undefined, peerKeys: () => undefined })
  await identity.open()
  const engine = new TwoStepEngine({ sweepIntervalMs: 0 })
  const transfers: unknown[] = []
  const service = new Legacy26Service({
    identity,
    config,
    consensus: () => { throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started') },
    // the transfer itself is the consensus module's (covered by the e2e suite); here it must not be reached
    consensusApi: { transfer: async (b) => { transfers.push(b); throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started') } },
    signing: engine,
    fetchProof: async () => undefined,
    freeMilli: async () => freeMilli,
    pledgedFile: join(dir, 'PledgedTokens.json'),
    powLevel: 2
  })
  const app = createLegacy26App(service)
  const post = async (path: string, body: unknown): Promise<{ code: number, env: Env }> => {
    const res = await app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) })
    return { code: res.status, env: await res.json() as Env }
  }
  return {
    app, identity, config, transfers, post,
    close: async () => { engine.stop(); service.stop(); await kv.close(); rmSync(dir, { recursive: true, force: true }) }
  }
}

describe('api: release-2.6 endpoints', function () {
  this.timeout(60_000)
  let h: Harness
  beforeEach(async () => { h = await harness() })
  afterEach(async () => { await h.close() })

  it('answers the 2.6 envelope for bad input, unknown routes and wrong methods', async () => {
    for (const [path, body, code, msg] of [
      ['/generateEcDSAKeys', {}, 400, /pvtKeyPass is required/],
      ['/generateEcDSAKeys', { pvtKeyPass: 'pw', returnKey: 2 }, 400, /returnKey/],
      ['/generateQuorumKeys', { pvtKeyPass: '' }, 400, /must not be empty/],
      ['/startQuorumService', '{not json', 400, /not valid JSON/],
      ['/initiateTransaction', { tokenCount: 1 }, 400, /receiver is required/],
      ['/unpledgeToken', {}, 400, /tokenList is required/],
      ['/verifyPoW', { tokenList: 't' }, 400, /receiver is required/]
    ] as const) {
      const { code: c, env } = await h.post(path, body)
      expect(c, path).to.equal(code)
      expect(env.status, path).to.equal('false')
      expect(env.message, path).to.match(msg)
      expect(env).to.have.all.keys('data', 'message', 'status')
    }
    const get = await h.app.request('/generateEcDSAKeys')
    expect(get.status).to.equal(405)
    expect(((await get.json()) as Env).status).to.equal('false')
    const nf = await h.app.request('/nope', { method: 'POST' })
    expect(nf.status).to.equal(404)
    expect(((await nf.json()) as Env).status).to.equal('false')
  })

  it('returnKey 1 returns a sealed secp256k1 key pair and keeps nothing', async () => {
    const { code, env } = await h.post('/generateEcDSAKeys', { pvtKeyPass: 'pass-1', returnKey: 1 })
    expect(code).to.equal(200)
    expect(env.status).to.equal('true')
    const { did, privateKey, publicKey } = env.data as { did: string, privateKey: string, publicKey: string }
    expect(isValidDid(did)).to.equal(true)
    expect(parsePublicKeyPem(new TextEncoder().encode(publicKey)).curve).to.equal('secp256k1')
    expect((await unsealPrivateKey(privateKey, 'pass-1')).length).to.equal(32)
    await unsealPrivateKey(privateKey, 'wrong').then(() => expect.fail('opened with a wrong password'), (e) => expect((e as RbtError).code).to.equal('WRONG_PASSWORD'))
    expect(await h.identity.list()).to.deep.equal([])
    expect(h.config.data.settings.legacy26).to.equal(undefined)
  })

  it('keeps one key pair per role as a lite DID of the node; a second one is refused', async () => {
    const tx = await h.post('/generateEcDSAKeys', { pvtKeyPass: 'pass-1', returnKey: 0 })
    const q = await h.post('/generateQuorumKeys', { pvtKeyPass: 'pass-q' })
    expect([tx.code, q.code]).to.deep.equal([200, 200])
    const txDid = tx.env.data.did as string
    const qDid = q.env.data.did as string
    expect(txDid).to.not.equal(qDid)
    expect((await h.identity.list()).sort()).to.deep.equal([txDid, qDid].sort())
    expect((await h.identity.record(txDid))?.type).to.equal(4)
    expect(h.config.data.settings.legacy26).to.deep.include.keys('transaction', 'quorum')
    const again = await h.post('/generateEcDSAKeys', { pvtKeyPass: 'pass-2', returnKey: 0 })
    expect(again.code).to.equal(409)
    expect(again.env.status).to.equal('false')
    expect(await h.identity.list()).to.have.length(2)
  })

  it('initiateTransaction: no keys, missing or wrong pvtKeyPass, decimals and balance are refused before anything starts', async () => {
    const receiver = 'bafybmi' + 'b'.repeat(52)
    const none = await h.post('/initiateTransaction', { receiver, tokenCount: 1, comment: 'c', type: 1, pvtKeyPass: 'pass-1' })
    expect(none.code).to.equal(404)
    expect(none.env.message).to.match(/\/generateEcDSAKeys first/)
    expect(none.env.data.response.status).to.equal('Failed')
    await h.post('/generateEcDSAKeys', { pvtKeyPass: 'pass-1', returnKey: 0 })
    const before = JSON.stringify(h.config.data)
    const cases: Array<[unknown, number, RegExp]> = [
      [{ receiver, tokenCount: 1, comment: 'c', type: 1 }, 400, /pvtKeyPass is required/],
      [{ receiver, tokenCount: 1, comment: 'c', type: 1, pvtKeyPass: 'wrong' }, 401, /password/],
      [{ receiver, tokenCount: 0.0001, comment: 'c', type: 1, pvtKeyPass: 'pass-1' }, 400, /decimal/],
      [{ receiver, tokenCount: 2.5, comment: 'c', type: 1, pvtKeyPass: 'pass-1' }, 422, /Insufficient balance: 2 RBT available/],
      [{ receiver: 'not-a-did', tokenCount: 1, comment: 'c', type: 1, pvtKeyPass: 'pass-1' }, 400, /Invalid DID/],
      [{ receiver, tokenCount: 1, comment: 'c', type: 3, pvtKeyPass: 'pass-1' }, 400, /type/]
    ]
    for (const [body, code, msg] of cases) {
      const r = await h.post('/initiateTransaction', body)
      expect(r.code, JSON.stringify(body)).to.equal(code)
      expect(r.env.status).to.equal('false')
      expect(r.env.message).to.match(msg)
    }
    expect(h.transfers, 'no transfer was started').to.deep.equal([])
    expect(JSON.stringify(h.config.data)).to.equal(before)
    // the right password reaches the transfer (here: the core is not started)
    const ok = await h.post('/initiateTransaction', { receiver, tokenCount: 1.5, comment: 'c', type: 1, pvtKeyPass: 'pass-1' })
    expect(ok.code).to.equal(503)
    expect(h.transfers).to.have.length(1)
    expect(h.transfers[0]).to.deep.include({ owner: receiver, rbt: '1.5', memo: 'c' })
  })

  it('initiateTransaction: wrong passwords meet the same growing delay as every other password answer', async () => {
    const receiver = 'bafybmi' + 'b'.repeat(52)
    await h.post('/generateEcDSAKeys', { pvtKeyPass: 'pass-1', returnKey: 0 })
    const codes: number[] = []
    for (let i = 0; i < 5; i++) codes.push((await h.post('/initiateTransaction', { receiver, tokenCount: 1, comment: 'c', type: 1, pvtKeyPass: `guess-${i}` })).code)
    // the first wrong ones are checked (401), then answers are refused unchecked for a while (429)
    expect(codes.slice(0, 3)).to.deep.equal([401, 401, 401])
    expect(codes.slice(3)).to.deep.equal([429, 429])
    const during = await h.post('/initiateTransaction', { receiver, tokenCount: 1, comment: 'c', type: 1, pvtKeyPass: 'pass-1' })
    expect(during.code, 'even the right password waits out the delay').to.equal(429)
    expect(h.transfers).to.deep.equal([])
  })

  it('startQuorumService without quorum keys is a clear error', async () => {
    const r = await h.post('/startQuorumService', { pvtKeyPass: 'pass-q' })
    expect(r.code).to.equal(404)
    expect(r.env.message).to.match(/\/generateQuorumKeys first/)
  })

  it('verifyPoW checks a given proof against the token, pledger and transaction', async () => {
    const token = 'Qm' + 'a'.repeat(44)
    const pledger = 'bafybmi' + 'c'.repeat(52)
    const txid = sha3Hex('tx')
    const proof = await generateProof(token, pledger, txid, { level: 2, every: 10 })
    const good = await h.post('/verifyPoW', { tokenList: token, receiver: pledger, transactionID: txid, proof })
    expect(good.code).to.equal(200)
    expect(good.env).to.deep.equal({ data: { 'Release status': true }, message: 'Proof verified', status: 'true' })
    const tampered = { ...proof, hashes: [...proof.hashes.slice(0, -1), '0'.repeat(62) + txid.slice(-2)] }
    const bad = await h.post('/verifyPoW', { tokenList: token, receiver: pledger, transactionID: txid, proof: tampered })
    expect(bad.env.data['Release status']).to.equal(false)
    const other = await h.post('/verifyPoW', { tokenList: token, receiver: 'bafybmi' + 'd'.repeat(52), transactionID: txid, proof })
    expect(other.env.data['Release status']).to.equal(false)
    const weak = await generateProof(token, pledger, txid, { level: 1, every: 10 })
    expect((await h.post('/verifyPoW', { tokenList: token, receiver: pledger, transactionID: txid, proof: weak })).env.data['Release status']).to.equal(false)
  })

  it('verifyPoW of a proof with million-hash segments keeps the event loop free; other requests are answered meanwhile', async () => {
    const token = 'Qm' + 'e'.repeat(44)
    const pledger = 'bafybmi' + 'f'.repeat(52)
    const txid = sha3Hex('slow')
    // a fake proof whose first segment must be re-walked for a million hashes before it fails
    const proof = { token, pledger, txid, level: 2, every: 1_000_000, hashes: [powSeed(token, pledger, txid), 'a'.repeat(64), '0'.repeat(62) + txid.slice(-2)] }
    const delay = monitorEventLoopDelay({ resolution: 10 })
    delay.enable()
    // the histogram needs a first tick before it can see a blocked loop
    await new Promise((resolve) => setTimeout(resolve, 50))
    const t0 = performance.now()
    const slow = h.post('/verifyPoW', { tokenList: token, receiver: pledger, transactionID: txid, proof })
    // another request, due 50 ms after: how long after that is it answered?
    const due = t0 + 50
    const otherDone = new Promise<{ code: number, env: Env }>((resolve, reject) => { setTimeout(() => { h.post('/verifyPoW', { tokenList: token }).then(resolve, reject) }, 50) })
    const other = await otherDone
    const otherMs = performance.now() - due
    const r = await slow
    const slowMs = performance.now() - t0
    await new Promise((resolve) => setTimeout(resolve, 20))
    delay.disable()
    expect(other.code).to.equal(400)
    expect(r.code).to.equal(200)
    expect(r.env.data).to.deep.equal({ 'Release status': false, reason: 'segment 0 does not hash to the next checkpoint' })
    expect(otherMs, 'the other request waited').to.be.below(200)
    expect(delay.max / 1e6, `event loop blocked (the verification took ${Math.round(slowMs)} ms)`).to.be.below(200)
  })
})
