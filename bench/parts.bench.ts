import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import type { NodeProcess } from '../test/helpers/node-process.js'
import { closeQuorumNetwork, createLiteDid, mintRbt, quorumNetwork, rbtBalance, transfer, USER_PASSWORD } from '../test/helpers/quorum-network.js'
import { isMain, loadAverage, median, processThreadCpuMs, settled } from './stats.js'

/**
 * Part tokens on real nodes (7 quorums, a sender and a receiver over libp2p): what a payment costs
 * as its token's ancestry grows, what one transfer of many parts costs, and a balance of many parts.
 *
 * - transfer_ms_depth_1: payments of 0.001 RBT each from a fresh whole token (the part paid has
 *   one ancestor), median of 5.
 * - transfer_ms_depth_1000: one DID pays 0.001 RBT 999 times in a row out of one whole token, so
 *   the part of each payment has one ancestor more than the last; the figure is the median of the
 *   last 5 (999 ancestors: the most a part can have, every part being worth at least 0.001 RBT
 *   less than its parent). BENCH_DEPTH sets how many payments (default 999).
 * - transfer_300_parts_ms: a DID that received 300 of those payments spends 0.3 RBT, one
 *   transfer of 300 parts; the 300 parts then go back and forth twice more, and the figure is the
 *   median of the three (each printed). transfer_1_part_ms: a one-part payment from a DID that
 *   received 5, median of 3. The first 300-part transfer is the first transfer of many tokens
 *   these node processes ever run: it also pays for compiling the code that loops over them (about
 *   a third of its time), which the one-part payments, timed after a thousand others, do not.
 *   Each transfer is timed once the nodes are idle again (`settled`): timed right after another
 *   payment, a transfer shared the CPU with what that payment left running (its announcement's
 *   gossip rounds on every node, pledge refills, marker stores).
 * - balance_ms_300_parts: GET balance of the DID holding 300 parts, median of 20.
 *
 * PARTS_ONLY=300 takes only the 300-part figure and the one-part figure it is compared with (305
 * payments instead of 999, no depth-1 or balance figures), and adds the CPU time each node process
 * spent during the 300-part transfer and during one one-part transfer, and the transfer's window on
 * the monotonic clock (to cut a `--cpu-prof` profile of the nodes, see E2E_NODE_FLAGS).
 */
