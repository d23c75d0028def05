import { expect } from 'chai'
import { createHmac } from 'node:crypto'
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync, writeFileSync, mkdirSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { Hono } from 'hono'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { LevelStore } from '../../src/storage/level-store.js'
import { DidStore } from '../../src/node/identity/did-store.js'
import { IdentityService, KEY_FILE_REFUSED, type DidNetwork, type PeerKeys } from '../../src/node/identity/identity-service.js'
import { createIdentityApi } from '../../src/node/identity/identity-api.js'
import { announcementDigest, type DidAnnouncement } from '../../src/node/identity/announcement.js'
import { TwoStepEngine } from '../../src/node/signing/two-step.js'
import { verifyPvtSignature } from '../../src/wallet/did-crypto.js'
import { sha3Hex } from '../../src/wallet/bytes.js'
import { sealPrivateKey } from '../../src/wallet/seal.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { unusedConsensus } from './stub-consensus.js'
import { createLogger, type Logger } from '../../src/util/logger.js'
import { MNEMONIC, liteDidByHand, testPng, walletAnswer, walletMaterial } from '../helpers/identity.js'

const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
const OTHER_PEER = '12D3KooWRu7hAogMFH84j7AEri39EsPSAdUDsTUykUuvtCj3J4wD'
const D1_KEY = '041756d13ad46e7811c99c961762472aa64a67554ae09e78b9c096350bc6a8bed3798fe19e3e3203a69d0ac00a60dc32b3652a2e7e372a7c60a64a1f3e06ec4c18'
const D1_DID = 'bafybmiatw5srgqlw3t5sm4buktu5gcgbfhkgujohem3o3a4cusvt424sei'
const UNKNOWN_DID = 'bafybmi' + 'b'.repeat(52)

interface Env { status: boolean, message: string, result: any }

interface Harness {
  app: Hono
  dir: string
  kv: LevelStore
  engine: TwoStepEngine
  announced: DidAnnouncement[]
  clock: { now: number }
  identity: IdentityService
  close: () => Promise<void>
}

async function harness (net: Partial<DidNetwork> = {}, self = PEER, logger?: Logger): Promise<Harness> {
  const dir = mkdtempSync(join(tmpdir(), 'rbt-dids-'))
  mkdirSync(join(dir, 'dids'))
  const kv = new LevelStore(join(dir, 'db'))
  await kv.open()
  const clock = { now: Date.now() }
  const engine = new TwoStepEngine({ now: () => clock.now, sweepIntervalMs: 0, ...(logger !== undefined ? { logger: logger.child('signing') } : {}) })
  const announced: DidAnnouncement[] = []
  const peers: Record<string, { peerId: string, didType?: number }> = {}
  const network: DidNetwork = {
    announce: async (a) => { announced.push(a); return { gossipPeers: 0, dht: true } },
    lookup: async () => undefined,
    fetchDocument: async () => { throw new Error('offline') },
    connectedPeers: () => [],
    ...net
  }
  const keys: PeerKeys = {
    peerId: self,
    sign: async (d) => new Uint8Array(createHmac('sha256', 'k').update(d).digest()),
    verify: async (_p, d, s) => Buffer.compare(createHmac('sha256', 'k').update(d).digest(), Buffer.from(s)) === 0
  }
  const identity = new IdentityService({
    store: new DidStore(join(dir, 'dids'), kv),
    kv,
    peers: { get: (d) => peers[d], set: async (d, p, t) => { peers[d] = { peerId: p, didType: t } } },
    network: () => network,
    peerKeys: () => keys,
    ...(logger !== undefined ? { logger: logger.child('identity') } : {})
  })
  await identity.open()
  const api = createIdentityApi(identity, engine, () => true)
  const stub = unusedIdentity()
  const services: ApiServices = {
    node: { status: () => ({}) as never, startCore: async () => '', requestShutdown: () => {}, peerId: () => self, ping: async () => ({ rttMs: 0, message: '' }), addPeer: async () => {} },
    bootstrap: { list: async () => [], add: async () => [], remove: async () => [], removeAll: async () => [] },
    identity: api,
    signing: api,
    ...unusedConsensus(),
    ...unusedTokens()
  }
  void stub
  const app = createApp(services, { version: 't', ...(logger !== undefined ? { logger } : {}) })
  return {
    app, dir, kv, engine, announced, clock, identity,
    close: async () => { engine.stop(); await kv.close(); rmSync(dir, { recursive: true, force: true }) }
  }
}

