import { expect } from 'chai'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { randomBytes } from 'node:crypto'
import { NodeProcess, startNodes } from '../helpers/node-process.js'
import { runCli } from '../helpers/cli.js'
import { waitFor } from '../helpers/wait.js'

describe('e2e: three real nodes over libp2p', function () {
  this.timeout(90_000)
  let nodes: NodeProcess[] = []
  let outsider: NodeProcess | undefined
  let keyDir = ''

  before(async () => {
    nodes = await startNodes(3)
  })

  after(async () => {
    await Promise.all([...nodes, ...(outsider !== undefined ? [outsider] : [])].map(async (n) => { await n.dispose() }))
    if (keyDir !== '') rmSync(keyDir, { recursive: true, force: true })
  })

  it('connects through bootstrap peers added with the CLI', async () => {
    const [a, b, c] = nodes
    for (const n of [b, c]) {
      const r = await runCli(['addbootstrap', ...n.cliArgs, '-peers', a.multiaddr])
      expect(r.code, r.stderr).to.equal(0)
      expect(r.stderr).to.match(/\[INFO\] Bootstrap peers added successfully/)
    }
    await waitFor(async () => (await a.client.call('nodeStatus')).result!.connected_peers >= 2, { what: 'A to see B and C' })
    const list = await runCli(['getallbootstrap', ...b.cliArgs])
    expect(list.code).to.equal(0)
    expect(list.stdout.trim()).to.equal(a.multiaddr)
  })

  it('pings each way through the CLI', async () => {
    for (const [x, y] of [[0, 1], [1, 0], [0, 2], [2, 0], [1, 2], [2, 1]]) {
      const r = await runCli(['ping', ...nodes[x].cliArgs, '-peerID', nodes[y].peerId])
      expect(r.code, `${x}->${y}: ${r.stderr}`).to.equal(0)
      expect(r.stderr).to.match(/\[INFO\] Ping Received/)
      expect(r.stdout).to.match(new RegExp(`^${nodes[y].peerId} \\d+\\.\\d+ ms`))
    }
  })

  it('get-peer-id prints only the peer id; --json prints the envelope', async () => {
    const r = await runCli(['get-peer-id', ...nodes[1].cliArgs])
    expect(r.code).to.equal(0)
    expect(r.stdout).to.equal(nodes[1].peerId + '\n')
    const j = await runCli(['get-peer-id', ...nodes[1].cliArgs, '--json'])
    expect(JSON.parse(j.stdout)).to.deep.include({ status: true, message: nodes[1].peerId, result: nodes[1].peerId })
  })

  it('keeps serving after bad input from a real client', async () => {
    const a = nodes[0]
    const bad = await fetch(`${a.url}/svc/v1/bootstrap/add`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{"peers": [' })
    expect(bad.status).to.equal(400)
    expect(await bad.json()).to.include({ status: false })
    const r = await runCli(['addbootstrap', ...a.cliArgs, '-peers', 'ip4/1.2.3.4/tcp/1'])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.match(/\[ERROR\] .*multiaddress starts with \//)
    const ping = await runCli(['ping', ...a.cliArgs])
    expect(ping.code).to.equal(2)
    expect(ping.stderr).to.match(/-peerID is required/)
    expect((await a.client.call('nodeStatus')).status).to.equal(true)
  })

  it('a restarted node keeps its bootstrap list, peer map and peer id', async () => {
    const b = nodes[1]
    const did = 'bafybmi' + 'a'.repeat(52)
    await b.client.call('nodeAddPeers', { body: { DID: did, PeerID: nodes[2].peerId } })
    const before = b.peerId
    await b.restart()
    expect(b.peerId).to.equal(before)
    const r = await runCli(['getallbootstrap', ...b.cliArgs])
    expect(r.stdout.trim()).to.equal(nodes[0].multiaddr)
    const { readFileSync } = await import('node:fs')
    const cfg = JSON.parse(readFileSync(join(b.dir, 'Rubix', 'MainNet', 'node.json'), 'utf8'))
    expect(cfg.peers[did].peerId).to.equal(nodes[2].peerId)
    // dialled again at start
    await waitFor(async () => (await b.client.call('nodeStatus')).result!.connected_peers >= 1, { what: 'B to reconnect' })
  })

  it('a node with another swarm key cannot connect', async () => {
    keyDir = mkdtempSync(join(tmpdir(), 'rbtnode-key-'))
    writeFileSync(join(keyDir, 'other.key'), `/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}\n`)
    outsider = await new NodeProcess({ n: 9, cwd: keyDir, extraArgs: ['-testNet', '-testNetKey', 'other.key'] }).start()
    const r = await runCli(['ping', ...outsider.cliArgs, '-peerID', nodes[0].peerId])
    expect(r.code).to.not.equal(0)
    // and explicitly dialling A's address fails too
    await outsider.client.call('bootstrapAdd', { body: { peers: [nodes[0].multiaddr] } })
    const pingBack = await nodes[0].client.envelope('nodePing', { query: { peerID: outsider.peerId } })
    expect(pingBack.status).to.equal(false)
    expect((await outsider.client.call('nodeStatus')).result!.connected_peers).to.equal(0)
    await waitFor(() => /bootstrap dial .* failed/.test(outsider!.logs), { what: 'the failed dial to be logged' })
  })

  it('shuts down on POST /svc/v1/node/shutdown', async () => {
    const c = nodes[2]
    const r = await runCli(['shutdown', ...c.cliArgs])
    expect(r.code).to.equal(0)
    expect(await c.waitExit()).to.equal(0)
  })
})
