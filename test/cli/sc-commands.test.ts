import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCommand } from './harness.js'

const A = 'bafybmi' + 'x'.repeat(52)
const SC = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'
const DONE = { status: true, message: 'Transaction abc completed successfully', result: { transactionID: 'abc', smartContractToken: SC, blockId: '1-ff', state: '3', output: '{"count":3}' } }

describe('cli: smart-contract commands against a stub transport', function () {
  this.timeout(20_000)
  let dir = ''
  let cwd = ''
  before(() => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-cli-sc-')); cwd = process.cwd(); process.chdir(dir)
    writeFileSync(join(dir, 'counter.wasm'), Buffer.from([0, 0x61, 0x73, 0x6d, 1, 0, 0, 0]))
    writeFileSync(join(dir, 'counter.rs'), 'fn main() {}')
  })
  after(() => { process.chdir(cwd); rmSync(dir, { recursive: true, force: true }) })

  it('generatesct uploads both files as multipart and prints the id', async () => {
    const r = await runCommand(['generatesct', '-did', A, '-binCode', 'counter.wasm', '-rawCode', 'counter.rs'], () => ({ body: { status: true, message: 'Smart contract generated successfully', result: SC } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].url).to.match(/\/svc\/v1\/smart_contracts\/generate$/)
    expect(String(r.requests[0].body)).to.match(/name="binaryCodePath"; filename="counter.wasm"/).and.match(/name="rawCodePath"; filename="counter.rs"/)
    expect(r.stdout.trim()).to.equal(SC)
  })

  it('generatesct refuses wrong extensions and missing files with exit 2', async () => {
    let r = await runCommand(['generatesct', '-did', A, '-binCode', 'counter.rs', '-rawCode', 'counter.rs'], () => { throw new Error('no request expected') })
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/\.wasm/)
    r = await runCommand(['generatesct', '-did', A, '-binCode', 'missing.wasm', '-rawCode', 'counter.rs'], () => { throw new Error('no request expected') })
    expect(r.code).to.equal(2)
  })

  it('deploysmartcontract and executesmartcontract send one smartContract entry through POST /svc/v1/tx', async () => {
    let r = await runCommand(['deploysmartcontract', '-sct', SC, '-deployerAddr', A, '-rbtAmount', '2', '-privPWD', 'pw'], (req) => req.url.endsWith('/svc/v1/tx')
      ? { body: { status: true, message: 'Password needed', result: { id: 'op1', mode: 4, hash: null, only_priv_key: false } } }
      : { body: DONE })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].body).to.deep.include({ initiator: A, owner: A })
    expect((r.requests[0].body as { tokens: unknown }).tokens).to.deep.equal({ smartContract: [{ smartContractId: SC, value: 2, data: '' }] })
    r = await runCommand(['executesmartcontract', '-sct', SC, '-executorAddr', A, '-sctData', '{"increment": 3}', '-privPWD', 'pw'], (req) => req.url.endsWith('/svc/v1/tx')
      ? { body: { status: true, message: 'Password needed', result: { id: 'op2', mode: 4, hash: null, only_priv_key: false } } }
      : { body: DONE })
    expect(r.code, r.stderr).to.equal(0)
    expect((r.requests[0].body as { tokens: { smartContract: Array<{ data: string }> } }).tokens.smartContract[0].data).to.equal('{"increment": 3}')
    expect(r.stdout).to.match(/state: 3/)
    r = await runCommand(['deploysmartcontract', '-sct', SC, '-deployerAddr', A, '-rbtAmount', '0'], () => { throw new Error('no request expected') })
    expect(r.code).to.equal(2)
  })

  it('subscribesct asks the node to follow the contract', async () => {
    const r = await runCommand(['subscribesct', '-sct', SC], () => ({ body: { status: true, message: 'Smart contract subscribed successfully', result: null } }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests[0].url).to.match(/\/svc\/v1\/smart_contracts\/subscribe\?smartContractToken=Qm/)
  })
})
