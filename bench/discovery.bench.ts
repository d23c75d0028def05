import '../src/util/polyfill.js'
import { rmSync } from 'node:fs'
import { NodeProcess } from '../test/helpers/node-process.js'
import { createNetns, netnsAvailability, type Netns } from '../test/helpers/netns.js'
import { FIXTURE_ENV, QUORUM_PASSWORD, USER_PASSWORD, createLiteDid, mintRbt, transfer } from '../test/helpers/quorum-network.js'
import { waitFor } from '../test/helpers/wait.js'
import { isMain } from './stats.js'

/**
 * From a cold start to the first transfer, with discovery only (`npm run bench -- discovery`,
 * needs root: the nodes run in a network namespace of their own because mDNS sends multicast).
 * Twelve nodes are set up once (10 quorums, a sender node listing 5 of them, a receiver node listing
 * the other 5), then all stopped and started again with no bootstrap call. The figure is the time
 * from the last node's start to the end of a successful transfer; no address is given by hand.
 */
export async function run (): Promise<Record<string, string | number>> {
  const avail = await netnsAvailability()
  if (!avail.ok) throw new Error(`the discovery benchmark needs a network namespace: ${avail.reason}`)
  const ns: Netns = await createNetns('bench-disc')
  const env = { ...FIXTURE_ENV, RBTNODE_LOG_LEVEL: 'ERROR' }
  const nodes: NodeProcess[] = []
  const make = (i: number, dir?: string, ports?: { api: number, swarm: number }): NodeProcess =>
    new NodeProcess({ n: i, dir, apiPort: ports?.api, swarmPort: ports?.swarm, netns: ns, extraArgs: ['-testNet'], env, startTimeoutMs: 120_000 })
  try {
    for (let i = 0; i < 12; i += 4) nodes.push(...await Promise.all([i, i + 1, i + 2, i + 3].map(async (j) => await make(j).start())))
    const dids = await Promise.all(nodes.slice(0, 10).map(async (q) => {
      const did = await createLiteDid(q.client, QUORUM_PASSWORD)
      await mintRbt(q.client, did, 5, 0, QUORUM_PASSWORD)
      await q.client.call('quorumsSetup', { body: { did, password: QUORUM_PASSWORD, priv_password: QUORUM_PASSWORD } })
      return did
    }))
    const [a, b] = [nodes[10]!, nodes[11]!]
    for (const did of dids.slice(0, 5)) await a.client.call('quorumsAdd', { body: { did } })
    for (const did of dids.slice(5)) await b.client.call('quorumsAdd', { body: { did } })
    const alice = await createLiteDid(a.client, USER_PASSWORD)
    const bob = await createLiteDid(b.client, USER_PASSWORD)
    await mintRbt(a.client, alice, 5, 0, USER_PASSWORD)
    // a first transfer proves the layout works before the cold start
    await waitFor(async () => (await transfer(a.client, alice, bob, 0.1, USER_PASSWORD)).status, { timeoutMs: 120_000, intervalMs: 500, what: 'a first transfer' })

    // every node down, then all started again at once (four at a time), no bootstrap call
    await Promise.all(nodes.map(async (n) => { await n.stop() }))
    const again = nodes.map((n, i) => make(i, n.dir, { api: n.apiPort, swarm: n.swarmPort }))
    for (let i = 0; i < 12; i += 4) await Promise.all(again.slice(i, i + 4).map(async (n) => await n.start()))
    const lastStart = Date.now()
    let attempts = 0
    await waitFor(async () => { attempts++; return (await transfer(again[10]!.client, alice, bob, 0.1, USER_PASSWORD)).status }, { timeoutMs: 120_000, intervalMs: 250, what: 'a transfer after the cold start' })
    const seconds = (Date.now() - lastStart) / 1000
    await Promise.all(again.map(async (n) => { await n.stop() }))
    return {
      discovery_nodes: 12,
      discovery_first_transfer_after_start_s: seconds.toFixed(1),
      discovery_transfer_attempts: attempts
    }
  } finally {
    await Promise.all(nodes.map(async (n) => { await n.dispose().catch(() => {}) }))
    for (const n of nodes) rmSync(n.dir, { recursive: true, force: true })
    await ns.dispose()
  }
}

if (isMain(import.meta.url)) console.log(await run())
