import '../src/util/polyfill.js'
import { execFileSync } from 'node:child_process'
import { closeSync, mkdtempSync, openSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../src/storage/level-store.js'
import { auditLedger } from '../src/storage/token-ledger.js'
import { Collections, type BlockRecord, type TokenRecord } from '../src/storage/token-records.js'
import { createLan, netnsAvailable, type Lan } from '../test/helpers/netns.js'
import { NodeExitedError, NodeProcess } from '../test/helpers/node-process.js'
import { USER_PASSWORD, complete } from '../test/helpers/quorum-network.js'
import { mintTestRbt } from '../src/testnet/setup.js'
import { generateMnemonic } from '../src/wallet/bip39.js'
import { waitFor } from '../test/helpers/wait.js'
import { checkInvariants, ftKey, type ChaosState, type OpView, type Outcome, type TokenView, type TxView } from './chaos/invariants.js'
import { CHAOS_ENV, QUORUMS, QUORUM_SETS, buildNetwork, type ChaosNetwork, type ChaosNode } from './chaos/network.js'
import { planOp, type PlannedOp } from './chaos/ops.js'
import { settle } from './chaos/outcome.js'
import { Evidence, namedNodes } from './chaos/evidence.js'
import { Prng, randomSeed } from './chaos/prng.js'
import { DEFAULT_FAULTS, PARTITION_KINDS, planFaults, type FaultEvent } from './chaos/schedule.js'

/**
 * Chaos soak against real node processes (`npm run chaos -- --minutes 3 [--seed N] [--nodes 10]`):
 * 7 quorum nodes and the rest user nodes (3 DIDs each, funded, two FT kinds, a few NFTs; half of
 * them list one quorum set, half another), random concurrent RBT/FT/NFT transfers, and a seeded
 * fault scheduler that SIGKILLs nodes of any role (restarting them after a random delay), freezes
 * some (SIGSTOP, SIGCONT seconds later), partitions the LAN (each node in a network namespace of
 * its own, joined by a bridge) and fills the disk of nodes whose data dir is a small tmpfs. After
 * every restart the node is checked to still have every transfer it acknowledged; after every heal
 * the parted nodes must reach each other again. At the end every node is up, the recovery sweeps
 * get a quiet period (until nothing is Locked and no transfer is open, with a deadline), and the
 * invariants of bench/chaos/invariants.ts are checked. The same seed replays the same operations
 * and faults (docs/chaos.md). The last line is `chaos: <ops> ops, <kills> kills, <pauses> pauses,
 * <partitions> partitions, <full> full disks, <lost> lost, <dup> duplicated, <stuck> stuck`; the
 * exit code is non-zero when a check failed.
 */
const args = process.argv.slice(2)
const opt = (name: string): string | undefined => { const i = args.indexOf(`--${name}`); return i >= 0 ? args[i + 1] : undefined }
const num = (name: string, dflt: number): number => { const v = opt(name); return v === undefined ? dflt : Number(v) }
const minutes = num('minutes', 3)
const seed = opt('seed') !== undefined ? Number(opt('seed')) >>> 0 : randomSeed()
const nodeCount = Math.max(QUORUMS + 2, num('nodes', 10))
const workers = Math.max(1, num('workers', 4))
const keep = args.includes('--keep')
const quietMs = num('quiet-seconds', 180) * 1000
// --label <name>: the namespaces' names (two soaks on one machine need two)
/** seconds a parted node has, after the heal, to reach each peer again (a ping) */
const reconnectMs = num('reconnect-seconds', 90) * 1000
/** size of the tmpfs of the nodes with a disk fault */
const diskMb = num('disk-mb', 64)
/** at most this many faults under way at once (a slow machine restarts slowly: more at once keep the fault rate) */
const maxFaults = Math.max(1, num('max-faults', DEFAULT_FAULTS.maxConcurrent))

const t0 = Date.now()
const log = (s: string): void => { process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${s}\n`) }
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

const started: NodeProcess[] = []
const stats = { races: 0, racesPaidTwice: 0, racesBothRefused: 0, racesSkipped: 0, supplyChecks: 0, ops: 0, skipped: 0, kills: 0, pauses: 0, partitions: 0, byPartition: { isolate: 0, quorums: 0, split: 0 } as Record<string, number>, splitsAfterSigning: 0, reconnectMaxMs: 0, fullDisks: 0, restartChecks: 0, restartFailures: 0, byOutcome: { ok: 0, pending: 0, failed: 0, unknown: 0 } as Record<Outcome, number>, byKind: { rbt: 0, ft: 0, nft: 0 } }
const failures = new Map<string, number>()
const diagnostics: string[] = []
/** problems found during the run (a restarted node missing an acknowledged transfer, parted nodes that did not find each other) */
const runProblems: string[] = []
/** when each operation got its answer (the per-restart check looks at those answered before the kill) */
const answeredAt = new Map<OpView, number>()
/** operations under way, with the nodes of their sender and receiver (a split waits for one) */
const inFlight = new Set<{ from: ChaosNode, to: ChaosNode }>()
let lan: Lan | undefined
const tmpfsDirs: string[] = []
/** copies of data dirs and whole outputs of the nodes a problem is about (kept when the soak ends with one) */
const evidence = new Evidence(join(tmpdir(), `chaos-${seed}-evidence`))
/** every node of the soak, the fullnode included, once built (the evidence at the end reads them) */
const everyNode: ChaosNode[] = []

async function main (): Promise<number> {
  const passed = args.filter((a, i) => !['--seed', '--minutes', '--nodes'].includes(a) && !['--seed', '--minutes', '--nodes'].includes(args[i - 1] ?? ''))
  log(`chaos seed ${seed} (replay: npm run chaos -- --seed ${seed} --minutes ${minutes} --nodes ${nodeCount}${passed.length > 0 ? ` ${passed.join(' ')}` : ''})`)
  const rng = new Prng(seed)
  evidence.discard()
  const useLan = !args.includes('--no-netns') && await netnsAvailable()
  const twoQuorumSets = !args.includes('--one-quorum-set')
  // the disk faults need tmpfs mounts (root on Linux); the nodes with one: a user node and a quorum node
  const diskNodes = !args.includes('--no-disk') && process.platform === 'linux' && process.getuid?.() === 0 ? [QUORUMS, 1] : []
  const diskDirs = new Map<number, string>()
  for (const i of diskNodes) {
    const dir = mkdtempSync(join(tmpdir(), 'rbtnode-chaos-disk-'))
    execFileSync('mount', ['-t', 'tmpfs', '-o', `size=${diskMb}m,mode=0700`, 'tmpfs', dir])
    tmpfsDirs.push(dir)
    diskDirs.set(i, dir)
  }
  // one more namespace for the racing owner's fullnode (not faulted, holds no DID)
  if (useLan) lan = await createLan(opt('label') ?? 'chaos', nodeCount + 1)
  log(`${useLan ? `each node in a network namespace of its own on a bridge (${lan!.members[0]!.ip}…)` : 'nodes on 127.0.0.1 (no namespaces: no partition faults)'}; ${twoQuorumSets ? `user nodes list quorum sets ${QUORUM_SETS.map((s) => s.map((q) => `q${q}`).join(',')).join(' and ')} in turn` : 'one quorum set'}; ${diskNodes.length > 0 ? `data dirs of ${diskNodes.map((i) => i >= QUORUMS ? `u${i - QUORUMS}` : `q${i}`).join(' and ')} on ${diskMb} MB tmpfs` : 'no disk faults'}`)
  const net = await buildNetwork({ userNodes: nodeCount - QUORUMS, didsPerNode: 3, rbtPerDid: 20, nftCount: 6, started, log, lan, dir: (i) => diskDirs.get(i), twoQuorumSets })
  const full = await startFullnode(net)
  everyNode.push(...net.nodes, full)
  const setupMs = Date.now() - t0
  log(`setup done in ${(setupMs / 1000).toFixed(1)} s: ${net.nodes.length} nodes, ${net.users.length} user DIDs, ${net.rbtMilli / 1000} RBT, FT ${net.ft.map((f) => `${f.name}×${f.count}`).join(' ')}, ${net.nfts.length} NFTs`)

  const durationMs = minutes * 60_000
  const plan = planFaults(rng.fork('faults'), { ...DEFAULT_FAULTS, maxConcurrent: maxFaults, durationMs, nodes: net.nodes.length, quorums: QUORUMS, diskNodes, partitionShare: useLan ? DEFAULT_FAULTS.partitionShare : 0 })
  log(`fault plan: ${plan.filter((f) => f.kind === 'kill').length} kills, ${plan.filter((f) => f.kind === 'pause').length} pauses, ${plan.filter((f) => PARTITION_KINDS.has(f.kind)).length} partitions, ${plan.filter((f) => f.kind === 'diskfull').length} full disks over ${minutes} min`)

  const runStart = Date.now()
  const endAt = runStart + durationMs
  const ops: OpView[] = []
  const nftOwner: Array<string | undefined> = net.nfts.map((_, i) => net.users[i % net.users.length]!.did)

  const restarts = new Map<ChaosNode, Promise<void>>()
  const paused = new Set<ChaosNode>()
  const faults = runFaults(plan, net, runStart, restarts, paused, ops, diskDirs)
  // traffic goes on while faults remain (slow restarts delay them past the planned end)
  let faultsDone = false
  void faults.finally(() => { faultsDone = true })
  const going = (): boolean => Date.now() < endAt || !faultsDone
  const traffic = Promise.all([
    ...Array.from({ length: workers }, async (_, w) => { await worker(w, rng.fork(`ops/${w}`), net, ops, nftOwner, going) }),
    racer(rng.fork('racer'), net, full, ops, going)
  ])
  let reporting = true
  const reporter = (async () => {
    while (reporting) {
      await sleep(30_000)
      if (!reporting) break
      log(`${((Date.now() - runStart) / 60_000).toFixed(1)} min: ${stats.ops} ops (${stats.byOutcome.ok} ok, ${stats.byOutcome.pending} pending, ${stats.byOutcome.failed} refused, ${stats.byOutcome.unknown} unknown), ${stats.kills} kills, ${stats.pauses} pauses, ${stats.partitions} partitions, ${stats.fullDisks} full disks, ${net.nodes.filter((n) => !n.proc.running).length} down`)
    }
  })()
  await faults
  await traffic
  reporting = false
  const runMs = Date.now() - runStart
  log(`traffic stopped after ${(runMs / 1000).toFixed(0)} s: ${stats.ops} ops`)

  // ---- every node up
  for (const n of paused) { process.kill(n.proc.child!.pid!, 'SIGCONT'); paused.delete(n) }
  await Promise.all([...restarts.values()])
  for (const n of net.nodes) if (!n.proc.running) await restart(n, net)
  log('every node up; quiet period for the recovery sweeps')
  const quietStart = Date.now()
  let last: string[] = []
  await waitFor(async () => { last = await unsettled(net); return last.length === 0 }, { timeoutMs: quietMs, intervalMs: 1000, what: 'the network to settle' })
    .catch(() => { log(`still unsettled after ${quietMs / 1000} s: ${last.slice(0, 10).join('; ')}`) })
  log(`quiet period: ${((Date.now() - quietStart) / 1000).toFixed(1)} s`)

  // ---- gather
  const state = await gather(net)
  state.chainProblems.push(...runProblems)
  // a racing owner's mint whose answer was cut (its node killed): minted when its token exists
  const minted = new Set(state.tokens.filter((t) => suspectMints.has(t.owner) && t.kind === 'rbt').map((t) => t.tokenId))
  net.rbtMilli += 1000 * minted.size
  const verdict = checkInvariants(state, {
    rbtMilli: net.rbtMilli,
    ft: Object.fromEntries(net.ft.map((f) => [ftKey(f.name, f.creator), f.count])),
    nfts: net.nfts
  }, ops)
  const totalMs = Date.now() - t0
  const problemsFile = join(tmpdir(), `chaos-${seed}-problems.txt`)
  if (verdict.problems.length > 0) {
    // every node's data dir and output as the soak ended; each problem names those of its nodes
    const atEnd = new Map(everyNode.map((n) => [n.name, evidence.keep(evidenceOf(n), 'end')]))
    const fallback = (p: string): string[] => {
      const named = namedNodes(p, everyNode).filter((m) => atEnd.has(m))
      if (named.length === 0) return [`    (no node named: every node's data dir and output are under ${evidence.dir})`]
      return named.slice(0, 3).flatMap((m) => [...atEnd.get(m)!.slice(0, 1), ...atEnd.get(m)!.slice(-10)])
    }
    writeFileSync(problemsFile, [...evidence.render(verdict.problems, fallback), '', 'records of the tokens the audits name:', ...diagnostics].join('\n') + '\n')
  }
  const keepEvidence = evidence.kept > 0 && (verdict.problems.length > 0 || stats.restartFailures > 0)
  if (!keepEvidence) evidence.discard()

  const c = verdict.counts
  process.stdout.write([
    `chaos_seed ${seed}`,
    `chaos_nodes ${net.nodes.length} (${QUORUMS} quorum, ${net.nodes.length - QUORUMS} user), ${net.users.length} user DIDs, ${workers} workers`,
    `chaos_setup_s ${(setupMs / 1000).toFixed(1)}`,
    `chaos_run_s ${(runMs / 1000).toFixed(1)}`,
    `chaos_total_s ${(totalMs / 1000).toFixed(1)}`,
    `chaos_ops ${stats.ops} (rbt ${stats.byKind.rbt}, ft ${stats.byKind.ft}, nft ${stats.byKind.nft}; ${stats.skipped} skipped: sender's node down)`,
    `chaos_ops_per_s ${(stats.ops / (runMs / 1000)).toFixed(2)}`,
    `chaos_outcomes ok ${stats.byOutcome.ok}, delivery pending ${stats.byOutcome.pending}, refused ${stats.byOutcome.failed}, unknown ${stats.byOutcome.unknown}`,
    `chaos_refusals ${[...failures.entries()].sort((a, b) => b[1] - a[1]).slice(0, 8).map(([m, k]) => `${k}× ${m}`).join(' | ') || '-'}`,
    `chaos_faults ${stats.kills} kills, ${stats.pauses} pauses, ${stats.partitions} partitions (${Object.entries(stats.byPartition).map(([k, v]) => `${v} ${k}`).join(', ')}; ${stats.splitsAfterSigning} splits while a transfer between them was signed), ${stats.fullDisks} full disks, ${stats.restartFailures} failed restarts`,
    `chaos_races ${stats.races} racing owners (one wallet on two nodes of different quorum sets, both spending its token at once): ${stats.racesPaidTwice} paid twice, ${stats.racesBothRefused} both refused, ${stats.racesSkipped} skipped (a node down or the set-up cut); supply checked after ${stats.supplyChecks} heals; ${c.staleCopies} stale copies of spent tokens left on restored wallets`,
    `chaos_checks ${stats.restartChecks} restarts checked for acknowledged transfers; reconnect after a heal at most ${(stats.reconnectMaxMs / 1000).toFixed(1)} s; ${runProblems.length} problems during the run`,
    `chaos_final ${c.heldTokens} held tokens, ${c.rbtMilli / 1000} RBT (minted ${net.rbtMilli / 1000}), ${c.ftUnits} FT units, ${c.nfts} NFTs, ${c.committedOps} ops committed`,
    `chaos_problems ${verdict.problems.length}${verdict.problems.length > 0 ? ` (all in ${problemsFile}, each with its nodes' last log lines and the copy of their data dirs)` : ''}`,
    ...(keepEvidence ? [`chaos_evidence ${evidence.dir} (data dirs as they were and whole outputs of the nodes of each problem and failed restart)`] : []),
    ...grouped(verdict.problems).slice(0, 40).map(([p, k]) => `  ${k > 1 ? `${k}× ` : ''}${p}`),
    `chaos: ${stats.ops} ops, ${stats.kills} kills, ${stats.pauses} pauses, ${stats.partitions} partitions, ${stats.fullDisks} full disks, ${verdict.lost} lost, ${verdict.duplicated} duplicated, ${verdict.stuck} stuck`
  ].join('\n') + '\n')
  return verdict.problems.length > 0 || verdict.lost + verdict.duplicated + verdict.stuck > 0 ? 1 : 0
}

/** Problems with their ids blanked, grouped, most frequent first (one example each). */
function grouped (problems: string[]): Array<[string, number]> {
  const by = new Map<string, { example: string, n: number }>()
  for (const p of problems) {
    const key = p.replace(/[A-Za-z0-9]{20,}…?/g, '…').replace(/\d+/g, 'N')
    const g = by.get(key) ?? { example: p, n: 0 }
    g.n++
    by.set(key, g)
  }
  return [...by.values()].sort((a, b) => b.n - a.n).map((g) => [g.example.length > 400 ? g.example.slice(0, 400) + '…' : g.example, g.n])
}

/** How far past its planned instant the fault plan may run (slow restarts delay faults). */
const FAULT_GRACE_MS = 120_000

/** Runs the fault plan in real time; restarts and heals run in the background (tracked in `busy`, by node). */
async function runFaults (plan: FaultEvent[], net: ChaosNetwork, runStart: number, busy: Map<ChaosNode, Promise<void>>, paused: Set<ChaosNode>, ops: OpView[], diskDirs: Map<number, string>): Promise<void> {
  // faults that slow restarts pushed this far past the planned end are dropped (the run stays bounded)
  const lastStart = runStart + plan.reduce((m, f) => Math.max(m, f.atMs), 0) + FAULT_GRACE_MS
  const under = new Set<Promise<void>>()
  for (const ev of plan) {
    if (Date.now() > lastStart) { log(`${plan.length - plan.indexOf(ev)} faults dropped: restarts were too slow to run them in time`); break }
    const wait = runStart + ev.atMs - Date.now()
    if (wait > 0) await sleep(wait)
    const targets = ev.nodes.map((i) => net.nodes[i]!)
    // the plan keeps faults of one node apart and at most maxConcurrent at a time; a restart slower
    // than planned is waited for, so the fault comes later rather than on top of the others
    while (targets.some((n) => busy.has(n)) || under.size >= maxFaults) await Promise.race([...under]).catch(() => {})
    const track = (p: Promise<void>): void => {
      const tracked = p.catch((e: Error & { evidence?: string[] }) => {
        const problem = `${ev.kind} of ${targets.map((n) => n.name).join(',')}: ${e.message.split('\n')[0]}`
        runProblems.push(problem)
        if (e.evidence !== undefined) evidence.attach(problem, e.evidence)
      })
        .finally(() => { under.delete(tracked); for (const n of targets) if (busy.get(n) === tracked) busy.delete(n) })
      under.add(tracked)
      for (const n of targets) busy.set(n, tracked)
    }
    const n = targets[0]!
    if (ev.kind === 'kill') {
      const killedAt = Date.now()
      await n.proc.kill()
      stats.kills++
      log(`kill ${n.name} (down ${(ev.downMs / 1000).toFixed(1)} s)`)
      track((async () => {
        await sleep(ev.downMs)
        await restart(n, net)
        await checkAfterRestart(n, ops, killedAt)
      })())
    } else if (ev.kind === 'pause') {
      const pid = n.proc.child?.pid
      if (pid === undefined || !n.proc.running) continue
      process.kill(pid, 'SIGSTOP')
      paused.add(n)
      stats.pauses++
      log(`pause ${n.name} for ${(ev.downMs / 1000).toFixed(1)} s`)
      track((async () => {
        await sleep(ev.downMs)
        if (paused.delete(n)) process.kill(pid, 'SIGCONT')
      })())
    } else if (ev.kind === 'diskfull') {
      const dir = diskDirs.get(ev.node)!
      const filler = join(dir, 'chaos-filler')
      const bytes = fillDisk(filler)
      stats.fullDisks++
      log(`disk of ${n.name} full (${(bytes / 2 ** 20).toFixed(1)} MB of filler) for ${(ev.downMs / 1000).toFixed(1)} s`)
      track((async () => {
        await sleep(ev.downMs)
        rmSync(filler, { force: true })
      })())
    } else {
      track(partition(ev, targets, net, busy))
    }
  }
  await Promise.all([...under])
}

/** Fills the file system of `file` with it (until ENOSPC); returns the bytes written. */
function fillDisk (file: string): number {
  const fd = openSync(file, 'w')
  let written = 0
  try {
    for (const size of [1 << 20, 1 << 12, 1]) {
      const chunk = Buffer.alloc(size)
      try { for (;;) written += writeSync(fd, chunk) } catch (e) { if ((e as NodeJS.ErrnoException).code !== 'ENOSPC') throw e }
    }
  } finally { closeSync(fd) }
  return written
}

/**
 * A partition: cut (one node, or a minority of the quorums) or a split of two user nodes, started
 * once the quorums signed a transfer between them (at most 10 s of waiting for one), healed after
 * `downMs`; then every parted pair must ping each other again within the reconnect deadline.
 */
async function partition (ev: FaultEvent, targets: ChaosNode[], net: ChaosNetwork, busy: Map<ChaosNode, Promise<void>>): Promise<void> {
  const l = lan!
  const idx = (n: ChaosNode): number => net.nodes.indexOf(n)
  let pairs: Array<[ChaosNode, ChaosNode]>
  let what: string
  let heal: () => Promise<void>
  if (ev.kind === 'split') {
    const [a, b] = targets as [ChaosNode, ChaosNode]
    const signed = await signedBetween(a, b, 10_000)
    if (signed) stats.splitsAfterSigning++
    await l.separate(idx(a), idx(b))
    pairs = [[a, b], [b, a]]
    what = `${a.name} and ${b.name} separated${signed ? ' while the quorums signed a transfer between them' : ''}`
    heal = async () => { await l.join(idx(a), idx(b)) }
  } else {
    for (const n of targets) await l.cut(idx(n))
    const others = net.nodes.filter((m) => !targets.includes(m))
    // the cut quorums must reach the user nodes again, a cut node every other node
    pairs = targets.flatMap((n) => others.filter((m) => ev.kind === 'isolate' || m.role === 'user').map((m) => [n, m] as [ChaosNode, ChaosNode]))
    what = ev.kind === 'isolate' ? `${targets[0]!.name} cut off` : `quorums ${targets.map((n) => n.name).join(', ')} cut off`
    heal = async () => { for (const n of targets) await l.reconnect(idx(n)) }
  }
  stats.partitions++
  stats.byPartition[ev.kind] = (stats.byPartition[ev.kind] ?? 0) + 1
  log(`partition: ${what} for ${(ev.downMs / 1000).toFixed(1)} s`)
  await sleep(ev.downMs)
  await heal()
  const healedAt = Date.now()
  // nodes find each other again without a restart: each pair pings (peers faulted meanwhile are skipped)
  const late: string[] = []
  await Promise.all(pairs.map(async ([from, to]) => {
    const ok = await waitFor(async () => {
      if (busy.has(to) && busy.get(to) !== busy.get(from)) return true
      if (!from.proc.running || !to.proc.running) return true
      const env = await from.proc.client.envelope('nodePing', { query: { peerID: to.proc.peerId }, timeoutMs: 10_000 })
      return env.status
    }, { timeoutMs: reconnectMs, intervalMs: 500, what: 'ping' }).then(() => true, () => false)
    if (!ok) late.push(`${from.name}→${to.name}`)
  }))
  stats.reconnectMaxMs = Math.max(stats.reconnectMaxMs, Date.now() - healedAt)
  if (late.length > 0) {
    const e: Error & { evidence?: string[] } = new Error(`after the heal (${what}) still unreachable ${reconnectMs / 1000} s later: ${late.join(' ')}`)
    const involved = [...new Set(pairs.filter(([a, b]) => late.includes(`${a.name}→${b.name}`)).flat())].slice(0, 4)
    e.evidence = involved.flatMap((n) => evidence.keep(evidenceOf(n), 'unreachable'))
    throw e
  }
  log(`healed: ${what}; pings answered after ${((Date.now() - healedAt) / 1000).toFixed(1)} s`)
  await supplyCheck(net, `after the heal (${what})`)
}

/**
 * Waits (at most `ms`) until a transfer between the nodes a and b is decided: its sender's node
 * has the receiver's answer to its probe and the quorums' votes, and the block is being signed
 * (`signing`) or delivered (`delivery_pending`). Cut then, the quorums sign a block its receiver
 * cannot be given until the heal.
 */
async function signedBetween (a: ChaosNode, b: ChaosNode, ms: number): Promise<boolean> {
  const deadline = Date.now() + ms
  while (Date.now() < deadline) {
    const flows = [...inFlight].filter((f) => (f.from === a && f.to === b) || (f.from === b && f.to === a))
    for (const sender of new Set(flows.map((f) => f.from))) {
      if (!sender.proc.running) continue
      const receiver = sender === a ? b : a
      const list = (await sender.proc.client.call('txList', { timeoutMs: 5_000 }).catch(() => undefined))?.result ?? []
      if (list.some((t) => (t.status === 'signing' || t.status === 'delivery_pending') && receiver.dids.includes(t.receiver))) return true
    }
    await sleep(flows.length > 0 ? 50 : 250)
  }
  return false
}

/**
 * After a restart: every transfer the node's DIDs were answered ok for before the kill is still
 * committed there (an acknowledged write that a crash or a full disk lost shows here first).
 */
async function checkAfterRestart (n: ChaosNode, ops: OpView[], killedAt: number): Promise<void> {
  if (n.role !== 'user') return
  const acked = ops.filter((op) => op.outcome === 'ok' && (answeredAt.get(op) ?? Infinity) < killedAt && (n.dids.includes(op.from) || n.dids.includes(op.to)))
  const committed = new Set<string>()
  for (const did of n.dids) {
    for (const type of ['rbt', 'ft', 'nft']) {
      for (const t of (await n.proc.client.call('txByDid', { params: { did, token_type: type } })).result ?? []) if (t.status === 'committed') committed.add(`${did} ${t.memo}`)
    }
  }
  stats.restartChecks++
  // a racing owner's spend is checked on the node it was sent from (its DID is hosted on two nodes)
  const sides = (op: OpView): string[] => (racedFrom.get(op) ?? n) === n ? [op.from, op.to] : [op.to]
  const missing = acked.filter((op) => sides(op).some((did) => n.dids.includes(did) && !committed.has(`${did} ${op.memo}`)))
  if (missing.length > 0) {
    const p = `${n.name} restarted without ${missing.length} transfers it had acknowledged: ${missing.slice(0, 5).map((op) => op.memo).join(', ')}`
    runProblems.push(p)
    evidence.attach(p, evidence.keep(evidenceOf(n), 'missing-acknowledged'))
    log(p)
  }
}

/**
 * Starts a killed node again on its data dir. A start that fails is tried again, up to 5 times with
 * a growing pause, unless its exit code says the operator must act (78: a damaged store, a bad key;
 * docs/operations.md, "When a start fails"). Each failed attempt keeps its evidence (the data dir
 * as it was, the node's output); the error of the last one carries the evidence of them all.
 */
async function restart (n: ChaosNode, net: ChaosNetwork): Promise<void> {
  const kept: string[] = []
  for (let attempt = 1; ; attempt++) {
    try {
      await n.proc.start()
      break
    } catch (e) {
      stats.restartFailures++
      const exited = e instanceof NodeExitedError ? e : undefined
      const why = exited !== undefined ? (exited.output.split('\n').find((l) => /\[ERROR\] start failed/.test(l)) ?? exited.lastLines(1)[0] ?? '') : (e as Error).message.split('\n')[0]!
      const lines = evidence.keep(evidenceOf(n), `restart-${attempt}${exited !== undefined ? `-exit-${String(exited.exitCode ?? exited.signal)}` : '-timeout'}`)
      kept.push(`    attempt ${attempt}: ${(e as Error).message.split('\n')[0]} ${why}`, ...lines)
      log(`restart of ${n.name} failed (attempt ${attempt}): ${(e as Error).message.split('\n')[0]}\n    ${why}\n    evidence: ${lines[0]!.trim()}`)
      const operatorMustAct = exited?.exitCode === 78
      if (attempt >= 5 || operatorMustAct) {
        const err: Error & { evidence?: string[] } = new Error(`${(e as Error).message.split('\n')[0]} ${why}${operatorMustAct ? ' (exit 78: not tried again)' : ` (${attempt} attempts)`}`)
        err.evidence = kept
        throw err
      }
      // a port still held, a full disk: the cause may pass
      await sleep(1000 * attempt)
    }
  }
  await n.proc.client.envelope('bootstrapAdd', { body: { peers: net.nodes.filter((m) => m !== n).map((m) => m.proc.multiaddr) } }).catch(() => {})
}

const evidenceOf = (n: ChaosNode): { name: string, dir: string, logs: () => string } => ({ name: n.name, dir: n.proc.dir, logs: () => n.proc.logs })

/**
 * The racing owner's fullnode: one more node, in the last namespace of the LAN, with `-fullnode`;
 * never faulted and not among the nodes the invariants read (it archives every DID's tokens).
 */
async function startFullnode (net: ChaosNetwork): Promise<ChaosNode> {
  const member = lan?.members[net.nodes.length]
  const proc = new NodeProcess({
    n: net.nodes.length,
    extraArgs: ['-testNet', '-fullnode', ...(member !== undefined ? ['-mdns=false'] : [])],
    env: CHAOS_ENV,
    startTimeoutMs: 180_000,
    ...(member !== undefined ? { netns: member.ns, swarmHost: member.ip } : {})
  })
  started.push(proc)
  await proc.start()
  await proc.client.call('bootstrapAdd', { body: { peers: net.nodes.map((m) => m.proc.multiaddr) } })
  await Promise.all(net.nodes.map(async (m) => { await m.proc.client.call('bootstrapAdd', { body: { peers: [proc.multiaddr] } }) }))
  return { name: 'full', role: 'user', proc, dids: [], quorumSet: [] }
}

/** The node each racing owner's spend was sent from. */
const racedFrom = new Map<OpView, ChaosNode>()

/** Racing owners whose mint's answer was cut: their token counts as minted when it exists at the end. */
const suspectMints = new Set<string>()

/**
 * The racing owner (docs/chaos.md): every 5 to 15 s, a fresh wallet made from a mnemonic on a user
 * node X with one test RBT, restored on a user node Y of the other quorum set by wallet sync from
 * the fullnode (u0), then spent from X and from Y at once, to two other DIDs. Both spends are
 * checked like any operation; paid twice shows in the supply (more RBT held than minted).
 */
async function racer (rng: Prng, net: ChaosNetwork, full: ChaosNode, ops: OpView[], going: () => boolean): Promise<void> {
  const users = net.nodes.slice(QUORUMS)
  for (let k = 0; going(); k++) {
    await sleep(rng.int(5_000, 15_000))
    if (!going()) break
    const x = rng.pick(users.filter((_n, i) => i % 2 === 0))
    const y = rng.pick(users.filter((_n, i) => i % 2 === 1))
    if (![x, y, full].every((n) => n.proc.running)) { stats.racesSkipped++; continue }
    try {
      await raceOnce(k, rng, net, x, y, full, ops)
    } catch (e) {
      stats.racesSkipped++
      log(`racing owner ${k}: skipped (${(e as Error).message.split('\n')[0]})`)
    }
  }
}

async function raceOnce (k: number, rng: Prng, net: ChaosNetwork, x: ChaosNode, y: ChaosNode, full: ChaosNode, ops: OpView[]): Promise<void> {
  const mnemonic = generateMnemonic()
  const made = await x.proc.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never, timeoutMs: 60_000 })
  const did = (made.result as { did: string }).did
  x.dids.push(did)
  // the fullnode validates the new DID's signatures: it is told where the DID lives, as every node of the network is told of every DID
  await full.proc.client.call('nodeAddPeers', { body: { DID: did, PeerID: x.proc.peerId, DIDType: 4 } })
  try {
    await mintTestRbt(x.proc.client, did, 1, 0, USER_PASSWORD)
  } catch (e) {
    suspectMints.add(did)
    throw e
  }
  net.rbtMilli += 1000
  await waitFor(async () => ((await full.proc.client.call('tokensList', { query: { did, type: 'rbt' }, timeoutMs: 10_000 })).result ?? []).length > 0, { timeoutMs: 180_000, intervalMs: 500, what: 'the fullnode to hold the new token' })
    .catch((e: Error) => { throw new Error(`${e.message} (fullnode: ${full.proc.logs.split('\n').filter((l) => /sync|announce|WARN|ERROR/.test(l)).slice(-3).join(' / ')})`) })
  const again = await y.proc.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never, timeoutMs: 60_000 })
  if ((again.result as { did: string }).did !== did) throw new Error('the mnemonic made another DID')
  y.dids.push(did)
  const first = await y.proc.client.envelope('sync', { body: { did, fullnode: full.proc.peerId }, timeoutMs: 60_000 })
  const synced = first.status ? await complete(y.proc.client, first, USER_PASSWORD) : first
  if (!synced.status) throw new Error(`wallet sync on ${y.name}: ${synced.message}`)
  await waitFor(async () => ((await y.proc.client.call('tokensList', { query: { did, type: 'rbt' }, timeoutMs: 10_000 })).result ?? []).some((t) => t.token_status === 'Free'), { timeoutMs: 30_000, intervalMs: 250, what: 'the restored copy' })
  const others = net.users.filter((u) => u.node !== net.nodes.indexOf(x) && u.node !== net.nodes.indexOf(y))
  const to = [rng.pick(others).did, rng.pick(others).did]
  const offset = rng.int(0, 50)
  const views = await Promise.all([x, y].map(async (n, i) => {
    if (i === 1) await sleep(offset)
    const view: OpView = { id: -1 - (2 * k + i), kind: 'rbt', memo: `chaos ${seed} race ${k} ${n.name}`, from: did, to: to[i]!, outcome: 'unknown' }
    racedFrom.set(view, n)
    try {
      const client = n.proc.client
      const env = await client.envelope('txInitiate', { body: { initiator: did, owner: to[i]!, tokens: { rbt: 1 }, memo: view.memo } as never, timeoutMs: 120_000 })
      const s = await settle(env, async (f) => await client.completeSigned(f as never, { password: () => USER_PASSWORD }))
      view.outcome = s.outcome
      view.detail = s.detail
    } catch (e) { view.detail = (e as Error).message }
    answeredAt.set(view, Date.now())
    return view
  }))
  ops.push(...views)
  stats.races++
  const won = views.filter((v) => v.outcome === 'ok' || v.outcome === 'pending').length
  if (won === 2) stats.racesPaidTwice++
  if (won === 0) stats.racesBothRefused++
  log(`racing owner ${k}: ${x.name} ${views[0]!.outcome}, ${y.name} ${views[1]!.outcome}${views.filter((v) => v.detail !== undefined).map((v) => ` (${v.detail!.slice(0, 100)})`).join('')}`)
}