function form (config: unknown, files: Record<string, Uint8Array>, names: Record<string, string> = {}): FormData {
  const f = new FormData()
  if (config !== undefined) f.append('did_config', typeof config === 'string' ? config : JSON.stringify(config))
  for (const [field, bytes] of Object.entries(files)) f.append(field, new Blob([bytes as unknown as ArrayBuffer]), names[field] ?? field)
  return f
}

describe('api: DIDs and signatures (real identity service, app.request)', function () {
  this.timeout(60_000)
  let h: Harness
  before(async () => { h = await harness() })
  after(async () => { await h.close() })

  const req = async (method: string, path: string, body?: unknown): Promise<{ code: number, env: Env }> => {
    const init: RequestInit = { method }
    if (body instanceof FormData) init.body = body
    else if (body !== undefined) { init.body = typeof body === 'string' ? body : JSON.stringify(body); init.headers = { 'content-type': 'application/json' } }
    const res = await h.app.request(path, init)
    return { code: res.status, env: await res.json() as Env }
  }
  const list = async (): Promise<string[]> => (await req('GET', '/svc/v1/dids')).env.result
  const expectFail = (r: { code: number, env: Env }, code: number, msg?: RegExp): void => {
    expect(r.env.status, JSON.stringify(r.env)).to.equal(false)
    expect(r.code, JSON.stringify(r.env)).to.equal(code)
    if (msg !== undefined) expect(r.env.message).to.match(msg)
  }

  let basicDid = ''
  let wallet: ReturnType<typeof walletMaterial>
  let walletDid = ''

  it('creates a lite DID bound to an external key: the published vector', async () => {
    const r = await req('POST', '/svc/v1/dids/create', { type: 4, public_key: D1_KEY })
    expect(r.env).to.deep.equal({ status: true, message: 'DID created successfully', result: { did: D1_DID, peer_id: PEER } })
    expect(await list()).to.deep.equal([D1_DID])
  })

  it('restores a lite DID from a mnemonic and child path (DID computed by hand)', async () => {
    const r = await req('POST', '/svc/v1/dids/create', { mnemonic: MNEMONIC, childPath: 2, password: 'p1' })
    expect(r.env.result.did).to.equal(liteDidByHand(MNEMONIC, 2))
    // the same DID again: conflict, nothing changes
    const before = await list()
    expectFail(await req('POST', '/svc/v1/dids/create', { mnemonic: MNEMONIC, childPath: 2, password: 'other' }), 409, /already exists/)
    expect(await list()).to.deep.equal(before)
  })

  it('creates a basic DID from an uploaded 256x256 PNG (multipart)', async () => {
    const r = await req('POST', '/svc/v1/dids/create', form({ type: 0, priv_pwd: 'pw', secret: 's' }, { 'image.png': testPng() }))
    expect(r.env.status, r.env.message).to.equal(true)
    basicDid = r.env.result.did
    expect(basicDid).to.match(/^bafybmi[a-z2-7]{52}$/)
    // the creation-time announcement is signed by the DID itself
    const a = h.announced.find((x) => x.did === basicDid)!
    expect(a.signature).to.not.equal('')
    expect(a.peer_id).to.equal(PEER)
  })

  it('refuses bad images with a clear error and changes nothing', async () => {
    const before = await list()
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 0 }, { 'image.png': new Uint8Array(Buffer.from('not a png')) })), 400, /PNG/i)
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 0 }, { 'image.png': testPng(128, 128) })), 400, /256x256|256×256|size/i)
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 1 }, {})), 400, /image/)
    expect(await list()).to.deep.equal(before)
  })

  it('refuses path tricks, unknown files, oversize uploads and bad did_config', async () => {
    const before = await list()
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 0 }, { x: testPng() }, { x: '../image.png' })), 400, /plain name/)
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 0 }, { 'evil.sh': new Uint8Array(3) })), 400, /unexpected file/)
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 0 }, { 'image.png': new Uint8Array(9 * 1024 * 1024) })), 413)
    expectFail(await req('POST', '/svc/v1/dids/create', form('{not json', {})), 400, /failed to parse did configuration/)
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 9 }, {})), 400, /type/)
    expectFail(await req('POST', '/svc/v1/dids/create', { type: 3 }), 400, /child/)
    expectFail(await req('POST', '/svc/v1/dids/create', { public_key: 'zz' }), 400, /hex/)
    expectFail(await req('POST', '/svc/v1/dids/create', { private_key: join(h.dir, 'nope.pem') }), 400, /private_key/)
    expectFail(await req('POST', '/svc/v1/dids/create', { private_key: h.dir }), 400, /private_key/)
    expectFail(await req('POST', '/svc/v1/dids/create', '{"type":'), 400, /not valid JSON/)
    expect(await list()).to.deep.equal(before)
  })

  it('creates a lite DID from a private key file path on the node', async () => {
    const key = join(h.dir, 'k.pem')
    writeFileSync(key, await sealPrivateKey(new Uint8Array(32).fill(7), 'pk'))
    const r = await req('POST', '/svc/v1/dids/create', { type: 4, private_key: key, password: 'pk' })
    expect(r.env.status, r.env.message).to.equal(true)
  })

  it('private_key path: one answer for every file that cannot be used, never its content', async () => {
    const before = await list()
    const d = join(h.dir, 'keyfiles')
    mkdirSync(d, { recursive: true })
    const good = join(d, 'good.pem')
    writeFileSync(good, await sealPrivateKey(new Uint8Array(32).fill(9), 'pk'))
    const secret = 'TOP-SECRET-LINE'
    const files: Record<string, string> = {
      missing: join(d, 'missing.pem'),
      folder: d,
      symlink: join(d, 'link.pem'),
      device: '/dev/zero',
      text: join(d, 'notes.txt'),
      fakePem: join(d, 'fake.pem'),
      publicPem: join(d, 'pub.pem'),
      raw32: join(d, 'raw.key'),
      large: join(d, 'large.pem'),
      nul: 'a\0b'
    }
    symlinkSync(good, files.symlink)
    writeFileSync(files.text, `${secret}\n`)
    writeFileSync(files.fakePem, `-----BEGIN PRIVATE KEY-----\n${secret}\n-----END PRIVATE KEY-----\n`)
    writeFileSync(files.publicPem, '-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n')
    writeFileSync(files.raw32, Buffer.alloc(32, 5))
    writeFileSync(files.large, Buffer.alloc(17 * 1024, 65))
    try { execFileSync('mkfifo', [join(d, 'fifo')]); files.fifo = join(d, 'fifo') } catch {}
    const cases: Array<[string, Record<string, unknown>]> = Object.entries(files).map(([what, path]) => [what, { type: 4, private_key: path, password: 'pk' }])
    cases.push(['wrong password', { type: 4, private_key: good, password: 'other' }])
    cases.push(['other curve', { type: 0, private_key: good, password: 'pk' }])
    const messages = new Set<string>()
    for (const [what, body] of cases) {
      const r = await req('POST', '/svc/v1/dids/create', body)
      expect([r.code, r.env.status], what).to.deep.equal([400, false])
      expect(r.env.message, what).to.not.include(secret)
      messages.add(r.env.message)
    }
    expect([...messages]).to.deep.equal([KEY_FILE_REFUSED])
    expect(await list()).to.deep.equal(before)
    // the same file used properly still works
    const r = await req('POST', '/svc/v1/dids/create', { type: 4, private_key: good, password: 'pk' })
    expect(r.env.status, r.env.message).to.equal(true)
  })

  it('creates a standard DID (image + client key) and a wallet DID (client images + key)', async () => {
    wallet = walletMaterial()
    const std = await req('POST', '/svc/v1/dids/create', form({ type: 1 }, { 'image.png': testPng(256, 256, 9), 'pubKey.pem': wallet.pubKeyPem }))
    expect(std.env.status, std.env.message).to.equal(true)
    expectFail(await req('POST', '/svc/v1/dids/create', form({ type: 2 }, { 'did.png': wallet.didPng, 'pubKey.pem': wallet.pubKeyPem })), 400, /pubShare\.png/)
    const w = await req('POST', '/svc/v1/dids/create', form({ type: 2 }, { 'did.png': wallet.didPng, 'pubShare.png': wallet.pubSharePng, 'pubKey.pem': wallet.pubKeyPem }))
    expect(w.env.status, w.env.message).to.equal(true)
    walletDid = w.env.result.did
    // no DID key on the node: announced with a hosting claim signed by the peer key
    const a = h.announced.find((x) => x.did === walletDid)!
    expect(a.signature).to.equal('')
    expect(a.peer_signature).to.be.a('string')
  })

  it('lists DIDs with the reference message', async () => {
    const r = await req('GET', '/svc/v1/dids')
    expect(r.env.message).to.equal('Got all DIDs')
    expect(r.env.result).to.include.members([D1_DID, basicDid, walletDid])
  })

  it('arbitrary signature: Password needed, wrong password retriable, then signed; verify passes, tampering fails', async () => {
    const first = await req('POST', '/svc/v1/signature/arbitrary', { signer_did: basicDid, msg_to_sign: 'hello rubix' })
    expect(first.env).to.deep.include({ status: true, message: 'Password needed' })
    const { id, mode, hash, only_priv_key: onlyPriv } = first.env.result
    expect({ mode, hash, onlyPriv }).to.deep.equal({ mode: 0, hash: null, onlyPriv: false })
    expectFail(await req('POST', '/svc/v1/signature', { id, password: 'wrong' }), 401, /wrong password/i)
    const done = await req('POST', '/svc/v1/signature', { id, password: 'pw' })
    expect(done.env.message).to.equal('arbitrary sign successful')
    const sig: string = done.env.result.signature
    expectFail(await req('POST', '/svc/v1/signature', { id, password: 'pw' }), 409, /already completed/)
    const q = (m: string, s: string, d = basicDid): string => `/svc/v1/signature/verify?${new URLSearchParams({ signer_did: d, signed_msg: m, signature: s }).toString()}`
    expect((await req('GET', q('hello rubix', sig))).env).to.deep.equal({ status: true, message: 'verification passed, signature is valid', result: null })
    const tampered = await req('GET', q('hello rubix!', sig))
    expect(tampered.code).to.equal(200)
    expect(tampered.env).to.deep.equal({ status: false, message: 'verification failed, signature is invalid', result: null })
    const flipped = Buffer.from(sig, 'base64'); flipped[flipped.length - 1] ^= 1
    expect((await req('GET', q('hello rubix', flipped.toString('base64')))).env.status).to.equal(false)
    expectFail(await req('GET', q('hello rubix', 'not base64!')), 400, /base64/)
    expectFail(await req('GET', q('hello rubix', sig, 'bafybad')), 400, /Invalid DID/)
    expectFail(await req('GET', '/svc/v1/signature/verify'), 400)
  })

  it('arbitrary signature by a wallet DID: Signature needed with the hash; a bad signature is retriable', async () => {
    const first = await req('POST', '/svc/v1/signature/arbitrary', { signer_did: walletDid, msg_to_sign: 'from a wallet' })
    expect(first.env.message).to.equal('Signature needed')
    const { id, hash, only_priv_key: onlyPriv, mode } = first.env.result
    expect(mode).to.equal(2)
    expect(onlyPriv).to.equal(true)
    expect(Buffer.from(hash, 'base64').toString()).to.equal(sha3Hex(Buffer.from('from a wallet')))
    const other = walletMaterial(5)
    expectFail(await req('POST', '/svc/v1/signature', { id, ...walletAnswer(other, hash, true) }), 422, /does not verify/)
    expectFail(await req('POST', '/svc/v1/signature', { id, password: 'x' }), 400, /signature is required/)
    const done = await req('POST', '/svc/v1/signature', { id, ...walletAnswer(wallet, hash, true) })
    expect(done.env.message, done.env.message).to.equal('arbitrary sign successful')
    const v = await req('GET', `/svc/v1/signature/verify?${new URLSearchParams({ signer_did: walletDid, signed_msg: 'from a wallet', signature: done.env.result.signature }).toString()}`)
    expect(v.env.status).to.equal(true)
  })

  it('the legacy /api/signature-response completes the same operations', async () => {
    const first = await req('POST', '/svc/v1/signature/arbitrary', { signer_did: basicDid, msg_to_sign: 'legacy' })
    const done = await req('POST', '/api/signature-response', { ID: first.env.result.id, Mode: 0, Password: 'pw' })
    expect(done.env.message).to.equal('arbitrary sign successful')
  })

  it('signature completion: unknown, malformed and expired ids are clear errors', async () => {
    expectFail(await req('POST', '/svc/v1/signature', { id: '00000000-0000-4000-8000-000000000000', password: 'pw' }), 404, /Invalid request ID/)
    expectFail(await req('POST', '/svc/v1/signature', {}), 400, /id is required/)
    expectFail(await req('POST', '/svc/v1/signature', ''), 400)
    expectFail(await req('POST', '/svc/v1/signature', { id: 5 }), 400)
    const first = await req('POST', '/svc/v1/signature/arbitrary', { signer_did: basicDid, msg_to_sign: 'late' })
    h.clock.now += 181_000
    expectFail(await req('POST', '/svc/v1/signature', { id: first.env.result.id, password: 'pw' }), 410, /expired/)
    h.clock.now = Date.now()
  })

  it('arbitrary sign: bad input', async () => {
    expectFail(await req('POST', '/svc/v1/signature/arbitrary', {}), 400)
    expectFail(await req('POST', '/svc/v1/signature/arbitrary', { signer_did: 'bafy', msg_to_sign: 'x' }), 400, /Invalid DID/)
    expectFail(await req('POST', '/svc/v1/signature/arbitrary', { signer_did: UNKNOWN_DID, msg_to_sign: 'x' }), 404, /failed to setup did/)
    expect(h.engine.size).to.equal(0)
  })

  it('register: two-step, announcement signed by the DID; bad DIDs refused', async () => {
    expectFail(await req('POST', '/svc/v1/dids/bafybad/register'), 400, /Invalid DID/)
    expectFail(await req('POST', `/svc/v1/dids/${UNKNOWN_DID}/register`), 404, /not local/)
    const first = await req('POST', `/svc/v1/dids/${basicDid}/register`)
    expect(first.env.message).to.equal('Password needed')
    const n = h.announced.length
    const done = await req('POST', '/svc/v1/signature', { id: first.env.result.id, password: 'pw' })
    expect(done.env).to.deep.equal({ status: true, message: 'DID registered successfully', result: null })
    const a = h.announced[n]!
    expect(a.did).to.equal(basicDid)
    const doc = (await req('GET', `/svc/v1/dids/${basicDid}/public_key`)).env.result
    expect(doc).to.include({ did: basicDid, did_type: 0, source: 'local' })
    // the announcement verifies against the DID's public key, independently of the service
    const store = new DidStore(join(h.dir, 'dids'), h.kv)
    const d = (await store.document(basicDid))!
    expect(verifyPvtSignature(d, announcementDigest(a), new Uint8Array(Buffer.from(a.signature, 'base64')))).to.equal(true)
  })

  it('public_key and resolve: bad and unknown DIDs', async () => {
    expectFail(await req('GET', '/svc/v1/dids/nope/public_key'), 400, /Invalid DID/)
    expectFail(await req('GET', `/svc/v1/dids/${UNKNOWN_DID}/public_key`), 404)
    expectFail(await req('GET', `/svc/v1/dids/${UNKNOWN_DID}/resolve`), 404, /could not be resolved/)
    expect((await req('GET', `/svc/v1/dids/${basicDid}/resolve`)).env.result).to.deep.equal({ did: basicDid, peer_id: PEER, did_type: 0, source: 'local' })
  })

  it('a DID known only from a DHT record resolves: fetching its document no longer waits on itself', async () => {
    const signed = h.announced.find((x) => x.did === basicDid && x.signature !== '')!
    const other = await harness({
      lookup: async (did) => did === basicDid ? signed : undefined,
      fetchDocument: async (peer, did) => {
        if (peer !== PEER) throw new Error(`no route to ${peer}`)
        return await h.identity.encodedDocument(did)
      }
    }, OTHER_PEER)
    try {
      // before, the document fetch resolved the host through the DHT record, whose check needs
      // the document being fetched: the request never answered
      const within = async <T>(p: T | Promise<T>): Promise<T> => await Promise.race([Promise.resolve(p), new Promise<never>((_r, rej) => setTimeout(() => { rej(new Error('no answer within 5 s')) }, 5000).unref())])
      const res = await within(other.app.request(`/svc/v1/dids/${basicDid}/public_key`))
      const env = await res.json() as Env
      expect(env.result, env.message).to.include({ did: basicDid, did_type: 0, source: 'network' })
      const resolved = await within(other.app.request(`/svc/v1/dids/${basicDid}/resolve`))
      expect(((await resolved.json()) as Env).result).to.include({ did: basicDid, peer_id: PEER })
    } finally {
      await other.close()
    }
  })

  it('setup: a DID moved from another node by its files; wrong password and mismatched files refused', async () => {
    const other = await harness()
    try {
      const folder = join(h.dir, 'dids', basicDid)
      const files: Record<string, Uint8Array> = {}
      for (const n of ['did.png', 'pubShare.png', 'pvtShare.png', 'pubKey.pem', 'pvtKey.pem', 'quorumPubKey.pem', 'quorumPrivKey.pem']) files[n] = new Uint8Array(readFileSync(join(folder, n)))
      const post = async (cfg: unknown, f: Record<string, Uint8Array>): Promise<{ code: number, env: Env }> => {
        const res = await other.app.request('/svc/v1/dids/setup', { method: 'POST', body: form(cfg, f) })
        return { code: res.status, env: await res.json() as Env }
      }
      expectFail(await post({ type: 0, priv_pwd: 'bad', quorum_pwd: 'pw' }, files), 401, /wrong password/i)
      expectFail(await post({ type: 0, priv_pwd: 'pw', quorum_pwd: 'pw' }, { ...files, 'pvtShare.png': readFileSync(join(h.dir, 'dids', basicDid, 'pubShare.png')) }), 400, /pvtShare/)
      const { 'pvtShare.png': _drop, ...noShare } = files
      expectFail(await post({ type: 0, priv_pwd: 'pw' }, noShare), 400, /pvtShare\.png/)
      expectFail(await post(undefined, files), 400, /did_config is required/)
      expectFail(await post({ type: 'x' }, files), 400)
      const listing = await other.app.request('/svc/v1/dids')
      expect(((await listing.json()) as Env).result).to.deep.equal([])
      const ok = await post({ type: 0, priv_pwd: 'pw', quorum_pwd: 'pw' }, files)
      expect(ok.env).to.deep.include({ status: true, message: 'DID setup successfully' })
      expect(ok.env.result.did).to.equal(basicDid)
      // the same files again (a script run twice): the same DID, nothing changed
      const again = await post({ type: 0, priv_pwd: 'pw', quorum_pwd: 'pw' }, files)
      expect(again.env, again.env.message).to.deep.include({ status: true, message: 'DID setup successfully' })
      expect(again.env.result.did).to.equal(basicDid)
      expect(((await (await other.app.request('/svc/v1/dids')).json()) as Env).result).to.deep.equal([basicDid])
      // setup with an upload that is not multipart
      const res = await other.app.request('/svc/v1/dids/setup', { method: 'POST', body: '{}', headers: { 'content-type': 'application/json' } })
      expect(res.status).to.equal(400)
    } finally {
      await other.close()
    }
  })
})

