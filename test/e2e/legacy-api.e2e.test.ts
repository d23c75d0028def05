import { expect } from 'chai'
import { rmSync } from 'node:fs'
import { decodeBlockEnvelope } from '../../src/tokenchain/block.js'
import { testPng } from '../helpers/identity.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A network built and driven only through the reference's `/api` routes, as a script written for
 * the reference drives nodes (docs/api.md, "The reference's /api routes"): readiness by polling
 * GET /api/getalldid, DIDs made with the multipart createdid, every signing step answered through
 * /api/signature-response with the DID's password. The only other steps start and stop processes.
 * Then a sender killed in the middle of a transfer, and release-all-locked-tokens on both sides of
 * the decision.
 */

const PWD = 'legacy-e2e-pw'

interface Env { status: boolean, message: string, result: any, [k: string]: any }

/** A node process seen only through its /api routes. */
class Api {
  constructor (public p: NodeProcess) {}
  get peerId (): string { return this.p.peerId }
  async get (path: string, query: Record<string, string> = {}): Promise<Env> {
    const res = await fetch(`${this.p.url}/api/${path}?${new URLSearchParams(query).toString()}`)
    expect(res.status, `GET /api/${path}`).to.equal(200)
    return await res.json() as Env
  }

  async post (path: string, body?: unknown): Promise<Env> {
    const init: RequestInit = { method: 'POST' }
    if (body instanceof FormData) init.body = body
    else if (body !== undefined) { init.body = JSON.stringify(body); init.headers = { 'content-type': 'application/json' } }
    const res = await fetch(`${this.p.url}/api/${path}`, init)
    const env = await res.json() as Env
    expect(res.status, `POST /api/${path}: ${env.message}`).to.equal(200)
    return env
  }

  /** An async route: its challenges answered with the password until the final envelope (legacy-api.md §1.5). */
  async signed (path: string, body: unknown): Promise<Env> {
    let env = await this.post(path, body)
    for (let i = 0; i < 8 && env.status && /^(Password|Signature) needed$/.test(env.message); i++) {
      expect(env.message).to.equal('Password needed')
      env = await this.post('signature-response', { id: env.result.id, mode: env.result.mode, password: PWD })
    }
    return env
  }

  /** A lite DID (type 4), or a basic one (type 0) from a 256×256 image uploaded as the Go client names it. */
  async createDid (type: 0 | 4 = 4): Promise<string> {
    const form = new FormData()
    form.set('did_config', JSON.stringify({ type, priv_pwd: PWD, quorum_pwd: PWD }))
    if (type === 0) form.set('image', new Blob([Buffer.from(testPng(256, 256, 7))], { type: 'image/png' }), 'image.png')
    const env = await this.post('createdid', form)
    expect(env, env.message).to.deep.include({ status: true, message: 'DID created successfully' })
    expect(env.result.did).to.match(/^bafybmi[A-Za-z0-9]{52}$/)
    return env.result.did
  }

  async account (did: string): Promise<{ rbt_amount: number, locked_rbt: number, pledged_rbt: number }> {
    const env = await this.get('get-account-info', { did })
    expect(env.status, env.message).to.equal(true)
    return env.account_info[0]
  }

  /** milli-RBT free and locked of a DID, as get-account-info reports them */
  async milli (did: string): Promise<{ free: number, locked: number }> {
    const a = await this.account(did)
    return { free: Math.round(a.rbt_amount * 1000), locked: Math.round(a.locked_rbt * 1000) }
  }
}

const txidOf = (env: Env): string => {
  const m = /([0-9a-f]{64})/.exec(env.message)
  expect(m, env.message).to.not.equal(null)
  return m![1]
}

