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
import { isMain, median, ms, percentile } from './stats.js'

/** Time from spawning `rbtnode run` to the API answering, and to the core being up. */
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

export async function run (): Promise<Record<string, string | number>> {
  const starts: Array<{ api: number, core: number }> = []
  for (let i = 0; i < 5; i++) starts.push(await startOnce())

  const node = await new NodeProcess().start()
  try {
    const cli: number[] = []
    for (let i = 0; i < 12; i++) {
      const t = performance.now()
      const r = await runCli(['getallbootstrap', ...node.cliArgs])
      if (r.code !== 0) throw new Error(r.stderr)
      if (i >= 2) cli.push(performance.now() - t)
    }

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
      'start → API ready (median of 5)': ms(median(starts.map((s) => s.api))),
      'start → core up (median of 5)': ms(median(starts.map((s) => s.core))),
      'CLI getallbootstrap round trip (median of 10)': ms(median(cli)),
      'CLI getallbootstrap round trip p90': ms(percentile(cli, 90)),
      'GET /node/peer_id throughput (32 conns, 3 s)': `${Math.round(count / 3)} req/s`,
      'GET /node/peer_id latency p50 / p99': `${median(lat).toFixed(2)} / ${percentile(lat, 99).toFixed(2)} ms`
    }
  } finally {
    await node.dispose()
  }
}

if (isMain(import.meta.url)) console.log(await run())
