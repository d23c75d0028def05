import { expect } from 'chai'
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { RbtClient } from '../../src/client/rbt-client.js'
import type { ScCallbackEvent, ScChainItem, ScListItem } from '../../src/api/contract/sc-results.js'
import { compileWat, exampleContract } from '../../src/contracts/build-examples.js'
import { complete, quorumNetwork, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

interface Done { status: boolean, message: string, result: unknown }

/** `rbtZero`: the body also says `rbt: 0` (SPEC: "0 when no RBT is transferred") */
async function scTx (client: RbtClient, initiator: string, smartContractId: string, data: string, value = 1, rbtZero = false): Promise<Done> {
  const first = await client.envelope('txInitiate', { body: { initiator, owner: initiator, tokens: { ...(rbtZero ? { rbt: 0 } : {}), smartContract: [{ smartContractId, value, data }] }, memo: 'sc e2e' } })
  if (!first.status) return first
  return await complete(client, first, USER_PASSWORD)
}

async function chainOf (client: RbtClient, id: string): Promise<ScChainItem[]> {
  const env = await client.envelope('scChain', { params: { contract_id: id } })
  return env.status ? env.result as ScChainItem[] : []
}

async function generate (client: RbtClient, did: string, wasm: Uint8Array, name: string): Promise<Done> {
  return await client.envelope('scGenerate', {
    form: { fields: { did }, files: { binaryCodePath: { filename: `${name}.wasm`, data: wasm }, rawCodePath: { filename: `${name}.rs`, data: Buffer.from(`// ${name}\n`) } } }
  })
}

/** One ABI v1 contract that behaves on deploy and misbehaves on demand: "trap", "loop" or "bomb". */
const HOSTILE = `(module
  (memory (export "memory") 1)
  (global $heap (mut i32) (i32.const 1024))
  (data (i32.const 0) "ok")
  (func $alloc (export "alloc") (param $n i32) (result i32) (local $p i32)
    (local.set $p (global.get $heap)) (global.set $heap (i32.add (global.get $heap) (local.get $n))) (local.get $p))
  (func (export "execute") (param $sp i32) (param $sl i32) (param $ip i32) (param $il i32) (result i32)
    (local $r i32) (local $c i32)
    (if (i32.gt_u (local.get $il) (i32.const 0)) (then (local.set $c (i32.load8_u (local.get $ip)))))
    (if (i32.eq (local.get $c) (i32.const 116)) (then unreachable))
    (if (i32.eq (local.get $c) (i32.const 108)) (then (loop $forever (br $forever))))
    (if (i32.eq (local.get $c) (i32.const 98))
      (then (block $full (loop $grow (br_if $full (i32.eq (memory.grow (i32.const 16)) (i32.const -1))) (br $grow))) unreachable))
    (local.set $r (call $alloc (i32.const 20)))
    (i32.store (local.get $r) (i32.const 0))
    (i32.store offset=4 (local.get $r) (i32.const 0)) (i32.store offset=8 (local.get $r) (i32.const 2))
    (i32.store offset=12 (local.get $r) (i32.const 0)) (i32.store offset=16 (local.get $r) (i32.const 2))
    (local.get $r)))`

describe('e2e: smart contracts run by the nodes and their quorums', function () {
  this.timeout(600_000)
  let net: QuorumNetwork
  let server: Server
  let callbackUrl = ''
  const events: ScCallbackEvent[] = []
  let refusedOnce = false
  let scId = ''

  before(async () => {
    // the callback receiver: refuses its first request (the node must retry), records the rest
    server = createServer((req, res) => {
      let body = ''
      req.on('data', (c: Buffer) => { body += c.toString('utf8') })
      req.on('end', () => {
        if (!refusedOnce) { refusedOnce = true; res.writeHead(503).end(); return }
        events.push(JSON.parse(body) as ScCallbackEvent)
        res.writeHead(200, { 'content-type': 'application/json' }).end('{"message":"ok"}')
      })
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    callbackUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}/events`
    net = await quorumNetwork()
  })
  after(async () => { await new Promise((resolve) => server?.close(resolve)) })
  // a failure shows what the two user nodes logged last
  afterEach(function () {
    if (this.currentTest?.state !== 'failed' || net === undefined) return
    for (const [name, n] of [['A', net.a], ['B', net.b]] as const) process.stderr.write(`--- last log lines of node ${name} ---\n${n.logs.slice(-6000)}\n`)
  })

  it('generate, deploy and three executions on two nodes: every party agrees on chain and state; the subscriber sees every state; one callback per state', async () => {
    const { a, b, alice, bob } = net
    const counter = new Uint8Array(await readFile((await exampleContract('counter')).wasm))
    const made = await generate(a.client, alice, counter, 'counter')
    expect(made.status, made.message).to.equal(true)
    scId = made.result as string
    expect(scId).to.match(/^Qm/)
    expect((await generate(a.client, alice, counter, 'counter')).result, 'content addressed').to.equal(scId)

    const reg = await a.client.envelope('scRegisterCallback', { body: { CallBackURL: callbackUrl, SmartContractToken: scId } })
    expect(reg.status, reg.message).to.equal(true)

    let done = await scTx(a.client, alice, scId, '')
    expect(done.status, done.message).to.equal(true)
    expect(done.result).to.deep.include({ state: '0' })

    // B follows the contract: it fetches the code and syncs the chain
    await b.client.call('scSubscribe', { query: { smartContractToken: scId } })
    await waitFor(async () => {
      const mine = ((await b.client.call('scList')).result ?? []).find((x: ScListItem) => x.smartContractToken === scId)
      return mine?.has_files === true && (await chainOf(b.client, scId)).length === 1
    }, { timeoutMs: 180_000, what: 'B to fetch the code and the deployed chain' })

    done = await scTx(a.client, alice, scId, '{"increment": 2}', 1, true)
    expect(done.status, done.message).to.equal(true)
    expect(done.result).to.deep.include({ state: '2', output: '{"count":2}' })
    await waitFor(async () => (await chainOf(b.client, scId)).length === 2, { timeoutMs: 60_000, what: 'B to see state 2' })

    done = await scTx(b.client, bob, scId, '{"increment": 5}')
    expect(done.status, done.message).to.equal(true)
    expect(done.result).to.deep.include({ state: '7' })
    const bobTx = (done.result as { transactionID: string }).transactionID
    const bobs = (await b.client.call('txByDid', { params: { did: bob, token_type: 'smartContract' } })).result as Array<{ transaction_id?: string, transactionID?: string, TransactionID?: string }>
    expect(JSON.stringify(bobs)).to.include(bobTx)
    await waitFor(async () => (await chainOf(a.client, scId)).length === 3, { timeoutMs: 60_000, what: 'A to see the state B recorded' })

    done = await scTx(a.client, alice, scId, '{"increment": 10}')
    expect(done.status, done.message).to.equal(true)
    expect(done.result).to.deep.include({ state: '17' })
    await waitFor(async () => (await chainOf(b.client, scId)).length === 4, { timeoutMs: 60_000, what: 'B to see state 17' })

    const listedOnB = ((await b.client.call('scList')).result ?? []).find((x: ScListItem) => x.smartContractToken === scId)
    expect(listedOnB).to.include({ state: '17', deployer: alice, value: 1 })
    const onA = await chainOf(a.client, scId)
    const onB = await chainOf(b.client, scId)
    expect(onA.map((x) => x.state)).to.deep.equal(['0', '2', '7', '17'])
    expect(onA.map((x) => x.data)).to.deep.equal(['', '{"increment": 2}', '{"increment": 5}', '{"increment": 10}'])
    expect(onA.map((x) => x.initiator)).to.deep.equal([alice, alice, bob, alice])
    expect(onB.map((x) => x.block_id)).to.deep.equal(onA.map((x) => x.block_id))
    expect(onB.map((x) => x.stateHash)).to.deep.equal(onA.map((x) => x.stateHash))
    // every quorum that holds blocks of the contract holds the same ones
    let quorumsWithTip = 0
    for (const q of net.quorums) {
      const held = await chainOf(q.client, scId)
      for (const item of held) expect(onA.map((x) => x.block_id), 'a quorum block').to.include(item.block_id)
      if (held.some((x) => x.block_id === onA[3].block_id)) quorumsWithTip++
    }
    expect(quorumsWithTip, 'the signers of the last state hold it').to.be.at.least(5)

    // a node that never saw the contract downloads its files, each checked against the id
    const q6 = net.quorums[6]
    const fetched = await q6.client.call('scFetch', { query: { smartContractToken: scId } })
    const folder = (fetched.result as { path: string }).path
    expect(new Uint8Array(await readFile(join(folder, 'binaryCodeFile.wasm')))).to.deep.equal(counter)
    expect((await q6.client.call('scFetch', { query: { smartContractToken: scId } })).message).to.equal('Smart contract files already exist')

    // one event per state, after a refused first delivery was retried
    await waitFor(() => events.length >= 4, { timeoutMs: 60_000, what: 'four callback events' })
    await new Promise((resolve) => setTimeout(resolve, 1000))
    expect(refusedOnce).to.equal(true)
    expect(events.map((e) => e.blockId).sort()).to.deep.equal(onA.map((x) => x.block_id).sort())
    expect(events.map((e) => e.state).sort()).to.deep.equal(['0', '17', '2', '7'])
    for (const e of events) expect(e).to.include({ smartContractToken: scId, smart_contract_hash: scId, event: 'smart_contract_state' })
  })

  it('a trapping call, an infinite loop and a memory bomb each fail the transaction and change nothing', async () => {
    const { a, alice } = net
    const made = await generate(a.client, alice, await compileWat('hostile', HOSTILE), 'hostile')
    expect(made.status, made.message).to.equal(true)
    const id = made.result as string
    const deployed = await scTx(a.client, alice, id, '')
    expect(deployed.status, deployed.message).to.equal(true)
    const before = await chainOf(a.client, id)
    expect(before).to.have.length(1)
    for (const [data, reason] of [['trap', /trapped/], ['loop', /ran out of fuel/], ['bomb', /trapped/]] as const) {
      const r = await scTx(a.client, alice, id, data)
      expect(r.status, `${data}: ${r.message}`).to.equal(false)
      expect(r.message).to.match(reason)
      expect(await chainOf(a.client, id), `${data} changed the chain`).to.deep.equal(before)
      const listed = ((await a.client.call('scList')).result ?? []).find((x: ScListItem) => x.smartContractToken === id)
      expect(listed).to.include({ status: 'Free', state: 'ok', latest_block_id: before[0].block_id })
    }
    // the contract still works afterwards
    const ok = await scTx(a.client, alice, id, 'fine')
    expect(ok.status, ok.message).to.equal(true)
    expect(await chainOf(a.client, id)).to.have.length(2)
    // the counter contract from the first test is unchanged by all this
    if (scId !== '') expect((await chainOf(a.client, scId)).map((x) => x.state)).to.deep.equal(['0', '2', '7', '17'])
  })
})
