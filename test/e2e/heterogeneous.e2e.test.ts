import { expect } from 'chai'
import { rmSync } from 'node:fs'
import { NodeProcess } from '../helpers/node-process.js'
import { createNetns, requireNetns, type Netns } from '../helpers/netns.js'
import { runCli } from '../helpers/cli.js'
import { FIXTURE_ENV, QUORUM_PASSWORD, USER_PASSWORD, createLiteDid, mintRbt, rbtBalance } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A network laid out the way operators of the reference lay it out: no addbootstrap anywhere (the
 * nodes find each other by mDNS, so they run inside a network namespace of their own), two groups
 * of quorums, and each user node with its own quorum list. The sender's node lists quorum set 1,
 * the receiver's node set 2; they share no quorum.
 */
describe('e2e: heterogeneous network (own quorum list per node, discovery, no bootstrap)', function () {
  this.timeout(300_000)
  let ns: Netns | undefined
  const quorums: NodeProcess[] = []
  let a: NodeProcess
  let b: NodeProcess
  let set1: string[] = []
  let set2: string[] = []
  let alice = ''
  let bob = ''

  const cli = async (node: NodeProcess, args: string[]): Promise<{ code: number | null, stdout: string, stderr: string }> =>
    await runCli([...args, ...node.cliArgs], { netns: ns })
  const transferCli = async (node: NodeProcess, from: string, to: string, amount: string): Promise<{ code: number | null, stdout: string, stderr: string }> =>
    await cli(node, ['transferrbt', '-senderAddr', from, '-receiverAddr', to, '-rbtAmount', amount, '-privPWD', USER_PASSWORD, '-transComment', 'hetero'])
  const resolves = async (node: NodeProcess, dids: string[]): Promise<boolean> => {
    for (const did of dids) if (!(await node.client.envelope('didResolve', { params: { did } })).status) return false
    return true
  }
  const restartLike = (n: NodeProcess, env: Record<string, string> = {}): NodeProcess =>
    new NodeProcess({ dir: n.dir, n: n.opts.n, apiPort: n.apiPort, swarmPort: n.swarmPort, netns: ns, extraArgs: ['-testNet'], env: { ...FIXTURE_ENV, ...env }, startTimeoutMs: 60_000 })

  before(async function () {
    await requireNetns(this)
    ns = await createNetns('hetero')
    const launch = async (i: number): Promise<NodeProcess> => await new NodeProcess({ n: i, netns: ns, extraArgs: ['-testNet'], env: FIXTURE_ENV, startTimeoutMs: 60_000 }).start()
    // four at a time: twelve processes starting at once on two cores outrun the start deadline
    const nodes: NodeProcess[] = []
    for (let i = 0; i < 12; i += 4) nodes.push(...await Promise.all([i, i + 1, i + 2, i + 3].map(launch)))
    quorums.push(...nodes.slice(0, 10))
    ;[a, b] = [nodes[10]!, nodes[11]!]
    const dids = await Promise.all(quorums.map(async (q) => {
      const did = await createLiteDid(q.client, QUORUM_PASSWORD)
      await mintRbt(q.client, did, 5, 0, QUORUM_PASSWORD)
      await q.client.call('quorumsSetup', { body: { did, password: QUORUM_PASSWORD, priv_password: QUORUM_PASSWORD } })
      return did
    }))
    set1 = dids.slice(0, 5)
    set2 = dids.slice(5)
    for (const did of set1) await a.client.call('quorumsAdd', { body: { did } })
    for (const did of set2) await b.client.call('quorumsAdd', { body: { did } })
    alice = await createLiteDid(a.client, USER_PASSWORD)
    bob = await createLiteDid(b.client, USER_PASSWORD)
    await mintRbt(a.client, alice, 2, 0, USER_PASSWORD)
    // nobody calls addbootstrap or add_peers: peers come from mDNS, DIDs from the network
    await waitFor(async () => await resolves(a, [...set1, bob]) && await resolves(b, [...set2, alice]),
      { timeoutMs: 60_000, what: 'the user nodes to resolve their quorums and each other by discovery alone' })
  })

  after(async function () {
    this.timeout(60_000)
    await Promise.all([...quorums, a, b].filter((n) => n !== undefined).map(async (n) => { await n.dispose() }))
    // a restarted receiver does not own the data dir it took over
    if (b !== undefined) rmSync(b.dir, { recursive: true, force: true })
    await ns?.dispose()
  })

  it('A→B 0.5 through set 1, then at once B→A 0.25 through set 2: balances exact the moment each CLI call returns', async () => {
    const first = await transferCli(a, alice, bob, '0.5')
    expect(first.code, first.stderr).to.equal(0)
    expect(await rbtBalance(b.client, bob)).to.equal(0.5)
    expect(await rbtBalance(a.client, alice)).to.equal(1.5)
    const back = await transferCli(b, bob, alice, '0.25')
    expect(back.code, back.stderr).to.equal(0)
    expect(await rbtBalance(b.client, bob)).to.equal(0.25)
    expect(await rbtBalance(a.client, alice)).to.equal(1.75)
    // the signers of each transfer were the sender's own set
    const txA = (await a.client.call('txGet', { params: { tx_id: first.stdout.trim() } })).result!
    expect([...txA.quorums].sort()).to.deep.equal([...set1].sort())
    const txB = (await b.client.call('txGet', { params: { tx_id: back.stdout.trim() } })).result!
    expect([...txB.quorums].sort()).to.deep.equal([...set2].sort())
  })

  it('the receiver\'s node down after the quorums signed: the CLI reports the pending delivery (exit 3, the id); the tokens arrive once it is back, none lost or duplicated', async () => {
    const before = { alice: await rbtBalance(a.client, alice), bob: await rbtBalance(b.client, bob) }
    // the receiver's node dies as the delivery reaches it, after the sender's decision
    await b.stop()
    b = await restartLike(b, { RBTNODE_FAULT: 'delivering' }).start()
    const r = await transferCli(a, alice, bob, '0.5')
    expect(r.code, r.stderr).to.equal(3)
    const txid = r.stdout.trim()
    expect(txid).to.match(/^[0-9a-f]{64}$/)
    expect(r.stderr).to.match(/has not taken them yet/)
    expect(await b.waitExit()).to.equal(null)
    expect(b.logs).to.include('fault hook: killed at delivering')
    const pending = await a.client.call('txGet', { params: { tx_id: txid } })
    expect(pending.result?.status).to.equal('delivery_pending')
    expect(await rbtBalance(a.client, alice)).to.equal(before.alice - 0.5)
    // back without the fault: the sender's retries deliver
    b = await restartLike(b).start()
    await waitFor(async () => (await a.client.call('txGet', { params: { tx_id: txid } })).result?.status === 'committed',
      { timeoutMs: 90_000, what: 'the pending delivery to complete' })
    expect(await rbtBalance(b.client, bob)).to.equal(before.bob + 0.5)
    expect(await rbtBalance(a.client, alice)).to.equal(before.alice - 0.5)
    // bob spends it at once through his own set: the tokens are really his
    const spend = await transferCli(b, bob, alice, '0.75')
    expect(spend.code, spend.stderr).to.equal(0)
    expect(await rbtBalance(b.client, bob)).to.equal(0)
    expect(await rbtBalance(a.client, alice)).to.equal(2)
  })
})