/**
 * The supply held over the running nodes never exceeds what was minted (checked after every heal):
 * each token counted once, at its latest block (a restored wallet's stale copy does not count).
 */
async function supplyCheck (net: ChaosNetwork, when: string): Promise<void> {
  // The nodes are read one after the other while transfers go on, so one read can count a token
  // before a split on one node and a part of it after on another: what is over the supply must be
  // found again by a second and a third read, a few seconds apart, to be a problem.
  let over: string[] = []
  for (let attempt = 0; attempt < 3; attempt++) {
    if (attempt > 0) await sleep(3000)
    over = await overSupply(net)
    if (over.length === 0) break
  }
  stats.supplyChecks++
  for (const p of over) runProblems.push(`${when}: ${p}`)
  if (over.length > 0) log(`supply ${when}: ${over.join('; ')}`)
}

/** One read of the supply over the running nodes: the problems that show more than was minted, or a token held twice. */
async function overSupply (net: ChaosNetwork): Promise<string[]> {
  const tokens: TokenView[] = []
  for (const n of net.nodes) {
    if (!n.proc.running) continue
    for (const did of n.dids) {
      for (const type of ['rbt', 'ft', 'nft']) {
        const list = await n.proc.client.call('tokensList', { query: { did, type }, timeoutMs: 10_000 }).then((e) => e.result ?? []).catch(() => [])
        for (const t of list) tokens.push({ node: n.name, tokenId: t.token_id, kind: t.kind, value: Math.round(t.token_value * 1000), owner: t.did, status: t.token_status, height: Number(t.latest_block_id.split('-')[0]) })
      }
    }
  }
  const ftMinted = net.ft.reduce((a, f) => a + f.count, 0)
  const v = checkInvariants({ hosted: Object.fromEntries(net.nodes.map((n) => [n.name, n.dids])), tokens, txs: [], chainProblems: [], audits: {} },
    { rbtMilli: net.rbtMilli + 1000 * suspectMints.size, ft: { [ftKey('', '')]: ftMinted }, nfts: [] }, [])
  // nodes down or deliveries under way hold less: only more than minted, or a token held twice, is a problem
  return v.problems.filter((p) => {
    if (/made up|held \d+ times/.test(p)) return true
    const m = /^FT .*: (\d+) held, (\d+) minted/.exec(p)
    return m !== null && Number(m[1]) > Number(m[2])
  })
}

