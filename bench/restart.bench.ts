import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import type { NodeProcess } from '../test/helpers/node-process.js'
import { closeQuorumNetwork, mintRbt, QUORUM_PASSWORD, quorumNetwork, createLiteDid, transfer, USER_PASSWORD } from '../test/helpers/quorum-network.js'
import { Prng, randomSeed } from './chaos/prng.js'
import { isMain, percentile } from './stats.js'

/**
 * Restarts under traffic: the test network (7 quorum nodes, two user nodes) runs RBT transfers both
 * ways between the user nodes while one node at a time, drawn at random, is SIGKILLed at a random
 * instant and started again on the same data dir and ports. A third of the kills land while the
 * node is still starting (its restart is then started once more). Every restart must come up; a
 * failed one is counted, its error and the node's last output lines are printed, and it is started
 * again until it comes up (or the bench gives up on that node after 5 tries).
 *
 * RESTART_KILLS (default 500) sets the number of kills, RESTART_SEED the seed of the draws,
 * RESTART_MAX_MINUTES a time limit (the kills done by then are reported; restart_kills says how many),
 * RESTART_START_TIMEOUT_S how long a start may take before it counts as failed (default 180: a
 * start is slow, not failed, on a machine whose cores are shared many times over).
 * Figures: restart_failures (restarts that did not come up), restart_p99_s (spawn to ready).
 *
 * Then a power cut: every node SIGKILLed at once and all started again together, as after a power
 * failure; `powercut_ready_s` is the time to the last node ready, `powercut_first_transfer_s` the
 * time from then to the first transfer that commits (alice to bob, tried again 100 ms after each
 * refusal, with no other step). RESTART_POWERCUT=0 leaves it out; RESTART_KILLS=0 runs it alone.
 */
export async function run (): Promise<Record<string, string | number>> {
  const kills = Number(process.env.RESTART_KILLS ?? 500)
  const maxMs = Number(process.env.RESTART_MAX_MINUTES ?? Infinity) * 60_000
  const seed = process.env.RESTART_SEED !== undefined ? Number(process.env.RESTART_SEED) >>> 0 : randomSeed()
  const rng = new Prng(seed)
  const say = (s: string): void => { process.stdout.write(`  [restart] ${s}\n`) }
  say(`seed ${seed} (replay: RESTART_SEED=${seed} RESTART_KILLS=${kills} npm run bench -- restart)`)
  const net = await quorumNetwork()
  const nodes = net.all()
  const startTimeoutMs = Number(process.env.RESTART_START_TIMEOUT_S ?? 180) * 1000
  for (const n of nodes) n.opts.startTimeoutMs = startTimeoutMs
  const names = new Map<NodeProcess, string>(nodes.map((n, i) => [n, i < net.quorums.length ? `q${i}` : i === net.quorums.length ? 'a' : 'b']))
  const failures: string[] = []
  const restartS: number[] = []
  let killed = 0
  let transfers = 0
  let refused = 0
  const reasons = new Map<string, number>()
  let going = true
  const powercut: Record<string, string | number> = {}
  try {
    // each transfer pledges at five quorums for the pledge period: fund them for a long run
    await Promise.all(net.quorums.map(async (q, i) => { await mintRbt(q.client, net.quorumDids[i]!, 60, 1000, QUORUM_PASSWORD) }))
    const alice2 = await createLiteDid(net.a.client, USER_PASSWORD)
    await mintRbt(net.a.client, net.alice, 30, 2000, USER_PASSWORD)
    await mintRbt(net.b.client, net.bob, 30, 2000, USER_PASSWORD)
    await mintRbt(net.a.client, alice2, 10, 3000, USER_PASSWORD)
    await net.a.client.call('nodeAddPeers', { body: { DID: alice2, PeerID: net.a.peerId, DIDType: 4 } })
    await net.b.client.call('nodeAddPeers', { body: { DID: alice2, PeerID: net.a.peerId, DIDType: 4 } })

    // traffic: both directions between the nodes, and both ways between two DIDs of node a, without pause
    const flows: Array<[NodeProcess, string, string]> = [[net.a, net.alice, net.bob], [net.b, net.bob, net.alice], [net.a, alice2, net.alice], [net.a, net.alice, alice2]]
    const traffic = Promise.all(flows.map(async ([node, from, to]) => {
      while (going) {
        if (!node.running) { await new Promise((resolve) => setTimeout(resolve, 200)); continue }
        const amount = rng.chance(0.5) ? 1 : rng.int(1, 999) / 1000
        const out = await transfer(node.client, from, to, amount, USER_PASSWORD, 'restart bench').catch((e: Error) => ({ status: false, message: e.message }))
        if (out.status) { transfers++; continue }
        refused++
        const why = out.message.replace(/[0-9a-zA-Z]{40,}/g, '…').replace(/\d+(\.\d+)?/g, 'N').slice(0, 80)
        reasons.set(why, (reasons.get(why) ?? 0) + 1)
        // a refusal (its node restarting, a quorum down) is not retried at once
        await new Promise((resolve) => setTimeout(resolve, 250))
      }
    }))

    /** Starts `n` until it comes up; every failure is counted and printed with the node's own words. */
    const startCounted = async (n: NodeProcess, k: number): Promise<void> => {
      for (let attempt = 1; ; attempt++) {
        n.logs = ''
        const t = performance.now()
        try {
          await n.start()
          restartS.push((performance.now() - t) / 1000)
          if (process.env.RESTART_VERBOSE === '1') say(`kill ${k} ${names.get(n) ?? '?'}: up again in ${((performance.now() - t) / 1000).toFixed(2)} s`)
          return
        } catch (e) {
          const lines = (e as Error).message.trim().split('\n')
          const tail = n.logs.trim().split('\n').slice(-12)
          const what = `kill ${k} ${names.get(n) ?? '?'} attempt ${attempt}: ${lines[0]}`
          failures.push(what)
          say(`RESTART FAILED ${what}\n      ${tail.join('\n      ')}`)
          if (attempt >= 5) throw new Error(`${names.get(n) ?? '?'} does not start again: ${lines[0]}`)
        }
      }
    }

    const t0 = Date.now()
    for (let k = 1; k <= kills && Date.now() - t0 < maxMs; k++) {
      killed = k
      const n = rng.pick(nodes)
      const during = rng.chance(1 / 3)
      if (during) {
        // killed, then killed again while it starts: the start is cut at a random instant (its failure is the point)
        await n.kill()
        n.logs = ''
        const starting = n.start().catch(() => {})
        await new Promise((resolve) => setTimeout(resolve, rng.int(0, 2500)))
        await n.kill()
        await starting
        await n.kill()
      } else {
        await new Promise((resolve) => setTimeout(resolve, rng.int(0, 3000)))
        await n.kill()
      }
      await startCounted(n, k)
      // the others learn its address again (bootstrap peers redial)
      await n.client.call('bootstrapAdd', { body: { peers: nodes.filter((m) => m !== n).map((m) => m.multiaddr) } }).catch(() => {})
      if (k % 25 === 0) say(`${k} kills, ${failures.length} failed restarts, ${transfers} transfers ok, ${refused} refused`)
      // a killed node goes back up before the next kill, so only one node is down at a time
    }
    going = false
    await traffic
    if (process.env.RESTART_POWERCUT !== '0') Object.assign(powercut, await powerCut(net, nodes, say))
  } finally {
    going = false
    await closeQuorumNetwork()
  }
  return {
    restart_seed: seed,
    restart_kills: killed < kills ? `${killed} (of ${kills}: the time limit of ${maxMs / 60_000} min came first)` : killed,
    restart_failures: failures.length,
    restart_p50_s: percentile(restartS, 50).toFixed(2),
    restart_p99_s: percentile(restartS, 99).toFixed(2),
    restart_transfers: `${transfers} ok, ${refused} refused during the kills`,
    restart_refusals: [...reasons.entries()].sort((a, b) => b[1] - a[1]).slice(0, 4).map(([m, k]) => `${k}× ${m}`).join(' | ') || '-',
    ...powercut,
    ...(failures.length > 0 ? { restart_failed: [...new Set(failures.map((f) => f.replace(/^kill \d+ \S+ attempt \d+: /, '')))].slice(0, 5).join(' | ') } : {})
  }
}

