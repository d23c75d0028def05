import '../src/util/polyfill.js'
import { rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { LevelStore } from '../src/storage/level-store.js'
import { auditLedger } from '../src/storage/token-ledger.js'
import { Collections, type BlockRecord, type TokenRecord } from '../src/storage/token-records.js'
import type { NodeProcess } from '../test/helpers/node-process.js'
import { USER_PASSWORD, complete } from '../test/helpers/quorum-network.js'
import { waitFor } from '../test/helpers/wait.js'
import { checkInvariants, ftKey, type ChaosState, type OpView, type Outcome, type TokenView, type TxView } from './chaos/invariants.js'
import { QUORUMS, buildNetwork, type ChaosNetwork, type ChaosNode } from './chaos/network.js'
import { planOp, type PlannedOp } from './chaos/ops.js'
import { Prng, randomSeed } from './chaos/prng.js'
import { DEFAULT_FAULTS, planFaults, type FaultEvent } from './chaos/schedule.js'

/**
 * Chaos soak against real node processes (`npm run chaos -- --minutes 3 [--seed N] [--nodes 10]`):
 * 7 quorum nodes and the rest user nodes (3 DIDs each, funded, two FT kinds, a few NFTs), random
 * concurrent RBT/FT/NFT transfers, and a seeded fault scheduler that SIGKILLs nodes of any role
 * (restarting them after a random delay) and freezes some (SIGSTOP, SIGCONT seconds later). At the
 * end every node is up, the recovery sweeps get a quiet period (until nothing is Locked and no
 * transfer is open, with a deadline), and the invariants of bench/chaos/invariants.ts are checked.
 * The same seed replays the same operations and faults (docs/chaos.md). The last line is
 * `chaos: <ops> ops, <kills> kills, <pauses> pauses, <lost> lost, <dup> duplicated, <stuck> stuck`;
 * the exit code is non-zero when a check failed.
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

const t0 = Date.now()
const log = (s: string): void => { process.stdout.write(`[${((Date.now() - t0) / 1000).toFixed(1).padStart(6)} s] ${s}\n`) }
const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

const started: NodeProcess[] = []
const stats = { ops: 0, skipped: 0, kills: 0, pauses: 0, restartFailures: 0, byOutcome: { ok: 0, pending: 0, failed: 0, unknown: 0 } as Record<Outcome, number>, byKind: { rbt: 0, ft: 0, nft: 0 } }
const failures = new Map<string, number>()
const diagnostics: string[] = []

async function main (): Promise<number> {
  log(`chaos seed ${seed} (replay: npm run chaos -- --seed ${seed} --minutes ${minutes} --nodes ${nodeCount})`)
  const rng = new Prng(seed)
  const net = await buildNetwork({ userNodes: nodeCount - QUORUMS, didsPerNode: 3, rbtPerDid: 20, nftCount: 6, started, log })
  const setupMs = Date.now() - t0
  log(`setup done in ${(setupMs / 1000).toFixed(1)} s: ${net.nodes.length} nodes, ${net.users.length} user DIDs, ${net.rbtMilli / 1000} RBT, FT ${net.ft.map((f) => `${f.name}×${f.count}`).join(' ')}, ${net.nfts.length} NFTs`)

  const durationMs = minutes * 60_000
  const plan = planFaults(rng.fork('faults'), { ...DEFAULT_FAULTS, durationMs, nodes: net.nodes.length })
  log(`fault plan: ${plan.filter((f) => f.kind === 'kill').length} kills, ${plan.filter((f) => f.kind === 'pause').length} pauses over ${minutes} min`)

  const runStart = Date.now()
  const endAt = runStart + durationMs
  const ops: OpView[] = []
  const nftOwner: Array<string | undefined> = net.nfts.map((_, i) => net.users[i % net.users.length]!.did)

  const restarts = new Map<ChaosNode, Promise<void>>()
  const paused = new Set<ChaosNode>()
  const faults = runFaults(plan, net, runStart, restarts, paused)
  // traffic goes on while faults remain (slow restarts delay them past the planned end)
  let faultsDone = false
  void faults.finally(() => { faultsDone = true })
  const going = (): boolean => Date.now() < endAt || !faultsDone
  const traffic = Promise.all(Array.from({ length: workers }, async (_, w) => { await worker(w, rng.fork(`ops/${w}`), net, ops, nftOwner, going) }))
  let reporting = true
  const reporter = (async () => {
    while (reporting) {
      await sleep(30_000)
      if (!reporting) break
      log(`${((Date.now() - runStart) / 60_000).toFixed(1)} min: ${stats.ops} ops (${stats.byOutcome.ok} ok, ${stats.byOutcome.pending} pending, ${stats.byOutcome.failed} refused, ${stats.byOutcome.unknown} unknown), ${stats.kills} kills, ${stats.pauses} pauses, ${net.nodes.filter((n) => !n.proc.running).length} down`)
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
  const verdict = checkInvariants(state, {
    rbtMilli: net.rbtMilli,
    ft: Object.fromEntries(net.ft.map((f) => [ftKey(f.name, f.creator), f.count])),
    nfts: net.nfts
  }, ops)
  const totalMs = Date.now() - t0
  const problemsFile = join(tmpdir(), `chaos-${seed}-problems.txt`)
  if (verdict.problems.length > 0) writeFileSync(problemsFile, [...verdict.problems, '', 'records of the tokens the audits name:', ...diagnostics].join('\n') + '\n')

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
    `chaos_faults ${stats.kills} kills, ${stats.pauses} pauses, ${stats.restartFailures} failed restarts`,
    `chaos_final ${c.heldTokens} held tokens, ${c.rbtMilli / 1000} RBT (minted ${net.rbtMilli / 1000}), ${c.ftUnits} FT units, ${c.nfts} NFTs, ${c.committedOps} ops committed`,
    `chaos_problems ${verdict.problems.length}${verdict.problems.length > 0 ? ` (all in ${problemsFile})` : ''}`,
    ...grouped(verdict.problems).slice(0, 40).map(([p, k]) => `  ${k > 1 ? `${k}× ` : ''}${p}`),
    `chaos: ${stats.ops} ops, ${stats.kills} kills, ${stats.pauses} pauses, ${verdict.lost} lost, ${verdict.duplicated} duplicated, ${verdict.stuck} stuck`
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

/** Runs the fault plan in real time; restarts run in the background (tracked in `restarts`). */
async function runFaults (plan: FaultEvent[], net: ChaosNetwork, runStart: number, restarts: Map<ChaosNode, Promise<void>>, paused: Set<ChaosNode>): Promise<void> {
  // faults that slow restarts pushed this far past the planned end are dropped (the run stays bounded)
  const lastStart = runStart + plan.reduce((m, f) => Math.max(m, f.atMs), 0) + FAULT_GRACE_MS
  for (const ev of plan) {
    if (Date.now() > lastStart) { log(`${plan.length - plan.indexOf(ev)} faults dropped: restarts were too slow to run them in time`); break }
    const wait = runStart + ev.atMs - Date.now()
    if (wait > 0) await sleep(wait)
    const n = net.nodes[ev.node]!
    // the plan keeps faults of one node apart and at most maxConcurrent at a time; a restart slower
    // than planned is waited for, so the fault comes later rather than on top of the others
    while (restarts.has(n) || restarts.size >= DEFAULT_FAULTS.maxConcurrent) await Promise.race([...restarts.values()]).catch(() => {})
    if (ev.kind === 'kill') {
      await n.proc.kill()
      stats.kills++
      log(`kill ${n.name} (down ${(ev.downMs / 1000).toFixed(1)} s)`)
      const p = (async () => {
        await sleep(ev.downMs)
        await restart(n, net)
      })().finally(() => { if (restarts.get(n) === p) restarts.delete(n) })
      restarts.set(n, p)
    } else {
      const pid = n.proc.child?.pid
      if (pid === undefined || !n.proc.running) continue
      process.kill(pid, 'SIGSTOP')
      paused.add(n)
      stats.pauses++
      log(`pause ${n.name} for ${(ev.downMs / 1000).toFixed(1)} s`)
      const p = (async () => {
        await sleep(ev.downMs)
        if (paused.delete(n)) process.kill(pid, 'SIGCONT')
      })().finally(() => { if (restarts.get(n) === p) restarts.delete(n) })
      restarts.set(n, p)
    }
  }
}

async function restart (n: ChaosNode, net: ChaosNetwork): Promise<void> {
  for (let attempt = 1; ; attempt++) {
    try {
      await n.proc.start()
      break
    } catch (e) {
      stats.restartFailures++
      const lines = (e as Error).message.trim().split('\n')
      // the first line says what failed; the node's last stderr lines say why
      log(`restart of ${n.name} failed (attempt ${attempt}): ${lines[0]}${lines.length > 1 ? `\n    ${lines.slice(-6).join('\n    ')}` : ''}`)
      if (attempt >= 5) throw e
    }
  }
  await n.proc.client.envelope('bootstrapAdd', { body: { peers: net.nodes.filter((m) => m !== n).map((m) => m.proc.multiaddr) } }).catch(() => {})
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
  try {
    const client = node.proc.client
    const first = await client.envelope('txInitiate', { body: { initiator: from, owner: to, tokens, memo } as never, timeoutMs: 120_000 })
    const done = first.status ? await complete(client, first as never, USER_PASSWORD) : first
    const code = (done.result as { code?: string } | null)?.code
    if (done.status) view.outcome = 'ok'
    // decided, finished in the background (delivery, or the sign round, is retried): may have succeeded, must end committed
    else if (code === 'DELIVERY_PENDING' || code === 'SIGNING_PENDING') view.outcome = 'pending'
    else view.outcome = 'failed'
    if (!done.status) {
      view.detail = done.message
      const key = `${p.kind} ${code ?? ''}: ${done.message.replace(/[0-9a-zA-Z]{40,}/g, '…').replace(/\d+(\.\d+)?/g, 'N').slice(0, 90)}`
      failures.set(key, (failures.get(key) ?? 0) + 1)
    }
  } catch (e) {
    view.outcome = 'unknown'
    view.detail = (e as Error).message
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
        state.tokens.push({ node: n.name, tokenId: t.tokenId, kind: t.kind, value: t.value, owner: t.owner, status: t.status, ftName: t.ftName, creator: t.creator } satisfies TokenView)
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

let code = 1
try {
  code = await main()
} catch (e) {
  process.stdout.write(`chaos: run failed: ${(e as Error).stack ?? String(e)}\n`)
} finally {
  await Promise.all(started.map(async (n) => {
    if (n.running && n.child?.pid !== undefined) { try { process.kill(n.child.pid, 'SIGCONT') } catch {} }
    if (keep) await n.stop().catch(async () => { await n.kill() })
    else await n.dispose().catch(() => {})
  }))
  if (!keep) for (const n of started) rmSync(n.dir, { recursive: true, force: true })
  else process.stdout.write(`data dirs kept: ${started.map((n) => n.dir).join(' ')}\n`)
}
process.exit(code)