async function worker (w: number, rng: Prng, net: ChaosNetwork, ops: OpView[], nftOwner: Array<string | undefined>, going: () => boolean): Promise<void> {
  const world = { didNodes: net.users.map((u) => u.node), ftKinds: net.ft.length, nfts: net.nfts.length }
  for (let k = 0; going(); k++) {
    const planned = planOp(rng, world)
    const id = k * workers + w
    const op = await runOp(id, planned, net, nftOwner)
    if (op === undefined) {
      stats.skipped++
      // the sender's node is down: wait a little rather than spin
      await sleep(200)
      continue
    }
    ops.push(op)
    stats.ops++
    stats.byKind[op.kind]++
    stats.byOutcome[op.outcome]++
  }
}

const nodeOf = (net: ChaosNetwork, did: string): ChaosNode => net.nodes.find((n) => n.dids.includes(did))!

async function runOp (id: number, p: PlannedOp, net: ChaosNetwork, nftOwner: Array<string | undefined>): Promise<OpView | undefined> {
  const memo = `chaos ${seed} op ${id}`
  let from = net.users[p.from]!.did
  let to = net.users[p.to]!.did
  let tokens: Record<string, unknown>
  if (p.kind === 'rbt') tokens = { rbt: p.amountMilli / 1000 }
  else if (p.kind === 'ft') { const f = net.ft[p.ftKind]!; tokens = { ft: [{ ftName: f.name, numberOfFts: p.ftCount, creatorDID: f.creator }] } } else {
    const owner = nftOwner[p.nft] ?? await findNftOwner(net, net.nfts[p.nft]!)
    if (owner === undefined) return undefined
    nftOwner[p.nft] = owner
    from = owner
    if (to === from) to = net.users[(p.to + 1) % net.users.length]!.did
    tokens = { nft: [{ nftId: net.nfts[p.nft]!, value: 1, data: `op ${id}` }], transferNftOwnership: true }
  }
  const node = nodeOf(net, from)
  if (!node.proc.running) return undefined
  const view: OpView = { id, kind: p.kind, memo, from, to, outcome: 'unknown' }
  const flight = { from: node, to: nodeOf(net, to) }
  inFlight.add(flight)
  try {
    const client = node.proc.client
    const first = await client.envelope('txInitiate', { body: { initiator: from, owner: to, tokens, memo } as never, timeoutMs: 120_000 })
    const s = await settle(first, async (f) => await client.completeSigned(f as never, { password: () => USER_PASSWORD }))
    view.outcome = s.outcome
    view.detail = s.detail
    if (s.detail !== undefined && s.cut !== true) {
      const key = `${p.kind} ${s.code ?? ''}: ${s.detail.replace(/[0-9a-zA-Z]{40,}/g, '…').replace(/\d+(\.\d+)?/g, 'N').slice(0, 90)}`
      failures.set(key, (failures.get(key) ?? 0) + 1)
    }
  } catch (e) {
    view.outcome = 'unknown'
    view.detail = (e as Error).message
  } finally {
    inFlight.delete(flight)
    answeredAt.set(view, Date.now())
  }
  if (p.kind === 'nft') nftOwner[p.nft] = view.outcome === 'ok' ? to : view.outcome === 'failed' && !/not the owner/.test(view.detail ?? '') ? from : undefined
  return view
}

