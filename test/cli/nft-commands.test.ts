import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand, type Recorded } from './harness.js'

const A = 'bafybmi' + 'x'.repeat(52)
const B = 'bafybmi' + 'y'.repeat(52)
const NFT = 'Qm' + 'n'.repeat(44)
const TX = 'cd'.repeat(32)

const challenge = { body: { status: true, message: 'Password needed', result: { id: 'op1', mode: 4, hash: null, only_priv_key: false } } }
const txDone = { body: { status: true, message: `Transaction ${TX} completed successfully`, result: { transactionID: TX, mintedNFTChildren: null } } }
/** The node's answers to a two-step NFT transaction: a challenge, then the final envelope. */
const twoStep = (req: Recorded): { status?: number, body: unknown } => req.url.endsWith('/svc/v1/tx') ? challenge : txDone

describe('cli: NFT commands against a stub transport', function () {
  this.timeout(20_000)
  let dir = ''
  let cwd = ''
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-cli-nft-'))
    cwd = process.cwd()
    process.chdir(dir)
    writeFileSync(join(dir, 'meta.json'), '{"name":"cli picture"}')
    writeFileSync(join(dir, 'pic.bin'), Buffer.from([0, 1, 2, 255, 13, 10, 45, 45]))
    writeFileSync(join(dir, 'bad.json'), 'not json')
  })
  after(() => { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) })

  it('create-nft uploads both files as multipart with the DID and prints the NFT id', async () => {
    const r = await runCommand(['create-nft', '-did', A, '-metadata', 'meta.json', '-artifact', 'pic.bin', '-port', '20007'],
      () => ({ body: { status: true, message: 'NFT Token generated successfully', result: NFT } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests).to.have.length(1)
    const req = r.requests[0]
    expect(req.method).to.equal('POST')
    expect(req.url).to.equal('http://localhost:20007/svc/v1/nfts/generate')
    const body = req.body as string
    expect(body).to.match(/name="did"\r\n\r\nbafybmix+\r\n/)
    expect(body).to.match(/name="artifact_name"\r\n\r\npic\.bin\r\n/)
    expect(body).to.include('name="metadata"; filename="meta.json"')
    expect(body).to.include('{"name":"cli picture"}')
    expect(body).to.include('name="artifact"; filename="pic.bin"')
    expect(body).to.include(Buffer.from([0, 1, 2, 255, 13, 10, 45, 45]).toString('latin1'))
    expect(r.stdout).to.equal(NFT + '\n')
    expect(r.stderr).to.match(/\[INFO\] NFT Token generated successfully/)
    expect(r.stderr).to.include(`[INFO] NFT id ${NFT}`)
  })

  it('create-nft answers a password challenge when the node asks for one', async () => {
    const r = await runCommand(['create-nft', '-did', A, '-metadata', 'meta.json', '-artifact', 'pic.bin', '-privPWD', 'pw'], (req) =>
      req.url.endsWith('/generate') ? challenge : { body: { status: true, message: 'NFT Token generated successfully', result: NFT } })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[1].body).to.deep.equal({ id: 'op1', password: 'pw' })
    expect(r.stdout).to.equal(NFT + '\n')
  })

  it('create-nft refuses missing flags, unreadable files and non-JSON metadata before calling the node', async () => {
    const none = (): never => { throw new Error('no request expected') }
    let r = await runCommand(['create-nft', '-did', A, '-artifact', 'pic.bin'], none)
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/\[ERROR\] -metadata is required/)
    r = await runCommand(['create-nft', '-did', A, '-metadata', 'missing.json', '-artifact', 'pic.bin'], none)
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/-metadata: cannot read missing\.json: ENOENT/)
    r = await runCommand(['create-nft', '-did', A, '-metadata', 'bad.json', '-artifact', 'pic.bin'], none)
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/is not a JSON document/)
  })

  it("create-nft reports the node's refusal at [ERROR] with exit 1", async () => {
    const r = await runCommand(['create-nft', '-did', A, '-metadata', 'meta.json', '-artifact', 'pic.bin'],
      () => ({ status: 403, body: { status: false, message: `DID does not have an access: ${A} is not hosted on this node`, result: { code: 'FORBIDDEN' } } }))
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] DID does not have an access/)
    expect(r.stdout).to.equal('')
  })

  it('deploy-nft sends one tokens.nft entry with value and data, completes the password step, prints the transaction id', async () => {
    const r = await runCommand(['deploy-nft', '-deployerAddr', A, '-nft', NFT, '-nftValue', '1.5', '-nftData', 'first edition', '-privPWD', 'pw'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].body).to.deep.equal({ initiator: A, owner: A, tokens: { nft: [{ nftId: NFT, value: 1.5, data: 'first edition' }], transferNftOwnership: false }, memo: '' })
    expect(r.requests[1].body).to.deep.equal({ id: 'op1', password: 'pw' })
    expect(r.stdout).to.equal(TX + '\n')
    expect(r.stderr).to.include(`[INFO] Transaction ${TX} completed successfully`)
    expect(r.stderr).to.include(`[INFO] NFT ${NFT} deployed by ${A}, transaction ${TX}`)
  })

  it('deploy-nft uses the documented default password when none is given', async () => {
    const r = await runCommand(['deploy-nft', '-deployerAddr', A, '-nft', NFT, '-nftValue', '1'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[1].body).to.deep.equal({ id: 'op1', password: 'mypassword' })
  })

  it('deploy-nft and execute-nft refuse a missing or malformed -nftValue with exit 2', async () => {
    const none = (): never => { throw new Error('no request expected') }
    for (const argv of [
      ['deploy-nft', '-deployerAddr', A, '-nft', NFT],
      ['deploy-nft', '-deployerAddr', A, '-nft', NFT, '-nftValue', 'ten'],
      ['execute-nft', '-executorAddr', A, '-nft', NFT, '-nftValue', '0'],
      ['execute-nft', '-executorAddr', A, '-nft', NFT, '-nftValue', '1.2345']
    ]) {
      const r = await runCommand(argv, none)
      expect(r.code, argv.join(' ')).to.equal(2)
      expect(r.stderr).to.match(/\[ERROR\] -nftValue/)
    }
  })

  it('execute-nft without a receiver executes in place (owner = executor, no transfer)', async () => {
    const r = await runCommand(['execute-nft', '-executorAddr', A, '-nft', NFT, '-nftValue', '1', '-nftData', 'state 2', '-transComment', 'update'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].body).to.deep.equal({ initiator: A, owner: A, tokens: { nft: [{ nftId: NFT, value: 1, data: 'state 2' }], transferNftOwnership: false }, memo: 'update' })
    expect(r.stderr).to.include(`[INFO] NFT ${NFT} executed by ${A}, transaction ${TX}`)
  })

  it('execute-nft with -receiverAddr transfers ownership', async () => {
    const r = await runCommand(['execute-nft', '-executorAddr', A, '-receiverAddr', B, '-nft', NFT, '-nftValue', '1'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].body).to.deep.equal({ initiator: A, owner: B, tokens: { nft: [{ nftId: NFT, value: 1, data: '' }], transferNftOwnership: true }, memo: '' })
    expect(r.stderr).to.include(`[INFO] NFT ${NFT} transferred from ${A} to ${B}, transaction ${TX}`)
  })

  it('execute-nft by a non-owner: the final refusal is an [ERROR] line and exit 1', async () => {
    const r = await runCommand(['execute-nft', '-executorAddr', B, '-nft', NFT, '-nftValue', '1'], (req) => req.url.endsWith('/svc/v1/tx')
      ? challenge
      : { status: 403, body: { status: false, message: `${B} is not the owner of NFT ${NFT} (the owner is ${A})`, result: { code: 'FORBIDDEN' } } })
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] bafybmiy+ is not the owner of NFT/)
    expect(r.stdout).to.equal('')
  })

  it('execute-nft --json prints the final envelope', async () => {
    const r = await runCommand(['execute-nft', '-executorAddr', A, '-nft', NFT, '-nftValue', '1', '--json'], twoStep)
    expect(r.code, r.stderr).to.equal(0)
    expect(JSON.parse(r.stdout)).to.deep.equal(txDone.body)
  })

  it('subscribe-nft asks the node to follow the NFT', async () => {
    const r = await runCommand(['subscribe-nft', '-nft', NFT, '-port', '20009'], () => ({ body: { status: true, message: 'NFT subscribed successfully', result: null } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0]).to.deep.include({ method: 'GET', url: `http://localhost:20009/svc/v1/nfts/subscribe?nft=${NFT}` })
    expect(r.stderr).to.match(/\[INFO\] NFT subscribed successfully/)
    expect(r.stderr).to.include(`[INFO] following NFT ${NFT}`)
  })

  it('subscribe-nft reports a malformed id at [ERROR] with exit 1', async () => {
    const r = await runCommand(['subscribe-nft', '-nft', 'nope'], () => ({ status: 400, body: { status: false, message: 'NFT id "nope" is not a valid CID (Qm…, 46 characters)', result: null } }))
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] NFT id "nope" is not a valid CID/)
  })
  it('-quorumType 2 is accepted; another quorum type is refused before calling the node', async () => {
    const ok = await runCommand(['deploy-nft', '-deployerAddr', A, '-nft', NFT, '-nftValue', '1', '-quorumType', '2'], twoStep)
    expect(ok.code, ok.stderr).to.equal(0)
    const r = await runCommand(['execute-nft', '-executorAddr', A, '-nft', NFT, '-nftValue', '1', '-quorumType', '1'], () => { throw new Error('no request expected') })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/\[ERROR\] -quorumType 1 is not available/)
  })

  it('fetch-nft asks the node to download the files and prints the folder', async () => {
    const r = await runCommand(['fetch-nft', '-nft', NFT], () => ({ body: { status: true, message: 'NFT fetched successfully', result: { path: `/data/nft/${NFT}` } } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0]).to.deep.include({ method: 'GET', url: `http://localhost:20000/svc/v1/fetch-nft?nft=${NFT}` })
    expect(r.stdout).to.equal(`/data/nft/${NFT}\n`)
    expect(r.stderr).to.include(`[INFO] NFT ${NFT} files in /data/nft/${NFT}`)
    const miss = await runCommand(['fetch-nft', '-nft', NFT], () => ({ status: 404, body: { status: false, message: `Failed to fetch NFT ${NFT}: no peer holds it`, result: null } }))
    expect(miss.code).to.equal(1)
    expect(miss.stderr).to.match(/\[ERROR\] Failed to fetch NFT/)
  })
})