describe('e2e: a network driven only through the reference\'s /api routes', function () {
  this.timeout(240_000)
  // three processes host the seven quorum DIDs (3 + 2 + 2); A hosts alice, B hosts bob
  const layout = [3, 2, 2]
  const procs: NodeProcess[] = []
  const owned: NodeProcess[] = []
  let qs: Api[] = []
  let a: Api
  let b: Api
  const quorumDids: string[] = []
  const quorumHost: Api[] = []
  let alice = ''
  let bob = ''
  const started = Date.now()
  /** how long each step took, printed at the end (E2E_TIMING=1) */
  const marks: string[] = []
  let last = started
  const mark = (what: string): void => { const now = Date.now(); marks.push(`${what} ${((now - last) / 1000).toFixed(1)}s`); last = now }

  const launch = (n: number, p?: NodeProcess, env: Record<string, string> = {}): NodeProcess =>
    new NodeProcess(p === undefined
      ? { n, extraArgs: ['-testNet'], env: FIXTURE_ENV, readiness: 'api', startTimeoutMs: 60_000 }
      : { ...p.opts, dir: p.dir, apiPort: p.apiPort, swarmPort: p.swarmPort, env: { ...FIXTURE_ENV, ...env } })

  /**
   * Waits until A reaches every quorum and finds it set up (check-quorum-status) and reaches B's
   * peer (ping: A knows bob's peer id from add-peer-details, the address comes from the network), as
   * a script does before its first transfer and after a restart.
   */
  const quorumsReachable = async (): Promise<void> => {
    await waitFor(async () => {
      for (const did of quorumDids) if (!(await a.get('check-quorum-status', { quorumAddress: did })).status) return false
      return (await a.get('ping', { peerID: b.peerId })).status
    }, { timeoutMs: 30_000, what: "check-quorum-status of the seven quorums and a ping of B's peer from A" })
  }

  /** Restarts `api`'s process on the same data dir and ports, with `env` (a fault armed, or none). */
  const again = async (api: Api, env: Record<string, string> = {}): Promise<void> => {
    await api.p.stop()
    const next = launch(0, api.p, env)
    procs.push(next)
    api.p = await next.start()
  }

  before(async () => {
    const fresh = Array.from({ length: layout.length + 2 }, (_, i) => launch(50 + i))
    owned.push(...fresh)
    procs.push(...fresh)
    await Promise.all(fresh.map(async (p) => await p.start()))
    mark('start')
    qs = fresh.slice(0, layout.length).map((p) => new Api(p))
    a = new Api(fresh[layout.length])
    b = new Api(fresh[layout.length + 1])
  })

  let failed = false
  // each step builds on the ones before: after a failure the rest are skipped, not timed out one by one
  beforeEach(function () { if (failed) this.skip() })
  afterEach(function () {
    mark(`[end: ${(this.currentTest?.title ?? '').slice(0, 24)}]`)
    if (this.currentTest?.state === 'failed') failed = true
  })

  after(async function () {
    this.timeout(60_000)
    if (failed) for (const p of procs) if (p.logs !== '') console.log(`--- node ${p.apiPort} ---\n${p.logs.split('\n').slice(-30).join('\n')}`)
    await Promise.all(procs.map(async (p) => { await p.stop().catch(() => {}); await p.kill() }))
    for (const p of owned) rmSync(p.dir, { recursive: true, force: true })
    console.log(`      legacy /api e2e wall time: ${((Date.now() - started) / 1000).toFixed(1)} s`)
    if (process.env.E2E_TIMING === '1') console.log(`      steps: ${marks.join(', ')}`)
  })

  it('builds the network: bootstrap, DIDs, registration, test RBT, quorums', async () => {
    const all = [...qs, a, b]
    for (const n of all) {
      const env = await n.get('getalldid')
      expect(env).to.deep.include({ status: true, message: 'Got all DIDs', result: null, account_info: [] })
    }
    // everyone bootstraps from the first quorum node (the reference's form ends with "/")
    const seed = `${qs[0].p.multiaddr}/`
    for (const n of all.slice(1)) {
      const env = await n.post('add-bootstrap', { peers: [seed] })
      expect(env.status, env.message).to.equal(true)
    }
    // DIDs: seven quorums, alice, bob; one after the other on a node, the nodes side by side
    const made = await Promise.all(qs.map(async (q, i) => {
      const dids: string[] = []
      for (let k = 0; k < layout[i]; k++) dids.push(await q.createDid())
      return dids
    }))
    for (const [i, dids] of made.entries()) for (const d of dids) { quorumDids.push(d); quorumHost.push(qs[i]) }
    // alice is a basic DID (the reference CLI's default type), bob a lite one
    ;[alice, bob] = await Promise.all([a.createDid(0), b.createDid(4)])
    mark('bootstrap, DIDs')
    const hosts: Array<[string, Api]> = [...quorumDids.map((d, i): [string, Api] => [d, quorumHost[i]]), [alice, a], [bob, b]]
    // registration (a password step each) and the peer table every node gets
    await Promise.all(all.map(async (n) => {
      for (const [did, host] of hosts) {
        if (host !== n) continue
        const env = await host.signed('register-did', { did })
        expect(env, env.message).to.deep.include({ status: true, message: 'DID registered successfully' })
      }
    }))
    mark('register')
    for (const n of all) {
      for (const [did, host] of hosts) {
        if (host === n) continue
        const env = await n.post('add-peer-details', { did, didtype: did === alice ? 0 : 4, peerid: host.peerId })
        expect(env, env.message).to.deep.include({ status: true, message: 'Peers added successfully' })
      }
    }
    mark('peers')
    // test RBT for the quorums' pledges and for alice; the quorum setup
    for (const [did, host] of hosts.slice(0, quorumDids.length)) {
      const minted = await host.signed('generate-test-token', { did, number_of_tokens: 5 })
      expect(minted.status, minted.message).to.equal(true)
      const setup = await host.post('setup-quorum', { did, password: PWD, priv_password: PWD })
      expect(setup, setup.message).to.deep.include({ status: true, message: 'Quorum setup done successfully' })
    }
    const funded = await a.signed('generate-test-token', { did: alice, number_of_tokens: 10 })
    expect(funded.status, funded.message).to.equal(true)
    expect(funded.message).to.match(/successfully/)
    mark('mint+setup')
    // the quorum list file of the reference: [{type, address}]
    const list = quorumDids.map((d, i) => ({ type: 2, address: `${quorumHost[i].peerId}.${d}` }))
    for (const n of [a, b]) {
      const env = await n.post('addquorum', list)
      expect(env, env.message).to.deep.include({ status: true, message: 'Quorums added successfully' })
      expect((await n.get('getallquorum')).result).to.have.length(7)
    }
    // every quorum is reachable from the sender and set up
    await quorumsReachable()
    mark('addquorum+status')
    const listed = await a.get('getalldid')
    expect(listed.account_info).to.deep.equal([{ did: alice, did_type: 0, rbt_amount: 10, pledged_rbt: 0, locked_rbt: 0, pinned_rbt: 0 }])
  })

  let txid = ''
  it('transfers RBT, a part amount included, and shows balances, tokens, the chain and the history', async () => {
    const sent = await a.signed('initiate-rbt-transfer', { sender: `${a.peerId}.${alice}`, receiver: `${b.peerId}.${bob}`, tokenCOunt: 1.5, comment: 'legacy e2e', type: 2 })
    expect(sent.status, sent.message).to.equal(true)
    expect(sent.message).to.match(/^Transfer finished successfully in [\d.]+s with trnxid [0-9a-f]{64}$/)
    txid = txidOf(sent)
    expect(await a.account(alice)).to.deep.include({ rbt_amount: 8.5, locked_rbt: 0 })
    await waitFor(async () => (await b.account(bob)).rbt_amount === 1.5, { timeoutMs: 20_000, what: "bob's balance" })
    // a whole token and a part token at bob, both free (status 0)
    const tokens = await b.get('getalltokens', { did: bob, type: 'RBT' })
    expect(tokens).to.deep.include({ status: true, message: 'Got all tokens', result: null })
    expect(tokens.token_detials).to.have.length(2)
    expect(tokens.token_detials.map((t: { status: number }) => t.status)).to.deep.equal([0, 0])
    // the chains: genesis then the transfer to bob, each block base64 CBOR
    for (const t of tokens.token_detials as Array<{ token: string }>) {
      const dump = await b.post('dump-token-chain', { token: t.token, block_id: '' })
      expect(dump).to.deep.include({ status: true, message: 'Successfully got the token chain block', result: null, next_block_id: '' })
      const blocks = (dump.blocks as string[]).map((s) => decodeBlockEnvelope(Buffer.from(s, 'base64')))
      expect(blocks.length).to.be.at.least(2)
    }
    // history on both sides
    for (const n of [a, b]) {
      const h = await n.get('get-by-txnId', { txnID: txid })
      expect(h.status, h.message).to.equal(true)
      expect(h.message).to.equal('Retrieved Txn Details')
      expect(h.TxnDetails).to.have.length(1)
      expect(h.TxnDetails[0]).to.deep.include({ TransactionID: txid, SenderDID: alice, ReceiverDID: bob, Amount: 1.5, Comment: 'legacy e2e', Status: true })
    }
  })

  it('mints FTs and transfers some', async () => {
    const made = await a.signed('create-ft', { did: alice, ft_name: 'legacy-coin', ft_count: 10, token_count: 1 })
    expect(made.status, made.message).to.equal(true)
    expect(made.message).to.match(/successfully/)
    expect((await a.get('get-ft-info-by-did', { did: alice })).ft_info).to.deep.equal([{ ft_name: 'legacy-coin', ft_count: 10, creator_did: alice }])
    const sent = await a.signed('initiate-ft-transfer', { sender: alice, receiver: bob, ft_name: 'legacy-coin', ft_count: 3, comment: 'fts', quorum_type: 2, password: PWD })
    expect(sent.status, sent.message).to.equal(true)
    expect(sent.message).to.match(/^FT Transfer finished successfully in [\d.]+s with trnxid [0-9a-f]{64}$/)
    expect((await a.get('get-ft-info-by-did', { did: alice })).ft_info).to.deep.equal([{ ft_name: 'legacy-coin', ft_count: 7, creator_did: alice }])
    await waitFor(async () => (await b.get('get-ft-info-by-did', { did: bob })).ft_info?.[0]?.ft_count === 3, { timeoutMs: 20_000, what: "bob's FTs" })
    expect((await b.get('get-ft-info-by-did', { did: bob }))).to.deep.include({ status: true, message: 'Got FT info successfully', ft_info: [{ ft_name: 'legacy-coin', ft_count: 3, creator_did: alice }] })
  })

  it('creates, deploys and executes an NFT to bob', async () => {
    const form = new FormData()
    form.set('did', alice)
    form.set('metadata', new Blob([JSON.stringify({ name: 'legacy e2e' })], { type: 'application/json' }), 'metadata.json')
    form.set('artifact', new Blob([Buffer.from('an artifact')]), 'artifact.txt')
    const made = await a.post('create-nft', form)
    expect(made, made.message).to.deep.include({ status: true, message: 'NFT Token generated successfully' })
    const nft = made.result as string
    const deployed = await a.signed('deploy-nft', { nft, did: alice, quorum_type: 2, nft_value: 1, nft_data: 'first' })
    expect(deployed.status, deployed.message).to.equal(true)
    expect((await a.get('get-nfts-by-did', { did: alice })).nfts).to.deep.equal([{ nft, owner_did: alice, nft_value: 1 }])
    const executed = await a.signed('execute-nft', { nft, owner: alice, receiver: bob, quorum_type: 2, comment: 'to bob', nft_value: 1, nft_data: 'second' })
    expect(executed.status, executed.message).to.equal(true)
    expect((await a.get('get-nfts-by-did', { did: alice })).nfts).to.deep.equal([])
    await waitFor(async () => (await b.get('get-nfts-by-did', { did: bob })).nfts?.length === 1, { timeoutMs: 20_000, what: "bob's NFT" })
    expect((await b.get('get-nfts-by-did', { did: bob })).nfts).to.deep.equal([{ nft, owner_did: bob, nft_value: 1 }])
  })

  /** Locked milli-RBT of every quorum DID, from their own nodes. */
  const quorumLocked = async (): Promise<number> => {
    let sum = 0
    for (const [i, did] of quorumDids.entries()) sum += (await quorumHost[i].milli(did)).locked
    return sum
  }

  /** A transfer from alice that kills A at `step` (the test fault hook); resolves once A is dead. */
  const killedAt = async (step: string, amount: number): Promise<void> => {
    await again(a, { RBTNODE_FAULT: step })
    await quorumsReachable()
    const out = a.signed('initiate-rbt-transfer', { sender: alice, receiver: bob, tokenCOunt: amount, comment: `killed at ${step}`, type: 2 })
      .then((env) => `the transfer answered (${env.message}) instead of dying at ${step}`, (e: Error) => e)
    // the node dies from the hook, or the transfer answers first (then the test fails with its answer)
    const first = await Promise.race([out, waitFor(() => !a.p.running, { timeoutMs: 60_000, what: `A to die at ${step}` })])
    if (typeof first === 'string') expect.fail(first)
    await waitFor(() => !a.p.running, { timeoutMs: 60_000, what: `A to die at ${step}` })
    expect(a.p.logs).to.include(`fault hook: killed at ${step}`)
    const answer = await out
    if (typeof answer === 'string') expect.fail(answer)
  }

  it('a sender killed before the decision: its quorums keep their pledges while it is down; after its restart release-all-locked-tokens leaves alice whole', async () => {
    const before = await a.milli(alice)
    const bobBefore = await b.milli(bob)
    // the quorums voted yes and pledged; A dies before asking for any signature
    await killedAt('voted', 0.5)
    mark('armed A, killed at voted')
    expect(await quorumLocked()).to.be.greaterThan(0)
    // a quorum cannot tell whether the dead sender will go on: its pledge is kept
    for (const q of qs) {
      const env = await q.get('release-all-locked-tokens')
      expect(env.status, env.message).to.equal(true)
      expect(env.result.released).to.deep.equal([])
      for (const k of env.result.kept) expect(k.reason).to.match(/open vote/)
    }
    expect(await quorumLocked()).to.be.greaterThan(0)
    // restarted: the transfer can no longer complete
    mark('quorum releases')
    await again(a)
    mark('A restarted')
    // the restarted sender finishes the transfers it left open once it serves (their tokens stay
    // Locked meanwhile, and the answer keeps them, truthfully): asked until that recovery has ended
    let rel: any
    await waitFor(async () => {
      rel = await a.get('release-all-locked-tokens')
      return rel.status === true && rel.result.kept.length === 0
    }, { timeoutMs: 30_000, what: 'release-all-locked-tokens to keep nothing once the restarted sender recovered' })
    expect(rel.message).to.match(/^(All Locked Tokens Releases Successfully Or NO Locked Tokens to release|Released \d+ locked token\(s\))/)
    expect(await a.milli(alice)).to.deep.equal(before)
    expect((await a.get('getalltokens', { did: alice, type: 'RBT' })).token_detials.filter((t: { status: number }) => t.status === 1)).to.deep.equal([])
    // the quorums were told ABORT and free their pledges; nothing reached bob
    await waitFor(async () => await quorumLocked() === 0, { timeoutMs: 30_000, what: 'the quorums to free their pledges' })
    mark('quorums freed')
    for (const q of qs) expect((await q.get('release-all-locked-tokens')).result.kept).to.deep.equal([])
    expect(await b.milli(bob)).to.deep.equal(bobBefore)
    // and alice's tokens move again
    await quorumsReachable()
    const again2 = await a.signed('initiate-rbt-transfer', { sender: alice, receiver: bob, tokenCOunt: 0.5, comment: 'after the release', type: 2 })
    mark('transfer after release')
    expect(again2.status, again2.message).to.equal(true)
    await waitFor(async () => (await b.milli(bob)).free === bobBefore.free + 500, { timeoutMs: 20_000, what: "bob's balance" })
  })

  it('a sender killed after the quorums signed, its receiver down: release-all-locked-tokens keeps the tokens, the transfer completes once the receiver is back', async () => {
    const before = await a.milli(alice)
    const bobBefore = await b.milli(bob)
    await killedAt('committing', 0.25)
    mark('armed A, killed at committing')
    // the receiver goes down too, so the restarted sender cannot deliver yet
    await b.p.stop()
    mark('B stopped')
    await again(a)
    const held = await a.milli(alice)
    expect(held.locked).to.equal(250)
    expect(held.free).to.equal(before.free - 250)
    mark('A restarted')
    const rel = await a.get('release-all-locked-tokens')
    expect(rel.status, rel.message).to.equal(true)
    const kept = rel.result.kept as Array<{ did: string, value: number, record_state: string, transaction_id: string }>
    expect(rel.message).to.equal(`Released 0 locked token(s); kept ${kept.length} held by transactions that may still commit`)
    expect(rel.result.released).to.deep.equal([])
    expect(kept.length).to.be.greaterThan(0)
    for (const k of kept) expect(k).to.deep.include({ did: alice, record_state: 'COMMITTING', transaction_id: kept[0].transaction_id })
    expect(Math.round(kept.reduce((sum, k) => sum + k.value, 0) * 1000)).to.equal(250)
    expect(await a.milli(alice)).to.deep.equal(held)
    // the receiver is back: the decided transfer is delivered
    const bp = launch(0, b.p)
    procs.push(bp)
    b.p = await bp.start()
    mark('B restarted')
    await waitFor(async () => (await b.milli(bob)).free === bobBefore.free + 250, { timeoutMs: 60_000, what: 'the redelivery to bob' })
    mark('redelivered')
    await waitFor(async () => (await a.milli(alice)).locked === 0, { timeoutMs: 20_000, what: "alice's tokens to be committed" })
    expect((await a.milli(alice)).free).to.equal(before.free - 250)
    const h = await a.get('get-by-txnId', { txnID: rel.result.kept[0].transaction_id })
    expect(h.TxnDetails[0]).to.deep.include({ SenderDID: alice, ReceiverDID: bob, Amount: 0.25, Status: true })
  })
})
