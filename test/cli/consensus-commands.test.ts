import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand } from './harness.js'

const Q = Array.from({ length: 3 }, (_, i) => 'bafybmi' + String.fromCharCode(97 + i).repeat(52))
const A = 'bafybmi' + 'x'.repeat(52)
const B = 'bafybmi' + 'y'.repeat(52)
const TX = 'ab'.repeat(32)

describe('cli: quorum and transfer commands against a stub transport', function () {
  this.timeout(20_000)
  let dir = ''
  let cwd = ''
  before(() => { dir = mkdtempSync(join(tmpdir(), 'rbtnode-cli-')); cwd = process.cwd(); process.chdir(dir) })
  after(() => { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) })

  for (const [name, content] of [['objects', Q.map((d) => ({ type: 2, address: d }))], ['plain DIDs', Q]] as const) {
    it(`addquorum reads a quorum list of ${name} and adds each quorum`, async () => {
      writeFileSync(join(dir, 'quorumlist.json'), JSON.stringify(content))
      const r = await runCommand(['addquorum'], (req) => {
        const did = (req.body as { did: string }).did
        return did === Q[1] ? { status: 409, body: { status: false, message: `Failed to add quorums, quorum ${did} already exists`, result: null } } : { body: { status: true, message: 'Quorums added successfully', result: null } }
      })
      expect(r.code, r.stderr).to.equal(0)
      expect(r.requests.map((q) => (q.body as { did: string }).did)).to.deep.equal(Q)
      expect(r.stderr).to.match(/\[INFO\] Quorums added successfully \(2 new, 1 already known\)/)
    })
  }

  it('addquorum refuses a malformed list file with exit 2', async () => {
    writeFileSync(join(dir, 'bad.json'), '{"not": "a list"}')
    const r = await runCommand(['addquorum', '-quorumList', 'bad.json'], () => { throw new Error('no request expected') })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/non-empty JSON array/)
  })

  it('getallquorum prints one DID per line', async () => {
    const r = await runCommand(['getallquorum'], () => ({ body: { status: true, message: 'Got all quorums successfully', result: Q } }))
    expect(r.stdout).to.equal(Q.join('\n') + '\n')
  })

  it('setupquorum sends both passwords (flags or the documented default)', async () => {
    const r = await runCommand(['setupquorum', '-did', Q[0], '-quorumPWD', 'qq'], () => ({ body: { status: true, message: 'Quorum setup done successfully', result: null } }))
    expect(r.code).to.equal(0)
    expect(r.requests[0].body).to.deep.equal({ did: Q[0], password: 'qq', priv_password: 'mypassword' })
  })

  it('transferrbt: a decided transfer whose receiver has not taken it yet prints the id and exits 3', async () => {
    const msg = `Transaction ${TX}: the quorums signed and the tokens now belong to the receiver, but the receiver's node has not taken them yet`
    const r = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw'], (req) => {
      if (req.url.endsWith('/svc/v1/tx')) return { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      return { status: 502, body: { status: false, message: msg, result: { code: 'DELIVERY_PENDING', transactionID: TX } } }
    })
    expect(r.code, r.stderr).to.equal(3)
    expect(r.stdout).to.equal(TX + '\n')
    expect(r.stderr).to.match(/\[ERROR\] Transaction .* has not taken them yet/)
    // any other failure stays exit 1
    const other = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw'], (req) => {
      if (req.url.endsWith('/svc/v1/tx')) return { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      return { status: 409, body: { status: false, message: 'consensus failed', result: { code: 'CONSENSUS_FAILED' } } }
    })
    expect(other.code).to.equal(1)
    expect(other.stdout).to.equal('')
  })

  it('transferrbt: a transfer whose sign round is retried (SIGNING_PENDING) prints the id and exits 3 too', async () => {
    const r = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw'], (req) => {
      if (req.url.endsWith('/svc/v1/tx')) return { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      return { status: 502, body: { status: false, message: `Transaction ${TX}: consensus reached but only 4 quorums could sign the block; signing is retried automatically`, result: { code: 'SIGNING_PENDING', transactionID: TX } } }
    })
    expect(r.code, r.stderr).to.equal(3)
    expect(r.stdout).to.equal(TX + '\n')
  })

  it('transferrbt: a full disk while the sender recorded its decision names the transaction: the id is printed and the exit is 3, not a refusal; without an id it is one', async () => {
    const answer = (result: Record<string, unknown>) => (req: { url: string }): { status?: number, body: unknown } => req.url.endsWith('/svc/v1/tx')
      ? { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      : { status: 507, body: { status: false, message: 'the disk holding the node\'s data is full', result } }
    const r = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw'], answer({ code: 'INSUFFICIENT_STORAGE', transactionID: TX }))
    expect(r.code, r.stderr).to.equal(3)
    expect(r.stdout).to.equal(TX + '\n')
    const refused = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw'], answer({ code: 'INSUFFICIENT_STORAGE' }))
    expect(refused.code, refused.stderr).to.equal(1)
    expect(refused.stdout).to.equal('')
  })

  it('transferrbt completes the two-step flow and prints the transaction id', async () => {
    const r = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw'], (req) => {
      if (req.url.endsWith('/svc/v1/tx')) return { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      return { body: { status: true, message: `Transaction ${TX} completed successfully`, result: { transactionID: TX, mintedNFTChildren: null } } }
    })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].body).to.deep.equal({ initiator: A, owner: B, tokens: { rbt: '1.5' }, memo: 'Test transaction' })
    expect(r.requests[1].body).to.deep.equal({ id: 'id1', password: 'pw' })
    expect(r.stderr).to.match(new RegExp(`\\[INFO\\] Transaction ${TX} completed successfully`))
    expect(r.stdout).to.equal(TX + '\n')
  })

  it('transferrbt logs the reason at [ERROR] and exits non-zero on failure', async () => {
    const r = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '5'], (req) => {
      if (req.url.endsWith('/svc/v1/tx')) return { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      return { status: 422, body: { status: false, message: 'insufficient balance: 1.000 RBT free, 5.000 RBT needed', result: { code: 'INSUFFICIENT_BALANCE' } } }
    })
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] insufficient balance/)
  })

  it('transferrbt rejects a malformed amount before calling the node', async () => {
    const r = await runCommand(['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', 'ten'], () => { throw new Error('no request expected') })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/-rbtAmount must be a positive number/)
  })
})