/** The DID that holds an NFT Free, asked of the running user nodes (undefined when its node is down). */
async function findNftOwner (net: ChaosNetwork, nftId: string): Promise<string | undefined> {
  for (const n of net.nodes.slice(QUORUMS)) {
    if (!n.proc.running) continue
    for (const did of n.dids) {
      const list = await n.proc.client.call('tokensList', { query: { did, type: 'nft' }, timeoutMs: 10_000 }).then((e) => e.result ?? []).catch(() => [])
      if (list.some((t) => t.token_id === nftId && t.token_status === 'Free')) return did
    }
  }
  return undefined
}

/** What still keeps the network from being settled: Locked tokens, transfers not finished. */
async function unsettled (net: ChaosNetwork): Promise<string[]> {
  const out: string[] = []
  for (const n of net.nodes) {
    if (!n.proc.running) { out.push(`${n.name} is down`); continue }
    for (const did of n.dids) {
      for (const type of ['rbt', 'ft', 'nft']) {
        const list = (await n.proc.client.call('tokensList', { query: { did, type } })).result ?? []
        const locked = list.filter((t) => t.token_status === 'Locked').length
        if (locked > 0) out.push(`${n.name}: ${locked} ${type} Locked`)
      }
    }
    const open = ((await n.proc.client.call('txList')).result ?? []).filter((t) => ['preparing', 'signing', 'committing', 'delivery_pending'].includes(t.status))
    if (open.length > 0) out.push(`${n.name}: ${open.length} transfers open (${[...new Set(open.map((t) => t.status))].join(', ')})`)
  }
  return out
}

