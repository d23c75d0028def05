import '../src/util/polyfill.js'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { BIN, childEnv, runCli } from '../test/helpers/cli.js'
import { NodeProcess } from '../test/helpers/node-process.js'
import { freePort } from '../test/helpers/ports.js'
import { childrenCpuMs, isMain, loadAverage, median, ms, percentile } from './stats.js'

/** Time from spawning `rbtnode run` to the API answering, and to the core being up (ready). */
async function startOnce (): Promise<{ api: number, core: number }> {
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bench-'))
  const port = await freePort()
  const swarm = await freePort()
  const t0 = performance.now()
  const child = spawn(process.execPath, [BIN, 'run', '-p', dir, '-port', String(port), '-swarmPort', String(swarm), '-mdns=false'], { env: childEnv(), stdio: 'ignore' })
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections: 1 })
  let api = 0
  let core = 0
  try {
    for (;;) {
      try {
        const res = await pool.request({ method: 'GET', path: '/svc/v1/node/status' })
        const body = await res.body.json() as { result?: { core_started?: boolean } }
        if (api === 0) api = performance.now() - t0
        if (body.result?.core_started === true) { core = performance.now() - t0; break }
      } catch { /* not listening yet */ }
      await new Promise((resolve) => setTimeout(resolve, 5))
      if (performance.now() - t0 > 20_000) throw new Error('node did not start in 20 s')
    }
  } finally {
    await pool.close()
    child.kill('SIGTERM')
    await new Promise((resolve) => child.on('exit', resolve))
    rmSync(dir, { recursive: true, force: true })
  }
  return { api, core }
}

/** Wall time (ms) of each run of `node <args>`, and the CPU (ms) of all of them together. */
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

async function nodeE0 (): Promise<void> {
  await new Promise<void>((resolve, reject) => {
    const child = spawn(process.execPath, ['-e', '0'], { stdio: 'ignore' })
    child.on('error', reject)
    child.on('exit', () => { resolve() })
  })
}

const cpuText = (v: number | undefined): string => v === undefined ? 'n/a' : ms(v)

export async function run (): Promise<Record<string, string | number>> {
  const load0 = loadAverage()
  const starts: Array<{ api: number, core: number }> = []
  for (let i = 0; i < 5; i++) starts.push(await startOnce())

  const node = await new NodeProcess().start()
  try {
    const call = async (): Promise<void> => {
      const r = await runCli(['getallbootstrap', ...node.cliArgs])
      if (r.code !== 0) throw new Error(r.stderr)
    }
    // two unmeasured calls: the first of a fresh install also writes the code cache
    await call(); await call()
    const cli = await timeRuns(20, call)
    const floor = await timeRuns(20, nodeE0)

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
    return {
      node_ready_s: Number((median(starts.map((s) => s.core)) / 1000).toFixed(3)),
      'start → API answering (median of 5)': ms(median(starts.map((s) => s.api))),
      cli_roundtrip_ms: Number(median(cli.wall).toFixed(1)),
      'CLI getallbootstrap round trip p90 (of 20)': ms(percentile(cli.wall, 90)),
      'CLI getallbootstrap CPU per call (all threads)': cpuText(cli.cpu),
      node_e0_ms: Number(median(floor.wall).toFixed(1)),
      'node -e 0 CPU per run (all threads)': cpuText(floor.cpu),
      'GET /node/peer_id throughput (32 conns, 3 s)': `${Math.round(count / 3)} req/s`,
      'GET /node/peer_id latency p50 / p99': `${median(lat).toFixed(2)} / ${percentile(lat, 99).toFixed(2)} ms`,
      'load average (1/5/15 min) before / after': `${load0} / ${loadAverage()}`
    }
  } finally {
    await node.dispose()
  }
}

if (isMain(import.meta.url)) console.log(await run())