export async function run (): Promise<Record<string, string | number>> {
  const partsOnly = process.env.PARTS_ONLY === '300'
  const DEPTH = partsOnly ? 305 : Math.max(320, Number(process.env.BENCH_DEPTH ?? 999))
  const net = await quorumNetwork()
  try {
    const { a, b, bob } = net
    const timed = async (from: string, to: string, amount: number, memo: string): Promise<number> => {
      const t0 = performance.now()
      const r = await transfer(a.client, from, to, amount, USER_PASSWORD, memo)
      const took = performance.now() - t0
      if (!r.status) throw new Error(`${memo}: ${r.message}`)
      return took
    }
    // depth 1: five DIDs, one whole token each, one payment each
    const shallow: number[] = []
    for (let i = 0; i < (partsOnly ? 0 : 5); i++) {
      const d = await createLiteDid(a.client, USER_PASSWORD)
      await mintRbt(a.client, d, 1, 0, USER_PASSWORD)
      shallow.push(await timed(d, bob, 0.001, `depth-1 payment ${i}`))
    }
    // the deep wallet; its first 300 payments go to `many` (on B), the next 5 to `few` (on A), the rest to bob
    const deep = await createLiteDid(a.client, USER_PASSWORD)
    await mintRbt(a.client, deep, 1, 0, USER_PASSWORD)
    const many = await createLiteDid(b.client, USER_PASSWORD)
    const few = await createLiteDid(a.client, USER_PASSWORD)
    await a.client.call('nodeAddPeers', { body: { DID: many, PeerID: b.peerId, DIDType: 4 } })
    await b.client.call('nodeAddPeers', { body: { DID: deep, PeerID: a.peerId, DIDType: 4 } })
    const all: number[] = []
    const t0 = performance.now()
    for (let i = 1; i <= DEPTH; i++) {
      const to = i <= 300 ? many : i <= 305 ? few : bob
      all.push(await timed(deep, to, 0.001, `deep payment ${i}`))
      if (i % 100 === 0) process.stdout.write(`  … ${i} payments, ${((performance.now() - t0) / 1000).toFixed(0)} s\n`)
    }
    const lastFive = all.slice(-5)
    // balance of 300 parts
    const bal: number[] = []
    for (let i = 0; i < (partsOnly ? 0 : 20); i++) {
      const s = performance.now()
      const v = await rbtBalance(b.client, many)
      bal.push(performance.now() - s)
      if (Math.round(v * 1000) !== 300) throw new Error(`the DID of 300 parts shows ${v} RBT`)
    }
    // one part, then 300 parts in one transfer; each timed once the nodes are idle again
    const one: number[] = []
    const nodes = net.all()
    const pids = nodes.map((n) => n.child?.pid)
    const waits: number[] = []
    let cpuOneSum = nodes.map(() => 0)
    for (let i = 0; i < 3; i++) {
      waits.push(await settled(pids))
      const c0 = cpuMs(nodes)
      one.push(await timed(few, bob, 0.001, `one-part payment ${i}`))
      cpuOneSum = cpuMs(nodes).map((v, j) => cpuOneSum[j] + v - c0[j])
    }
    const cpuOne = cpuOneSum.map((v) => v / 3)
    // three transfers of the same 300 parts, there and back and there again, each on idle nodes:
    // the first is the first many-part transfer these processes ever run (the JIT compiles the
    // paths that loop over 300 tokens, the two DIDs are met for the first time)
    const runs: Array<{ ms: number, cpu: number[], main: number[], window: string, txid?: string }> = []
    for (let k = 0; k < 3; k++) {
      const [client, from, to] = k % 2 === 0 ? [b.client, many, net.alice] : [a.client, net.alice, many]
      waits.push(await settled(pids))
      const c0 = cpuMs(nodes)
      const m0 = mainCpuMs(nodes)
      const w0 = process.hrtime.bigint()
      const s0 = performance.now()
      const r = await transfer(client, from, to, 0.3, USER_PASSWORD, `300 parts ${k + 1}`)
      const ms = performance.now() - s0
      const w1 = process.hrtime.bigint()
      if (!r.status) throw new Error(`300 parts (${k + 1}): ${r.message}`)
      runs.push({ ms, cpu: cpuMs(nodes).map((v, i) => v - c0[i]), main: mainCpuMs(nodes).map((v, i) => v - m0[i]), window: `${w0 / 1000n}-${w1 / 1000n}`, txid: r.txid })
    }
    const t300 = median(runs.map((r) => r.ms))
    const cpu300 = runs[0]!.cpu
    const main300 = runs[0]!.main
    const r1 = (x: number): number => Math.round(x * 10) / 10
    const names = nodes.map((n) => n === a ? 'A (receiver of the one-part payments)' : n === b ? 'B (sender of 300 parts)' : `quorum ${net.quorums.indexOf(n)}`)
    // with E2E_LOG_LEVEL=DEBUG: the sender's and quorums' own timings of the phases of each 300-part transfer
    const phases = Object.assign({}, ...runs.map((r, k) => Object.fromEntries(Object.entries(phaseLines(nodes, names, r.txid)).map(([n, v]) => [`${n} (transfer ${k + 1})`, v])))) as Record<string, string>
    if (partsOnly) {
      const sum = (xs: number[]): number => xs.reduce((x, y) => x + y, 0)
      return {
        transfer_300_parts_ms: r1(t300),
        transfer_1_part_ms: r1(median(one)),
        '300 parts ÷ 1 part (goal ≤ 5)': (t300 / median(one)).toFixed(2),
        '300-part transfers: first / second / third (ms)': runs.map((r) => r1(r.ms)).join(' / '),
        'CPU ms of all nodes: 300 parts (first / third) / 1 part (mean of 3)': `${r1(sum(cpu300))} / ${r1(sum(runs[2]!.cpu))} / ${r1(sum(cpuOne))}`,
        'CPU ms of all nodes during the first and third 300-part transfers: main threads / other threads (JIT, GC, storage)': `${r1(sum(main300))} / ${r1(sum(cpu300) - sum(main300))}, ${r1(sum(runs[2]!.main))} / ${r1(sum(runs[2]!.cpu) - sum(runs[2]!.main))}`,
        ...Object.fromEntries(names.map((n, i) => [`CPU ms ${n}: 300 parts (first) / 1 part`, `${r1(cpu300[i])} / ${r1(cpuOne[i])}`])),
        'load average at the end': loadAverage(),
        'waits for idle nodes before each timed transfer (ms)': waits.map((w) => Math.round(w)).join(' / '),
        '300-part transfer windows (monotonic µs)': runs.map((r) => r.window).join(' '),
        ...phases
      }
    }
    return {
      transfer_ms_depth_1: r1(median(shallow)),
      transfer_ms_depth_1000: r1(median(lastFive)),
      transfer_300_parts_ms: r1(t300),
      transfer_1_part_ms: r1(median(one)),
      balance_ms_300_parts: r1(median(bal)),
      'depth 1000 ÷ depth 1 (goal ≤ 1.5)': (median(lastFive) / median(shallow)).toFixed(2),
      '300 parts ÷ 1 part (goal ≤ 5)': (t300 / median(one)).toFixed(2),
      '300-part transfers: first / second / third (ms)': runs.map((r) => r1(r.ms)).join(' / '),
      'one-part payments (ms)': one.map(r1).join(' / '),
      'waits for idle nodes before each timed transfer (ms)': waits.map((w) => Math.round(w)).join(' / '),
      [`payments of the deep wallet (${DEPTH}): first 5, median`]: `${r1(median(all.slice(0, 5)))} ms`,
      [`payments of the deep wallet (${DEPTH}): all, median`]: `${r1(median(all))} ms`,
      ...phases
    }
  } finally {
    await closeQuorumNetwork()
  }
}

/** CPU time (user + system, ms) each node process's main thread has used so far. */
function mainCpuMs (nodes: NodeProcess[]): number[] {
  return nodes.map((n) => processThreadCpuMs(n.child?.pid)?.main ?? NaN)
}

/** CPU time (user + system, ms, all threads) each node process has used so far. */
function cpuMs (nodes: NodeProcess[]): number[] {
  return nodes.map((n) => {
    const t = processThreadCpuMs(n.child?.pid)
    return t === undefined ? NaN : t.main + t.other
  })
}

if (isMain(import.meta.url)) console.log(await run())

/** The debug lines the nodes logged about transaction `txid` (its phases), by node. */
function phaseLines (nodes: NodeProcess[], names: string[], txid: string | undefined): Record<string, string> {
  if (txid === undefined) return {}
  const short = txid.slice(0, 12)
  const out: Record<string, string> = {}
  nodes.forEach((n, i) => {
    const lines = n.logs.split('\n').filter((l) => l.includes(short)).map((l) => l.replace(/^.*?(transfer|prepare|cs\.prepare|sign|deliver)/, '$1'))
    if (lines.length > 0) out[`phases ${names[i]}`] = lines.join(' | ')
  })
  return out
}