describe('api: signing limits and the audit log (real identity service, app.request)', function () {
  this.timeout(60_000)
  const lines: string[] = []
  let h: Harness
  before(async () => { h = await harness({}, PEER, createLogger({ level: 'DEBUG', write: (l) => { lines.push(l) } })) })
  after(async () => { await h.close() })
  const req = async (method: string, path: string, body?: unknown): Promise<{ code: number, env: Env }> => {
    const res = await h.app.request(path, { method, body: JSON.stringify(body), headers: { 'content-type': 'application/json' } })
    return { code: res.status, env: await res.json() as Env }
  }

  const PASSWORD = 'Pw-7f3a-unique-secret'
  const GUESSES = ['Guess-one-c81', 'Guess-two-d92', 'Guess-three-e03', 'Guess-four-f14']

  it('a password-bearing operation leaves one audit line and no password in the logs; wrong passwords slow down with 429', async () => {
    const created = await req('POST', '/svc/v1/dids/create', { type: 4, password: PASSWORD })
    expect(created.env.status, created.env.message).to.equal(true)
    const did: string = created.env.result.did
    const start = async (): Promise<string> => {
      const r = await req('POST', '/svc/v1/signature/arbitrary', { signer_did: did, msg_to_sign: 'audit me' })
      expect(r.env.message).to.equal('Password needed')
      return r.env.result.id
    }
    const id = await start()
    expect((await req('POST', '/svc/v1/signature', { id, password: GUESSES[0] })).code).to.equal(401)
    const done = await req('POST', '/svc/v1/signature', { id, password: PASSWORD })
    expect(done.env.status, done.env.message).to.equal(true)
    // three wrong in a row, then even the right one is refused for a while, unchecked
    const id2 = await start()
    for (const g of GUESSES.slice(1)) expect((await req('POST', '/svc/v1/signature', { id: id2, password: g })).code).to.equal(401)
    const slowed = await req('POST', '/svc/v1/signature', { id: id2, password: PASSWORD })
    expect(slowed.code).to.equal(429)
    expect(slowed.env).to.deep.include({ status: false, message: `Too many wrong passwords for ${did}: retry in 1 s` })
    h.clock.now += 1000
    expect((await req('POST', '/svc/v1/signature', { id: id2, password: PASSWORD })).env.status).to.equal(true)

    const audit = lines.filter((l) => l.includes('audit:'))
    expect(audit.map((l) => l.replace(/^\S+ /, ''))).to.deep.equal([
      // the announcement a new DID signs with the password of the request, outside the engine
      `[INFO] identity: audit: sign create-announcement did=${did} outcome=ok`,
      `[INFO] signing: audit: sign arbitrary did=${did} outcome=ok wrong_passwords=1`,
      `[INFO] signing: audit: sign arbitrary did=${did} outcome=ok wrong_passwords=3`
    ])
    const all = lines.join('\n')
    for (const secret of [PASSWORD, ...GUESSES]) expect(all, 'a password in the logs').to.not.include(secret)
  })
})
