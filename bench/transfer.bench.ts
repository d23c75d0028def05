import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import { availableParallelism } from 'node:os'
import { closeQuorumNetwork, createLiteDid, mintRbt, QUORUM_PASSWORD, quorumNetwork, transfer, USER_PASSWORD } from '../test/helpers/quorum-network.js'
import { isMain, ms, percentile, processThreadCpuMs } from './stats.js'
import { waitFor } from '../test/helpers/wait.js'
import { COMMITTEE_ENV, seatQuorums } from '../test/helpers/committee.js'

/**
 * 1-RBT transfers through 7 quorum nodes, all real processes on this machine: latency over
 * sequential transfers (the whole two-step flow as a client sees it), then throughput with
 * 4 independent sender → receiver pairs running at once. The arbiters of the claims are the peers
 * of each node's view, as before any seat; with BENCH_COMMITTEE=1 the 7 quorums take arbiter seats
 * first (docs/protocol.md, "The arbiter committee"), and the seats are the arbiters.
 */
export async function run (): Promise<Record<string, string | number>> {
  const N = Number(process.env.BENCH_TRANSFERS ?? 100)
  const PER_PAIR = Number(process.env.BENCH_PAIR_TRANSFERS ?? 20)
  // the nodes run with the production gossip heartbeat (1 s), not the test fixture's 100 ms
  process.env.E2E_GOSSIP_HEARTBEAT_MS ??= '1000'
  const committee = process.env.BENCH_COMMITTEE === '1'
  // seats that count at once (the nodes read these from the environment they inherit)
  if (committee) Object.assign(process.env, COMMITTEE_ENV)
  const net = await quorumNetwork()
  try {
    const { a, b, alice, bob } = net
    // every transfer locks 0.2 RBT at five quorums for the pledge period: fund the quorums for the whole run
    // (and a seat's stake of 1 whole RBT)
    const perQuorum = Math.ceil((N + 3 + 4 * PER_PAIR) * 0.2) + (committee ? 1 : 0)
    await Promise.all(net.quorums.map(async (q, i) => { await mintRbt(q.client, net.quorumDids[i], perQuorum, 1000, QUORUM_PASSWORD) }))
    await mintRbt(a.client, alice, N + 5, 10_000, USER_PASSWORD)
    if (committee) await seatQuorums(net.quorums, net.quorumDids, net.all())
    // warm-up: DID documents fetched, chains cached
    for (let i = 0; i < 3; i++) await transfer(a.client, alice, bob, 1, USER_PASSWORD)
    // CPU time of every node process (7 quorums, sender, receiver) over a phase, per transfer, by
    // role, with the part spent off the main thread (V8's compiler and GC helpers, LevelDB)
    const roles = [...net.quorums.map(() => 'quorum' as const), 'sender' as const, 'receiver' as const]
    const procs = [...net.quorums, a, b]
    type Snapshot = Array<{ main: number, other: number }> | undefined
    const cpuNow = (): Snapshot => {
      const out = procs.map((p) => processThreadCpuMs(p.child?.pid))
      return out.every((v) => v !== undefined) ? out as Array<{ main: number, other: number }> : undefined
    }
    // CPU ms all nine processes used since `before` (undefined without /proc)
    const cpuSince = (before: Snapshot): Array<{ main: number, other: number }> | undefined => {
      const after = cpuNow()
      if (before === undefined || after === undefined) return undefined
      return after.map((v, i) => ({ main: v.main - before[i]!.main, other: v.other - before[i]!.other }))
    }
    const cpuPer = (used: Array<{ main: number, other: number }> | undefined, count: number): string => {
      if (used === undefined || count === 0) return 'n/a (no /proc)'
      const of = (role: string): number => used.reduce((sum, u, i) => roles[i] === role ? sum + u.main + u.other : sum, 0) / count
      const total = used.reduce((sum, u) => sum + u.main + u.other, 0)
      const other = used.reduce((sum, u) => sum + u.other, 0)
      const quorumEach = of('quorum') / net.quorums.length
      return `${ms(total / count)} (sender node ${ms(of('sender'))}, receiver node ${ms(of('receiver'))}, each quorum node ${ms(quorumEach)}; ` +
        `${total > 0 ? Math.round(100 * other / total) : 0}% off the main thread)`
    }
    const lat: number[] = []
    const cpu0 = cpuNow()
    for (let i = 0; i < N; i++) {
      const t = performance.now()
      const out = await transfer(a.client, alice, bob, 1, USER_PASSWORD)
      if (!out.status) throw new Error(`transfer ${i} failed: ${out.message}`)
      lat.push(performance.now() - t)
    }
    const seqCpu = cpuPer(cpuSince(cpu0), N)
    const senders = await Promise.all([0, 1, 2, 3].map(async () => await createLiteDid(a.client, USER_PASSWORD)))
    const receivers = await Promise.all([0, 1, 2, 3].map(async () => await createLiteDid(b.client, USER_PASSWORD)))
    for (const [i, s] of senders.entries()) await mintRbt(a.client, s, PER_PAIR, 20_000 + i * 1000, USER_PASSWORD)
    await waitFor(async () => {
      for (const r of receivers) if (!(await a.client.envelope('didResolve', { params: { did: r } })).status) return false
      return true
    }, { timeoutMs: 30_000, what: 'the receivers to resolve' })
    const t0 = performance.now()
    const cpu1 = cpuNow()
    let okCount = 0
    await Promise.all(senders.map(async (s, i) => {
      for (let k = 0; k < PER_PAIR; k++) {
        const out = await transfer(a.client, s, receivers[i], 1, USER_PASSWORD)
        if (out.status) okCount++
      }
    }))
    const secs = (performance.now() - t0) / 1000
    const pairUsed = cpuSince(cpu1)
    const pairCpu = cpuPer(pairUsed, okCount)
    // how many cores the nine processes kept busy: at the machine's core count the rate is bound by
    // CPU, and the rate it allows is cores × 1000 ÷ (CPU ms per transfer)
    const busy = pairUsed === undefined ? 'n/a (no /proc)' : (pairUsed.reduce((s, u) => s + u.main + u.other, 0) / (secs * 1000)).toFixed(2)
    const pairCpuTotal = pairUsed === undefined || okCount === 0 ? undefined : pairUsed.reduce((sum, u) => sum + u.main + u.other, 0) / okCount
    const r1 = (x: number): number => Math.round(x * 10) / 10
    return {
      // the figures under their names (the lines after them say the same with more detail)
      transfer_p50_ms: r1(percentile(lat, 50)),
      transfer_p99_ms: r1(percentile(lat, 99)),
      transfer_4pair_per_s: r1(okCount / secs),
      transfer_cpu_ms: pairCpuTotal === undefined ? 'n/a (no /proc)' : r1(pairCpuTotal),
      transfer_arbiters: committee ? `the ${net.quorums.length} quorums' arbiter seats` : 'the peers of each node\'s view (no seats)',
      [`1-RBT transfer latency p50 (${N} sequential)`]: ms(percentile(lat, 50)),
      [`1-RBT transfer latency p99 (${N} sequential)`]: ms(percentile(lat, 99)),
      'throughput, 4 pairs at once': `${(okCount / secs).toFixed(1)} transfers/s (${okCount}/${4 * PER_PAIR} ok in ${secs.toFixed(1)} s)`,
      'CPU per transfer, all 9 node processes (sequential)': seqCpu,
      'CPU per transfer, all 9 node processes (4 pairs)': pairCpu,
      'cores kept busy, 4 pairs': `${busy} of ${availableParallelism()}`
    }
  } finally {
    await closeQuorumNetwork()
  }
}

if (isMain(import.meta.url)) console.log(await run())
