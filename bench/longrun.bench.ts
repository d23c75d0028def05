import '../src/util/polyfill.js'
import { readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { NodeProcess } from '../test/helpers/node-process.js'
import { closeQuorumNetwork, createLiteDid, mintRbt, QUORUM_PASSWORD, quorumNetwork, transfer, USER_PASSWORD } from '../test/helpers/quorum-network.js'
import { waitFor } from '../test/helpers/wait.js'
import { measureCopy, measureDataDir, type DiskFigures } from './disk-usage.js'
import { isMain, settled } from './stats.js'

/**
 * A node that pays for months, compressed: the test network (7 quorum nodes, a paying node A, a
 * receiving node B) runs LONGRUN_TRANSFERS (default 5,000) payments of 0.1 RBT from A to B one
 * after another, then LONGRUN_PAIR_TRANSFERS (default 1,000) more from 4 new payers on A to 4 new
 * receivers on B, the 4 pairs at once.
 *
 * Every node runs with `--expose-gc`, so its `rbtnode_heap_used_after_gc_bytes` is read after a full
 * collection. For the payer, the receiver and one quorum it prints, at LONGRUN_CHECKPOINT (default
 * 1,000) payments and at the end: `rss_mib`, `heap_used_mib`; and `heap_growth_mib_per_1k_tx` from
 * the checkpoint to the end per 1,000 transactions of that role (the goal is ≤ 1). Then the nodes are
 * stopped and their databases compacted: `disk_bytes_per_tx` is the data directory's growth per
 * transaction of the role from an idle copy taken before the first payment, with the growth of each
 * collection beside it (blocks, token records, transaction records: what a transfer must keep), and
 * `written_bytes_per_tx`, the records the node handed to LevelDB per transaction
 * (`rbtnode_storage_written_bytes_total`: a record written again at each step counts each time).
 *
 * `LONGRUN_TRANSFERS=600 LONGRUN_PAIR_TRANSFERS=200 LONGRUN_CHECKPOINT=200 npm run bench -- longrun`
 * is a short run of the same.
 */
export async function run (): Promise<Record<string, string | number>> {
  const SEQ = Number(process.env.LONGRUN_TRANSFERS ?? 5000)
  const PAIRS = Number(process.env.LONGRUN_PAIR_TRANSFERS ?? 1000)
  const CHECK = Math.min(Number(process.env.LONGRUN_CHECKPOINT ?? 1000), SEQ)
  const AMOUNT = 0.1
  const PER_PAIR = Math.ceil(PAIRS / 4)
  const say = (s: string): void => { process.stdout.write(`  [longrun] ${s}\n`) }
  // production gossip heartbeat; every node can be collected on demand
  process.env.E2E_GOSSIP_HEARTBEAT_MS ??= '1000'
  process.env.E2E_NODE_FLAGS = `${process.env.E2E_NODE_FLAGS ?? ''} --expose-gc`.trim()
  const net = await quorumNetwork()
  const { a, b, alice, bob } = net
  // the quorum compared is the one that signed most of the first payments (chosen at the checkpoint)
  const roles: Array<[string, NodeProcess, string]> = [['payer', a, 'sender'], ['receiver', b, 'receiver'], ['quorum', net.quorums[1]!, 'quorum']]
  const out: Record<string, string | number> = {}
  const scratch = join(tmpdir(), `rbtnode-longrun-${process.pid}`)
  try {
    // a 0.1-RBT transfer pledges a fifth of it at five quorums, held for the pledge period: fund them
    const perQuorum = Math.ceil((SEQ + 4 * PER_PAIR) * AMOUNT * 0.3) + 5
    say(`funding: ${perQuorum} RBT per quorum, ${Math.ceil(SEQ * AMOUNT) + 2} RBT for the payer`)
    await Promise.all(net.quorums.map(async (n, i) => { await mintRbt(n.client, net.quorumDids[i]!, perQuorum, 1000, QUORUM_PASSWORD) }))
    await mintRbt(a.client, alice, Math.ceil(SEQ * AMOUNT) + 2, 10_000, USER_PASSWORD)
    const senders = await Promise.all([0, 1, 2, 3].map(async () => await createLiteDid(a.client, USER_PASSWORD)))
    const receivers = await Promise.all([0, 1, 2, 3].map(async () => await createLiteDid(b.client, USER_PASSWORD)))
    for (const [i, s] of senders.entries()) await mintRbt(a.client, s, Math.ceil(PER_PAIR * AMOUNT) + 1, 20_000 + i * 1000, USER_PASSWORD)
    await waitFor(async () => {
      for (const r of receivers) if (!(await a.client.envelope('didResolve', { params: { did: r } })).status) return false
      return true
    }, { timeoutMs: 30_000, what: 'the receivers to resolve' })
    for (let i = 0; i < 3; i++) await mustPay(a, alice, bob, AMOUNT, -1)

    // the idle data directories before the first payment counted
    await settled(net.all().map((n) => n.child?.pid), { windowMs: 500, maxCpuMs: 50, deadlineMs: 30_000 })
    const before = new Map<string, { disk: DiskFigures, tx: number, written: number }>()
    const measureBefore = async (name: string, n: NodeProcess, role: string): Promise<void> => {
      const m = await metrics(n)
      before.set(name, { disk: await measureCopy(n.dir, `${scratch}-${name}`), tx: await txCount(n, role, m), written: metric(m, 'rbtnode_storage_written_bytes_total') })
    }
    for (const [name, n, role] of roles.slice(0, 2)) await measureBefore(name, n, role)
    // every quorum's before: the one compared is known at the checkpoint
    const quorumsBefore = new Map<NodeProcess, { disk: DiskFigures, tx: number, written: number }>()
    for (const n of net.quorums) { await measureBefore('quorum', n, 'quorum'); quorumsBefore.set(n, before.get('quorum')!) }

    type Sample = { tx: number, rss: number, heap: number, written: number }
    const seen: Record<string, Sample[]> = { payer: [], receiver: [], quorum: [] }
    const sample = async (): Promise<void> => {
      for (const [name, n, role] of roles) {
        const m = await metrics(n)
        seen[name]!.push({ tx: await txCount(n, role, m), rss: rssMib(n), heap: metric(m, 'rbtnode_heap_used_after_gc_bytes') / 2 ** 20, written: metric(m, 'rbtnode_storage_written_bytes_total') })
      }
    }
    const t0 = performance.now()
    for (let i = 1; i <= SEQ; i++) {
      await mustPay(a, alice, bob, AMOUNT, i)
      if (i === CHECK) {
        const counts = await Promise.all(net.quorums.map(async (n) => await txCount(n, 'quorum')))
        const busiest = net.quorums[counts.indexOf(Math.max(...counts))]!
        roles[2] = ['quorum', busiest, 'quorum']
        before.set('quorum', quorumsBefore.get(busiest)!)
        say(`the quorum compared: node ${net.quorums.indexOf(busiest)} (${Math.max(...counts)} of the ${CHECK} payments)`)
        await sample()
      }
      if (i % 500 === 0) say(`${i} payments in ${((performance.now() - t0) / 1000).toFixed(0)} s; payer rss ${rssMib(a).toFixed(0)} MiB`)
    }
    say(`4 pairs at once, ${PER_PAIR} payments each`)
    await Promise.all(senders.map(async (s, i) => {
      for (let k = 0; k < PER_PAIR; k++) await mustPay(a, s, receivers[i]!, AMOUNT, k)
    }))
    await settled(net.all().map((n) => n.child?.pid), { windowMs: 500, maxCpuMs: 50, deadlineMs: 30_000 })
    await sample()
    say(`all payments in ${((performance.now() - t0) / 1000).toFixed(0)} s`)

    const r1 = (x: number): number => Math.round(x * 10) / 10
    const r2 = (x: number): number => Math.round(x * 100) / 100
    for (const [name] of roles) {
      const [at1k, end] = seen[name] as [Sample, Sample]
      out[`${name}_rss_mib_at_${CHECK}`] = r1(at1k.rss)
      out[`${name}_heap_used_mib_at_${CHECK}`] = r1(at1k.heap)
      out[`${name}_rss_mib_end`] = r1(end.rss)
      out[`${name}_heap_used_mib_end`] = r1(end.heap)
      out[`${name}_heap_growth_mib_per_1k_tx`] = end.tx > at1k.tx ? r2((end.heap - at1k.heap) / (end.tx - at1k.tx) * 1000) : 'n/a'
      out[`${name}_tx_counted`] = `${at1k.tx} at the checkpoint, ${end.tx} at the end (its own rbtnode_transfers_total)`
    }

    // stopped, compacted, measured; the nodes are removed after
    for (const n of net.all()) await n.stop()
    for (const [name, n] of roles) {
      const was = before.get(name)!
      const now = await measureDataDir(n.dir)
      const tx = seen[name]![1]!.tx - was.tx
      out[`${name}_disk_bytes_per_tx`] = tx > 0 ? Math.round((now.compacted - was.disk.compacted) / tx) : 'n/a'
      out[`${name}_disk_before_compaction_bytes_per_tx`] = tx > 0 ? Math.round((now.asWritten - was.disk.asWritten) / tx) : 'n/a'
      out[`${name}_written_bytes_per_tx`] = tx > 0 ? Math.round((seen[name]![1]!.written - was.written) / tx) : 'n/a'
      out[`${name}_kept_per_tx`] = keptPerTx(was.disk, now, tx)
    }
    return out
  } finally {
    await closeQuorumNetwork()
  }
}

async function mustPay (n: NodeProcess, from: string, to: string, amount: number, i: number): Promise<void> {
  const r = await transfer(n.client, from, to, amount, USER_PASSWORD)
  if (!r.status) throw new Error(`payment ${i} failed: ${r.message}`)
}

async function metrics (n: NodeProcess): Promise<string> {
  const res = await fetch(`${n.url}/metrics`)
  return await res.text()
}

/** The sum of every sample of a family (all label sets). */
function metric (text: string, name: string, labels?: RegExp): number {
  let sum = 0
  for (const line of text.split('\n')) {
    if (!line.startsWith(name)) continue
    const rest = line.slice(name.length)
    if (rest[0] !== ' ' && rest[0] !== '{') continue
    if (labels !== undefined && !labels.test(rest)) continue
    sum += Number(line.slice(line.lastIndexOf(' ') + 1))
  }
  return sum
}

async function txCount (n: NodeProcess, role: string, text?: string): Promise<number> {
  return metric(text ?? await metrics(n), 'rbtnode_transfers_total', new RegExp(`role="${role}",outcome="committed"`))
}

function rssMib (n: NodeProcess): number {
  const status = readFileSync(`/proc/${n.child!.pid!}/status`, 'utf8')
  return Number(/VmRSS:\s+(\d+)/.exec(status)?.[1] ?? NaN) / 1024
}

/** Growth per transaction of each collection that grew, largest first: `blocks 812 B (1.0 rec)`. */
function keptPerTx (was: DiskFigures, now: DiskFigures, tx: number): string {
  if (tx <= 0) return 'n/a'
  const rows: Array<[string, number, number]> = []
  for (const [name, c] of now.collections) {
    const w = was.collections.get(name) ?? { records: 0, bytes: 0 }
    const bytes = (c.bytes - w.bytes) / tx
    if (Math.abs(bytes) >= 1) rows.push([name, bytes, (c.records - w.records) / tx])
  }
  rows.sort((x, y) => y[1] - x[1])
  const total = rows.reduce((s, r) => s + r[1], 0)
  return `${Math.round(total)} B of records: ` + rows.map(([name, bytes, recs]) => `${name} ${Math.round(bytes)} B (${recs.toFixed(2)} rec)`).join(', ')
}

if (isMain(import.meta.url)) console.log(await run())