/** Everything the checks read: over the API while the nodes run, then from each stopped node's store. */
async function gather (net: ChaosNetwork): Promise<ChaosState> {
  const state: ChaosState = { hosted: {}, tokens: [], txs: [], chainProblems: [], audits: {} }
  for (const n of net.nodes) {
    const c = n.proc.client
    state.hosted[n.name] = (await c.call('didList')).result ?? []
    for (const did of n.dids) {
      for (const type of ['rbt', 'ft', 'nft']) {
        for (const t of (await c.call('txByDid', { params: { did, token_type: type } })).result ?? []) {
          state.txs.push({ node: n.name, did, txid: t.transactionID, memo: t.memo, status: t.status } satisfies TxView)
        }
      }
      const v = await c.envelope('tokensValidateChain', { query: { did }, timeoutMs: 300_000 })
      const r = v.result as { checked: number, tokens: Array<{ token: string, valid: boolean, bad_block: unknown }> } | null
      if (r === null || !Array.isArray(r.tokens)) state.chainProblems.push(`${n.name} ${did.slice(0, 12)}…: ${v.message}`)
      else for (const t of r.tokens) if (!t.valid) state.chainProblems.push(`${n.name}: token ${t.token} of ${did.slice(0, 12)}… invalid at ${JSON.stringify(t.bad_block)}`)
    }
  }
  // stopped (SIGTERM): the store is read whole, and audited
  await Promise.all(net.nodes.map(async (n) => { await n.proc.stop() }))
  for (const n of net.nodes) {
    const store = new LevelStore(join(n.proc.dir, 'Rubix', 'TestNet', 'db'))
    await store.open()
    try {
      for await (const [, t] of store.collection<TokenRecord>(Collections.tokens).entries()) {
        state.tokens.push({ node: n.name, tokenId: t.tokenId, kind: t.kind, value: t.value, owner: t.owner, status: t.status, ftName: t.ftName, creator: t.creator, height: t.latestBlockNumber } satisfies TokenView)
      }
      state.audits[n.name] = (await auditLedger(store)).problems
      // what the audit's findings are about, for the problems file
      const ids = new Set(state.audits[n.name]!.flatMap((p) => p.match(/Qm[1-9A-Za-z]{44}/g) ?? []))
      for (const id of [...ids].slice(0, 20)) {
        const rec = await store.collection<TokenRecord>(Collections.tokens).get(id)
        const chain: string[] = []
        for await (const [, b] of store.collection<BlockRecord>(Collections.blocks).entries({ gte: `${id}/`, lt: `${id}/\uffff` })) {
          chain.push(`#${b.number} ${b.transactionType} owner ${b.owner.slice(0, 14)}… tx ${(b.txId ?? '').slice(0, 12)} children ${(b.childTokens ?? []).length}`)
        }
        diagnostics.push(`${n.name} ${id}: ${rec === undefined ? 'no token record' : `${rec.kind} ${rec.status} owner ${rec.owner.slice(0, 14)}… latest ${rec.latestBlockNumber} tx ${(rec.txId ?? '').slice(0, 12)} parent ${rec.parent ?? '-'}`}; blocks: ${chain.join(' | ')}`)
      }
    } finally { await store.close() }
  }
  return state
}