/** Every node killed at once, all started together; then transfers until one commits. */
async function powerCut (net: Awaited<ReturnType<typeof quorumNetwork>>, nodes: NodeProcess[], say: (s: string) => void): Promise<Record<string, string | number>> {
  await Promise.all(nodes.map(async (n) => { await n.kill() }))
  const t0 = performance.now()
  let lastReady = t0
  await Promise.all(nodes.map(async (n) => {
    n.logs = ''
    await n.start()
    lastReady = Math.max(lastReady, performance.now())
  }))
  say(`power cut: all ${nodes.length} nodes ready again in ${((lastReady - t0) / 1000).toFixed(2)} s`)
  const reasons = new Map<string, number>()
  let attempts = 0
  for (;;) {
    attempts++
    const out = await transfer(net.a.client, net.alice, net.bob, 1, USER_PASSWORD, 'power cut').catch((e: Error) => ({ status: false, message: e.message }))
    if (out.status) break
    const why = out.message.replace(/[0-9a-zA-Z]{40,}/g, '…').replace(/\d+(\.\d+)?/g, 'N').slice(0, 100)
    reasons.set(why, (reasons.get(why) ?? 0) + 1)
    if (process.env.RESTART_VERBOSE === '1') say(`power cut: attempt ${attempts} at +${((performance.now() - lastReady) / 1000).toFixed(2)} s refused: ${out.message.slice(0, 200)}`)
    if (performance.now() - lastReady > 300_000) throw new Error(`no transfer within 300 s of the power cut: ${[...reasons.keys()].join(' | ')}`)
    await new Promise((resolve) => setTimeout(resolve, 100))
  }
  return {
    powercut_ready_s: ((lastReady - t0) / 1000).toFixed(2),
    powercut_first_transfer_s: ((performance.now() - lastReady) / 1000).toFixed(2),
    powercut_attempts: `${attempts}${reasons.size > 0 ? `: ${[...reasons.entries()].map(([m, k]) => `${k}× ${m}`).join(' | ')}` : ''}`
  }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k} ${String(v)}\n`)
  process.exit(0)
}
