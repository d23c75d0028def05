import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runCli } from '../helpers/cli.js'
import { createNetns, requireNetns, type Netns } from '../helpers/netns.js'
import { NodeProcess } from '../helpers/node-process.js'
import { waitFor } from '../helpers/wait.js'

/**
 * LAN discovery between real node processes. mDNS sends multicast, so every node of this file runs
 * inside a network namespace made for it (lo with multicast and the 224.0.0.0/4 route): nothing
 * leaves it, and no other test's node can be found.
 */
describe('e2e: nodes on one LAN find each other by mDNS (inside a network namespace)', function () {
  this.timeout(60_000)
  let ns: Netns | undefined
  const all: NodeProcess[] = []
  let a: NodeProcess, b: NodeProcess, c: NodeProcess
  let keyDir = ''

  const start = async (extraArgs: string[], cwd?: string): Promise<NodeProcess> => {
    const n = new NodeProcess({ netns: ns, extraArgs, ...(cwd !== undefined ? { cwd } : {}) })
    all.push(n)
    return await n.start()
  }
  const peersOf = async (n: NodeProcess): Promise<string[]> => (await n.client.call('nodeStatus')).result!.peers

  before(async function () {
    await requireNetns(this)
    ns = await createNetns('discovery')
  })

  after(async () => {
    await Promise.all(all.map(async (n) => { await n.dispose() }))
    await ns?.dispose()
    if (keyDir !== '') rmSync(keyDir, { recursive: true, force: true })
  })

  it('three test-network nodes connect to each other without any bootstrap peer', async () => {
    [a, b, c] = await Promise.all([start(['-testNet']), start(['-testNet']), start(['-testNet'])])
    for (const n of [a, b, c]) expect((await n.client.call('nodeStatus')).result).to.include({ mdns: true, test_net: true })
    await waitFor(async () => {
      for (const n of [a, b, c]) {
        const peers = await peersOf(n)
        for (const o of [a, b, c]) if (o !== n && !peers.includes(o.peerId)) return false
      }
      return true
    }, { timeoutMs: 15_000, intervalMs: 200, what: 'each node to list the other two as connected peers' })
    for (const n of [a, b, c]) expect((await runCli(['getallbootstrap', ...n.cliArgs], { netns: ns })).stdout.trim()).to.equal('')
  })

  it('the peers found are reachable by peer id: CLI ping and a DID resolved over the rpc layer', async () => {
    const r = await runCli(['ping', ...c.cliArgs, '-peerID', a.peerId], { netns: ns })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.match(new RegExp(`^${a.peerId} \\d+\\.\\d+ ms`))
    const did = ((await a.client.call('didCreate', { body: { type: 4, password: 'discovery-pw' } as never })).result as { did: string }).did
    const host = await waitFor(async () => {
      const env = await b.client.envelope('didResolve', { params: { did } })
      return env.status ? env.result as { peer_id: string } : undefined
    }, { timeoutMs: 15_000, intervalMs: 200, what: `B to resolve ${did} hosted by A` })
    expect(host.peer_id).to.equal(a.peerId)
    // the document travels over the rpc channel (did.document), dialled by peer id
    const doc = await b.client.call('didPublicKey', { params: { did } })
    expect(doc.result).to.include({ did, source: 'network' })
  })

  it('a node started with -mdns=false is not found, while a node started at the same time is', async () => {
    const [hidden, late] = await Promise.all([start(['-testNet', '-mdns=false']), start(['-testNet'])])
    expect((await hidden.client.call('nodeStatus')).result!.mdns).to.equal(false)
    // the late node being found proves discovery rounds ran while the hidden node was up
    await waitFor(async () => {
      for (const n of [a, b, c]) if (!(await peersOf(n)).includes(late.peerId)) return false
      return (await peersOf(late)).length >= 3
    }, { timeoutMs: 15_000, intervalMs: 200, what: 'the late node to be found by A, B and C' })
    for (const n of [a, b, c, late]) expect(await peersOf(n)).to.not.include(hidden.peerId)
    expect(await peersOf(hidden)).to.deep.equal([])
  })

  it('a node of another swarm key is discovered but never connected, and nobody crashes', async () => {
    keyDir = mkdtempSync(join(tmpdir(), 'rbtnode-key-'))
    writeFileSync(join(keyDir, 'other.key'), `/key/swarm/psk/1.0.0/\n/base16/\n${randomBytes(32).toString('hex')}\n`)
    const outsider = await start(['-testNet', '-testNetKey', 'other.key'], keyDir)
    const ours = [a, b, c]
    // it finds them (their answers reach it) and fails the handshake with each
    await waitFor(() => ours.every((n) => outsider.logs.includes(`not connected to ${n.peerId}`)), { timeoutMs: 20_000, intervalMs: 200, what: 'the outsider to find A, B and C and fail to connect' })
    // and they find it: their dials fail too (a dial that gets no answer ends at its 10 s deadline)
    await waitFor(() => ours.some((n) => n.logs.includes(`not connected to ${outsider.peerId}`)), { timeoutMs: 20_000, intervalMs: 200, what: 'a node of ours to find the outsider and fail to connect' })
    expect(await peersOf(outsider)).to.deep.equal([])
    for (const n of ours) {
      expect(n.running, n.logs).to.equal(true)
      expect(await peersOf(n)).to.not.include(outsider.peerId)
      expect((await peersOf(n)).length).to.be.at.least(2)
      // one line per refused peer, however many discovery rounds ran
      expect(n.logs.split(`not connected to ${outsider.peerId}`).length - 1).to.be.at.most(1)
      expect(outsider.logs.split(`not connected to ${n.peerId}`).length - 1).to.equal(1)
      expect(n.logs).to.not.match(/\[(ERROR)\]|uncaught|unhandled/i)
    }
    expect(outsider.running, outsider.logs).to.equal(true)
    expect(outsider.logs).to.not.match(/\[(ERROR)\]|uncaught|unhandled/i)
  })
})
