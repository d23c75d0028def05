import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand } from './harness.js'

const DID = 'bafybmiatw5srgqlw3t5sm4buktu5gcgbfhkgujohem3o3a4cusvt424sei'
const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'
const ID = '5b0d7b1c-3a52-4a0e-8f3e-9f1c2e6a7b10'
const created = { body: { status: true, message: 'DID created successfully', result: { did: DID, peer_id: PEER } } }

/** The did_config JSON inside a recorded multipart body. */
function didConfig (body: unknown): Record<string, unknown> {
  const m = /name="did_config"\r\n\r\n(.*?)\r\n--/s.exec(String(body))
  if (m === null) throw new Error('no did_config in the upload')
  return JSON.parse(m[1]!)
}
const uploaded = (body: unknown): string[] => [...String(body).matchAll(/name="([^"]+)"; filename=/g)].map((m) => m[1]!)

describe('cli: identity commands (stub transport, stub prompter)', function () {
  this.timeout(20_000)
  let dir: string
  let cwd: string
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-cli-id-'))
    for (const n of ['image.png', 'did.png', 'pubShare.png', 'pubKey.pem', 'pvtShare.png']) writeFileSync(join(dir, n), `bytes of ${n}`)
    cwd = process.cwd()
    process.chdir(dir)
  })
  after(() => { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) })

  it('createdid uploads the image named by -imgFile with the default passwords and logs the DID', async () => {
    const r = await runCommand(['createdid'], () => created)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stderr).to.match(new RegExp(`\\[INFO\\] DID ${DID} created successfully`))
    expect(r.stdout).to.equal(DID + '\n')
    const req = r.requests[0]!
    expect(req.method).to.equal('POST')
    expect(req.url).to.equal('http://localhost:20000/svc/v1/dids/create')
    expect(uploaded(req.body)).to.deep.equal(['image.png'])
    expect(String(req.body)).to.include('bytes of image.png')
    expect(didConfig(req.body)).to.deep.equal({ type: 0, priv_pwd: 'mypassword', quorum_pwd: 'mypassword' })
  })

  it('warns on stderr whenever a command uses the default password, without printing it', async () => {
    const warns = (stderr: string): string[] => stderr.split('\n').filter((l) => l.includes('[WARN]'))
    const r = await runCommand(['createdid'], () => created)
    expect(r.code, r.stderr).to.equal(0)
    expect(warns(r.stderr)).to.have.length(2)
    expect(warns(r.stderr)[0]).to.match(/^\S+ \[WARN\] -privPWD not given: using the default private key password, which anyone can look up/)
    expect(warns(r.stderr)[1]).to.match(/\[WARN\] -quorumPWD not given: using the default quorum key password/)
    expect(r.stderr).to.not.include('mypassword')
    const explicit = await runCommand(['createdid', '-didType', '4', '-privPWD', 'mypassword'], () => created)
    expect(warns(explicit.stderr)).to.have.length(1)
    expect(warns(explicit.stderr)[0]).to.match(/\[WARN\] the private key password given is the default one/)
    const own = await runCommand(['createdid', '-didType', '4', '-privPWD', 'p9'], () => created)
    expect(warns(own.stderr)).to.deep.equal([])
    // the two-step answer of a signing command too
    const reg = await runCommand(['registerdid', '-did', DID], (req) => req.url.endsWith('/signature')
      ? { body: { status: true, message: 'DID registered successfully', result: null } }
      : { body: { status: true, message: 'Password needed', result: { id: ID, mode: 4, hash: null, only_priv_key: false } } })
    expect(reg.code, reg.stderr).to.equal(0)
    expect(warns(reg.stderr)).to.have.length(1)
  })

  it('createdid -didType 2 uploads did.png, pubShare.png and pubKey.pem, never the private share', async () => {
    const r = await runCommand(['createdid', '-didType', '2', '-quorumPWD', 'q1'], () => created)
    expect(r.code, r.stderr).to.equal(0)
    expect(uploaded(r.requests[0]!.body)).to.deep.equal(['did.png', 'pubShare.png', 'pubKey.pem'])
    expect(String(r.requests[0]!.body)).to.not.include('pvtShare')
    expect(didConfig(r.requests[0]!.body)).to.deep.equal({ type: 2, quorum_pwd: 'q1' })
  })

  it('createdid -didType 4 sends the mnemonic and child path; a missing image file is named', async () => {
    const r = await runCommand(['createdid', '-didType', '4', '-mnemonic', 'a b c', '-childPath', '3', '-privPWD', 'p9'], () => created)
    expect(r.code, r.stderr).to.equal(0)
    expect(didConfig(r.requests[0]!.body)).to.deep.equal({ type: 4, priv_pwd: 'p9', mnemonic: 'a b c', childPath: 3 })
    const miss = await runCommand(['createdid', '-imgFile', 'nope.png'], () => { throw new Error('must not be called') })
    expect(miss.code).to.equal(2)
    expect(miss.stderr).to.match(/cannot read nope\.png \(-imgFile\): no such file/)
    const bad = await runCommand(['createdid', '-didType', '3'], () => { throw new Error('must not be called') })
    expect(bad.code).to.equal(2)
    expect(bad.stderr).to.match(/-didType must be 0/)
  })

  it('createdid -fp prompts for both passwords (hidden input)', async () => {
    const asked: string[] = []
    const r = await runCommand(['createdid', '-fp'], () => created, {
      interactive: true,
      password: async (m) => { asked.push(m); return m.includes('quorum') ? 'q123' : 'p123' }
    })
    expect(r.code, r.stderr).to.equal(0)
    expect(asked).to.have.length(2)
    expect(didConfig(r.requests[0]!.body)).to.include({ priv_pwd: 'p123', quorum_pwd: 'q123' })
  })

  it('-fp without a terminal and without the flag fails naming the flag', async () => {
    const r = await runCommand(['createdid', '-fp'], () => { throw new Error('must not be called') })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/no terminal: pass it with -privPWD/)
    expect(r.requests).to.have.length(0)
  })

  it('getalldid prints one DID per line', async () => {
    const r = await runCommand(['getalldid'], () => ({ body: { status: true, message: 'Got all DIDs', result: [DID, DID.replace('a', 'b')] } }))
    expect(r.code).to.equal(0)
    expect(r.stdout.trim().split('\n')).to.have.length(2)
    expect(r.stderr).to.match(/\[INFO\] Got all DIDs/)
  })

  it('getalldid fails (exit 1) while the node is starting, as the reference\'s /api/getalldid: scripts poll it for readiness', async () => {
    const r = await runCommand(['getalldid'], (req) => new URL(req.url).pathname === '/api/getalldid'
      ? { status: 503, body: { status: false, message: 'the node is starting: its core is not up yet; retry', result: null } }
      : { body: { status: true, message: 'Got all DIDs', result: [DID] } })
    expect(r.code).to.equal(1)
    expect(r.stdout).to.equal('')
    expect(r.stderr).to.match(/\[ERROR\] the node is starting/)
  })

  it('registerdid answers the password challenge and reports the final message', async () => {
    const r = await runCommand(['registerdid', '-did', DID, '-privPWD', 'pw'], (req) => req.url.endsWith('/register')
      ? { body: { status: true, message: 'Password needed', result: { id: ID, mode: 0, hash: null, only_priv_key: false } } }
      : { body: { status: true, message: 'DID registered successfully', result: null } })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests.map((q) => q.url)).to.deep.equal([`http://localhost:20000/svc/v1/dids/${DID}/register`, 'http://localhost:20000/svc/v1/signature'])
    expect(r.requests[1]!.body).to.deep.equal({ id: ID, password: 'pw' })
    expect(r.stderr).to.match(/\[INFO\] DID registered successfully/)
  })

  it('registerdid -fp re-prompts after a wrong password', async () => {
    let calls = 0
    const r = await runCommand(['registerdid', '-did', DID, '-fp'], (req) => {
      if (req.url.endsWith('/register')) return { body: { status: true, message: 'Password needed', result: { id: ID, mode: 0, hash: null, only_priv_key: false } } }
      calls++
      return (req.body as { password: string }).password === 'right'
        ? { body: { status: true, message: 'DID registered successfully', result: null } }
        : { status: 401, body: { status: false, message: 'wrong password', result: { code: 'WRONG_PASSWORD' } } }
    }, { interactive: true, password: async () => calls === 0 ? 'wrong' : 'right' })
    expect(r.code, r.stderr).to.equal(0)
    expect(calls).to.equal(2)
  })

  it('registerdid without -did is a usage error; a server failure exits 1', async () => {
    expect((await runCommand(['registerdid'], () => { throw new Error('no') })).code).to.equal(2)
    const r = await runCommand(['registerdid', '-did', 'bad'], () => ({ status: 400, body: { status: false, message: 'Invalid DID', result: { code: 'INVALID_DID' } } }))
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] Invalid DID/)
  })

  it('addpeerdetails posts the mapping', async () => {
    const r = await runCommand(['addpeerdetails', '-peerID', PEER, '-did', DID, '-didType', '4'], () => ({ body: { status: true, message: 'Peers added successfully', result: null } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0]).to.deep.equal({ method: 'POST', url: 'http://localhost:20000/svc/v1/node/add_peers', body: { DID, PeerID: PEER, DIDType: 4 } })
    const bad = await runCommand(['addpeerdetails', '-peerID', PEER, '-did', DID, '-didType', 'x'], () => { throw new Error('no') })
    expect(bad.code).to.equal(2)
  })
})
