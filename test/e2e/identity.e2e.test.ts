import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NodeProcess, startNodes } from '../helpers/node-process.js'
import { runCli } from '../helpers/cli.js'
import { waitFor } from '../helpers/wait.js'
import { MNEMONIC, liteDidByHand, testPng, walletAnswer, walletMaterial } from '../helpers/identity.js'

describe('e2e: identity across real nodes (create, register, resolve, verify, late joiner via DHT)', function () {
  this.timeout(90_000)
  let nodes: NodeProcess[] = []
  let late: NodeProcess | undefined
  let work = ''
  const dids: Record<string, string> = {}
  const sigs: Record<string, { msg: string, signature: string }> = {}
  const wallet = walletMaterial(11)

  before(async () => {
    work = mkdtempSync(join(tmpdir(), 'rbt-id-e2e-'))
    writeFileSync(join(work, 'image.png'), testPng(256, 256, 21))
    writeFileSync(join(work, 'did.png'), wallet.didPng)
    writeFileSync(join(work, 'pubShare.png'), wallet.pubSharePng)
    writeFileSync(join(work, 'pubKey.pem'), wallet.pubKeyPem)
    nodes = await startNodes(2)
    const [a, b] = nodes
    await b.client.call('bootstrapAdd', { body: { peers: [a.multiaddr] } })
    await waitFor(async () => (await a.client.call('nodeStatus')).result!.connected_peers >= 1, { what: 'A and B to connect' })
  })

  after(async () => {
    await Promise.all([...nodes, ...(late !== undefined ? [late] : [])].map(async (n) => { await n.dispose() }))
    if (work !== '') rmSync(work, { recursive: true, force: true })
  })

  it('creates a DID of each type on node A with the CLI (image files uploaded from the current directory)', async () => {
    const a = nodes[0]
    const runs: Array<[string, string[]]> = [
      ['basic', ['-didType', '0']],
      ['standard', ['-didType', '1']],
      ['wallet', ['-didType', '2']],
      ['lite', ['-didType', '4', '-mnemonic', MNEMONIC, '-childPath', '1']]
    ]
    await Promise.all(runs.map(async ([name, args]) => {
      const r = await runCli(['createdid', ...a.cliArgs, ...args], { cwd: work })
      expect(r.code, `${name}: ${r.stderr}`).to.equal(0)
      const m = /\[INFO\] DID (bafybmi[a-z2-7]{52}) created successfully/.exec(r.stderr)
      expect(m, r.stderr).to.not.equal(null)
      dids[name] = m![1]!
    }))
    expect(dids.lite).to.equal(liteDidByHand(MNEMONIC, 1))
    const list = await runCli(['getalldid', ...a.cliArgs])
    expect(list.stdout.trim().split('\n').sort()).to.deep.equal(Object.values(dids).sort())
  })

  it('registers the basic DID through the two-step flow (CLI answers with -privPWD)', async () => {
    const r = await runCli(['registerdid', ...nodes[0].cliArgs, '-did', dids.basic!, '-privPWD', 'mypassword'])
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stderr).to.match(/\[INFO\] DID registered successfully/)
    const bad = await runCli(['registerdid', ...nodes[0].cliArgs, '-did', dids.basic!, '-privPWD', 'nope'])
    expect(bad.code).to.equal(1)
    expect(bad.stderr).to.match(/wrong password/i)
  })

  it('signs arbitrary messages on A (password and external-signature DIDs)', async () => {
    const a = nodes[0].client
    for (const name of ['basic', 'lite']) {
      const msg = `hello from the ${name} DID`
      const first = await a.call('signatureArbitrary', { body: { signer_did: dids[name]!, msg_to_sign: msg } })
      expect(first.message).to.equal('Password needed')
      const done = await a.call('signatureComplete', { body: { id: (first.result as { id: string }).id, password: 'mypassword' } })
      expect(done.message).to.equal('arbitrary sign successful')
      sigs[name] = { msg, signature: (done.result as { signature: string }).signature }
    }
    const first = await a.call('signatureArbitrary', { body: { signer_did: dids.wallet!, msg_to_sign: 'wallet says hi' } })
    expect(first.message).to.equal('Signature needed')
    const ch = first.result as { id: string, hash: string, only_priv_key: boolean }
    const done = await a.call('signatureComplete', { body: { id: ch.id, ...walletAnswer(wallet, ch.hash, ch.only_priv_key) } })
    sigs.wallet = { msg: 'wallet says hi', signature: (done.result as { signature: string }).signature }
  })

  it('node B resolves every DID to A and verifies the signatures with documents fetched from the network', async () => {
    const b = nodes[1].client
    for (const name of Object.keys(dids)) {
      const r = await waitFor(async () => {
        const env = await b.envelope('didResolve', { params: { did: dids[name]! } })
        return env.status ? env.result : undefined
      }, { what: `B to resolve the ${name} DID`, timeoutMs: 20_000, intervalMs: 200 })
      expect(r!.peer_id, name).to.equal(nodes[0].peerId)
    }
    for (const [name, s] of Object.entries(sigs)) {
      const ok = await b.envelope('signatureVerify', { query: { signer_did: dids[name]!, signed_msg: s.msg, signature: s.signature } })
      expect(ok.status, `${name}: ${ok.message}`).to.equal(true)
      const bad = await b.envelope('signatureVerify', { query: { signer_did: dids[name]!, signed_msg: s.msg + '.', signature: s.signature } })
      expect(bad.status).to.equal(false)
    }
    const info = await b.call('didPublicKey', { params: { did: dids.lite! } })
    expect(info.result).to.include({ did: dids.lite, did_type: 4, source: 'network' })
  })

  it('a node started after the announcements still resolves the DIDs (DHT record) and verifies', async () => {
    late = await new NodeProcess({ n: 2 }).start()
    await late.client.call('bootstrapAdd', { body: { peers: [nodes[1].multiaddr] } })
    await waitFor(async () => (await late!.client.call('nodeStatus')).result!.connected_peers >= 1, { what: 'the late node to connect' })
    for (const name of ['basic', 'wallet']) {
      const r = await waitFor(async () => {
        const env = await late!.client.envelope('didResolve', { params: { did: dids[name]! } })
        return env.status ? env.result : undefined
      }, { what: `the late node to resolve the ${name} DID`, timeoutMs: 25_000, intervalMs: 300 })
      expect(r!.peer_id).to.equal(nodes[0].peerId)
      expect(r!.source).to.equal('dht')
    }
    const s = sigs.basic!
    const v = await late.client.envelope('signatureVerify', { query: { signer_did: dids.basic!, signed_msg: s.msg, signature: s.signature } })
    expect(v.status, v.message).to.equal(true)
  })
})