/** Stops every node and removes the namespaces, mounts and data dirs; runs once. */
let cleaning: Promise<void> | undefined
async function cleanup (): Promise<void> {
  cleaning ??= (async () => {
    await Promise.all(started.map(async (n) => {
      if (n.running && n.child?.pid !== undefined) { try { process.kill(n.child.pid, 'SIGCONT') } catch {} }
      if (keep) await n.stop().catch(async () => { await n.kill() })
      else await n.dispose().catch(() => {})
    }))
    await lan?.dispose().catch(() => {})
    if (!keep) {
      for (const n of started) if (!tmpfsDirs.includes(n.dir)) rmSync(n.dir, { recursive: true, force: true })
      for (const dir of tmpfsDirs) {
        try { execFileSync('umount', [dir]) } catch {}
        rmSync(dir, { recursive: true, force: true })
      }
    } else process.stdout.write(`data dirs kept: ${started.map((n) => n.dir).join(' ')}${tmpfsDirs.length > 0 ? ` (${tmpfsDirs.join(' ')} are tmpfs mounts: umount them)` : ''}\n`)
  })()
  await cleaning
}

// Ctrl-C or a SIGTERM mid-run leaves no node, namespace or tmpfs mount behind
for (const sig of ['SIGINT', 'SIGTERM'] as const) {
  process.once(sig, () => {
    process.stdout.write(`chaos: ${sig}, stopping the nodes and removing the namespaces and mounts\n`)
    void cleanup().finally(() => process.exit(130))
  })
}

let code = 1
try {
  code = await main()
} catch (e) {
  process.stdout.write(`chaos: run failed: ${(e as Error).stack ?? String(e)}\n`)
} finally {
  await cleanup()
}
process.exit(code)
