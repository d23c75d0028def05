import { expect } from 'chai'
import { mkdtempSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createApp } from '../../src/api/server/app.js'
import { ScFileStore } from '../../src/token-files/smart-contracts/sc-files.js'
import { ContractEngine } from '../../src/contracts/sandbox.js'
import { compileWat, exampleContract } from '../../src/contracts/build-examples.js'
import { CallbackDispatcher } from '../../src/node/smart-contracts/callbacks.js'
import { ScService } from '../../src/node/smart-contracts/sc-service.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { silentLogger } from '../../src/util/logger.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { offlineAssetDeps } from './stub-assets.js'

const ALICE = 'bafybmi' + 'a'.repeat(52)
const UNKNOWN_ID = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'

describe('api: smart-contract routes (bad input)', function () {
  this.timeout(30_000)
  const tokens = new Map<string, unknown>()
  const callbacks = new Map<string, string[]>()
  const contracts = new ScService({
    files: new ScFileStore(mkdtempSync(join(tmpdir(), 'rbt-sc-'))),
    engine: new ContractEngine(),
    ...offlineAssetDeps(tokens, ALICE),
    callbacks: new CallbackDispatcher({
      store: { get: async (id) => callbacks.get(id), put: async (id, urls) => { callbacks.set(id, urls) } },
      log: silentLogger,
      ownPorts: () => [20000],
      lookup: async (host) => host === 'example.org' ? [{ address: '93.184.216.34', family: 4 }] : []
    }),
    port: 20000
  })
  const services = { ...unusedIdentity(), ...unusedTokens(), ...unusedConsensus(), contracts, node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  const app = createApp(services, { version: 't' })
  let counter: Uint8Array
  const source = new Blob(['fn main() {}'])
  before(async () => { counter = new Uint8Array(await readFile((await exampleContract('counter')).wasm)) })

  const upload = async (did: string, bin?: [Blob, string], raw?: [Blob, string]): Promise<{ status: number, env: { status: boolean, message: string, result: unknown } }> => {
    const form = new FormData()
    form.append('did', did)
    if (bin !== undefined) form.append('binaryCodePath', bin[0], bin[1])
    if (raw !== undefined) form.append('rawCodePath', raw[0], raw[1])
    const res = await app.request('/svc/v1/smart_contracts/generate', { method: 'POST', body: form })
    return { status: res.status, env: await res.json() as never }
  }
  const json = async (path: string, body: unknown): Promise<{ status: number, env: { status: boolean, message: string } }> => {
    const res = await app.request(path, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) })
    return { status: res.status, env: await res.json() as never }
  }

  it('generates a content-addressed id from a valid module', async () => {
    const r1 = await upload(ALICE, [new Blob([Buffer.from(counter)]), 'counter.wasm'], [source, 'counter.rs'])
    expect(r1.status, r1.env.message).to.equal(200)
    expect(r1.env.message).to.equal('Smart contract generated successfully')
    expect(r1.env.result).to.match(/^Qm[1-9A-HJ-NP-Za-km-z]{44}$/)
    const r2 = await upload(ALICE, [new Blob([Buffer.from(counter)]), 'again.wasm'], [source, 'again.rs'])
    expect(r2.env.result).to.equal(r1.env.result)
  })

  it('refuses wrong extensions, invalid WASM, modules outside the ABI, missing files, oversize uploads and unknown DIDs', async () => {
    let r = await upload(ALICE, [new Blob([Buffer.from(counter)]), 'counter.bin'], [source, 'counter.rs'])
    expect([r.status, r.env.status]).to.deep.equal([400, false])
    expect(r.env.message).to.match(/binaryCodePath must be a \.wasm file/)
    r = await upload(ALICE, [new Blob([Buffer.from(counter)]), 'counter.wasm'], [source, 'counter.txt'])
    expect(r.env.message).to.match(/rawCodePath must be a \.rs file/)
    r = await upload(ALICE, [new Blob(['not wasm at all']), 'x.wasm'], [source, 'x.rs'])
    expect(r.status).to.equal(400)
    expect(r.env.message).to.match(/invalid WASM/)
    const importing = await compileWat('imp', '(module (import "env" "now" (func)) (memory (export "memory") 1) (func (export "alloc") (param i32) (result i32) (i32.const 0)) (func (export "execute") (param i32 i32 i32 i32) (result i32) (i32.const 0)))')
    r = await upload(ALICE, [new Blob([Buffer.from(importing)]), 'imp.wasm'], [source, 'imp.rs'])
    expect(r.env.message).to.match(/no imports/)
    r = await upload(ALICE, undefined, [source, 'x.rs'])
    expect(r.env.message).to.match(/binaryCodePath/)
    r = await upload(ALICE, [new Blob([Buffer.from(counter)]), 'counter.wasm'])
    expect(r.env.message).to.match(/rawCodePath/)
    r = await upload(ALICE, [new Blob([new Uint8Array(300 * 1024)]), 'big.wasm'], [source, 'big.rs'])
    expect(r.status).to.equal(413)
    r = await upload(ALICE, [new Blob([new Uint8Array(3 * 1024 * 1024)]), 'huge.wasm'], [source, 'huge.rs'])
    expect(r.status).to.equal(413)
    r = await upload('bafybmi' + 'b'.repeat(52), [new Blob([Buffer.from(counter)]), 'counter.wasm'], [source, 'counter.rs'])
    expect(r.status).to.equal(403)
    r = await upload('nope', [new Blob([Buffer.from(counter)]), 'counter.wasm'], [source, 'counter.rs'])
    expect([r.status, r.env.message]).to.deep.equal([400, 'Invalid DID'])
  })

  it('register_callback takes only http(s) URLs (keys in either case) for a valid contract id', async () => {
    const scId = (await upload(ALICE, [new Blob([Buffer.from(counter)]), 'counter.wasm'], [source, 'counter.rs'])).env.result as string
    let r = await json('/svc/v1/smart_contracts/register_callback', { CallBackURL: 'ftp://example.org/x', SmartContractToken: scId })
    expect([r.status, r.env.status]).to.deep.equal([400, false])
    expect(r.env.message).to.match(/http or https/)
    r = await json('/svc/v1/smart_contracts/register_callback', { callBackURL: 'not a url', smartContractToken: scId })
    expect(r.env.message).to.match(/not a URL/)
    r = await json('/svc/v1/smart_contracts/register_callback', { CallBackURL: 'http://127.0.0.1:9/cb', SmartContractToken: 'nope' })
    expect(r.status).to.equal(400)
    r = await json('/svc/v1/smart_contracts/register_callback', { callBackURL: 'https://example.org/cb', smartContractToken: scId })
    expect(r.env.status, r.env.message).to.equal(true)
    expect(callbacks.get(scId)).to.deep.equal(['https://example.org/cb'])
  })

  it('register_callback: the contract must exist here (404); metadata, the node\'s own API and a sixth URL are refused', async () => {
    const scId = (await upload(ALICE, [new Blob([Buffer.from(counter)]), 'counter.wasm'], [source, 'counter.rs'])).env.result as string
    let r = await json('/svc/v1/smart_contracts/register_callback', { CallBackURL: 'http://127.0.0.1:9/cb', SmartContractToken: UNKNOWN_ID })
    expect([r.status, r.env.status]).to.deep.equal([404, false])
    expect(callbacks.get(UNKNOWN_ID)).to.equal(undefined)
    for (const url of ['http://169.254.169.254/latest/meta-data/', 'http://[fe80::1]/', 'http://127.0.0.1:20000/svc/v1/node/shutdown', 'http://0.0.0.0:8080/']) {
      r = await json('/svc/v1/smart_contracts/register_callback', { CallBackURL: url, SmartContractToken: scId })
      expect([r.status, r.env.status], url).to.deep.equal([400, false])
    }
    const before = callbacks.get(scId)?.length ?? 0
    for (let i = before; i < 5; i++) {
      r = await json('/svc/v1/smart_contracts/register_callback', { CallBackURL: `http://127.0.0.1:${9000 + i}/cb`, SmartContractToken: scId })
      expect(r.env.status, r.env.message).to.equal(true)
    }
    r = await json('/svc/v1/smart_contracts/register_callback', { CallBackURL: 'http://127.0.0.1:9999/cb', SmartContractToken: scId })
    expect([r.status, r.env.status]).to.deep.equal([409, false])
    expect(callbacks.get(scId)).to.have.length(5)
  })

  it('answers clear errors for unknown or malformed contract ids and bad transactions', async () => {
    let res = await app.request('/svc/v1/smart_contracts/not-a-cid/chain')
    expect(res.status).to.equal(400)
    res = await app.request(`/svc/v1/smart_contracts/${UNKNOWN_ID}/chain`)
    expect(res.status).to.equal(404)
    res = await app.request(`/svc/v1/smart_contracts/fetch?smartContractToken=${UNKNOWN_ID}`)
    expect(res.status).to.equal(503)
    res = await app.request('/svc/v1/smart_contracts/subscribe')
    expect(res.status).to.equal(400)
    let r = await json('/svc/v1/tx', { initiator: ALICE, owner: ALICE, tokens: { smartContract: [{ smartContractId: UNKNOWN_ID, value: 1, data: '' }] } })
    expect(r.status).to.equal(404)
    r = await json('/svc/v1/tx', { initiator: ALICE, owner: ALICE, tokens: { smartContract: [{ smartContractId: UNKNOWN_ID, value: 1 }, { smartContractId: UNKNOWN_ID, value: 1 }] } })
    expect([r.status, r.env.message]).to.deep.equal([400, 'one smart contract per transaction: tokens.smartContract must hold exactly one entry'])
    r = await json('/svc/v1/tx', { initiator: ALICE, owner: ALICE, tokens: { rbt: 1, smartContract: [{ smartContractId: UNKNOWN_ID, value: 1 }] } })
    expect(r.status).to.equal(400)
    // SPEC: rbt is 0 when no RBT is transferred: the contract call goes on (to the unknown-contract 404)
    for (const rbt of [0, '0', '0.000']) {
      r = await json('/svc/v1/tx', { initiator: ALICE, owner: ALICE, tokens: { rbt, smartContract: [{ smartContractId: UNKNOWN_ID, value: 1, data: '' }] } })
      expect([r.status, String(rbt)]).to.deep.equal([404, String(rbt)])
    }
  })

  it('a deploy whose first call fails is refused before anything is signed', async () => {
    const trap = await compileWat('trap', '(module (memory (export "memory") 1) (func (export "alloc") (param i32) (result i32) (i32.const 64)) (func (export "execute") (param i32 i32 i32 i32) (result i32) unreachable))')
    const made = await upload(ALICE, [new Blob([Buffer.from(trap)]), 'trap.wasm'], [source, 'trap.rs'])
    expect(made.env.status, made.env.message).to.equal(true)
    const r = await json('/svc/v1/tx', { initiator: ALICE, owner: ALICE, tokens: { smartContract: [{ smartContractId: made.env.result, value: 1, data: '' }] } })
    expect([r.status, r.env.status]).to.deep.equal([400, false])
    expect(r.env.message).to.match(/Smart contract deploy failed: the contract trapped/)
  })
})
