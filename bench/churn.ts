import '../src/util/polyfill.js'
import { randomBytes } from 'node:crypto'
import { readFileSync, rmSync } from 'node:fs'
import { NodeProcess } from '../test/helpers/node-process.js'
import { createLiteDid } from '../test/helpers/quorum-network.js'
import { waitFor } from '../test/helpers/wait.js'

/**
 * Connection churn with large messages, against real node processes (`npm run churn -- --minutes 30`).
 *
 * Half the nodes are stable: they are never restarted, and every one of them must stay alive with
 * its RSS under the bound. The other half churn: one of them is killed (SIGKILL, so its peers see
 * sockets die mid-frame) or stopped every few seconds and comes back with a fresh data dir and
 * peer id, so the stable nodes keep opening and closing connections. A watchdog re-sends every
 * node's full bootstrap list every 2 s (as operators' scripts do), and fresh nodes fetch an NFT
 * whose artifact is several MiB from the network (256 KiB pages, the largest frames the node
 * sends). Discovery is off: nodes are connected by their bootstrap lists only.
 *
 * Prints: minutes, restarts, NFT fetches, connections seen, max RSS of the stable nodes (MB),
 * unexpected exits; exits non-zero when a stable node died or went over the RSS bound.
 */
const args = process.argv.slice(2)
const opt = (name: string, dflt: number): number => {
  const i = args.indexOf(`--${name}`)
  return i >= 0 && args[i + 1] !== undefined ? Number(args[i + 1]) : dflt
}
const minutes = opt('minutes', 30)
const nodeCount = Math.max(4, opt('nodes', 8))
const artifactMb = opt('artifact-mb', 4)
const rssBoundMb = opt('rss-mb', 300)
const env = { RBTNODE_LOG_LEVEL: 'INFO' }

function rssMb (pid: number | undefined): number {
  if (pid === undefined) return 0
  try {
    const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))
    return m === null ? 0 : Number(m[1]) / 1024
  } catch { return 0 }
}

const stable: NodeProcess[] = []
let churning: NodeProcess[] = []
const stats = { restarts: 0, fetches: 0, fetchFailures: 0, bootstrapCalls: 0, maxRss: 0, deaths: [] as string[] }

async function main (): Promise<void> {
  const half = Math.floor(nodeCount / 2)
  for (let i = 0; i < half; i++) stable.push(await new NodeProcess({ n: i, extraArgs: ['-testNet'], env }).start())
  for (let i = half; i < nodeCount; i++) churning.push(await new NodeProcess({ n: i, extraArgs: ['-testNet'], env }).start())
  const all = (): NodeProcess[] => [...stable, ...churning].filter((n) => n.running)
  const watchdog = async (): Promise<void> => {
    const peers = all().map((n) => n.multiaddr)
    await Promise.all(all().map(async (n) => {
      await n.client.envelope('bootstrapAdd', { body: { peers: peers.filter((p) => p !== n.multiaddr) } }).catch(() => {})
      stats.bootstrapCalls++
    }))
  }
  await watchdog()

  // the NFT every fresh node fetches: made on stable node 0
  const owner = await createLiteDid(stable[0]!.client, 'churn-pw')
  const metadata = Buffer.from(JSON.stringify({ name: 'churn', size: artifactMb }))
  const artifact = randomBytes(artifactMb * 1024 * 1024)
  const nftId = (await stable[0]!.client.call('nftsGenerate', { form: { fields: { did: owner }, files: { metadata: { filename: 'meta.json', data: metadata }, artifact: { filename: 'blob.bin', data: artifact } } } })).result as string

  const fetchOn = async (n: NodeProcess): Promise<void> => {
    const env = await n.client.envelope('nftFetch', { query: { nft: nftId }, timeoutMs: 120_000 }).catch((e: Error) => ({ status: false, message: e.message }))
    if (env.status) stats.fetches++
    else stats.fetchFailures++
  }

  const started = Date.now()
  const deadline = started + minutes * 60_000
  let lastReport = started
  let timers = true
  const loop = async (everyMs: number, fn: () => Promise<void>): Promise<void> => {
    while (timers && Date.now() < deadline) {
      const t = Date.now()
      await fn().catch((e: Error) => { process.stdout.write(`  (loop error: ${e.message})\n`) })
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, everyMs - (Date.now() - t))))
    }
  }
  const check = async (): Promise<void> => {
    for (const n of stable) {
      if (!n.running) { stats.deaths.push(`stable node ${n.opts.n ?? 0} exited:\n${n.logs.slice(-4000)}`); timers = false }
      stats.maxRss = Math.max(stats.maxRss, rssMb(n.child?.pid))
    }
    if (Date.now() - lastReport >= 60_000) {
      lastReport = Date.now()
      const rss = stable.map((n) => rssMb(n.child?.pid).toFixed(0)).join('/')
      process.stdout.write(`  ${((Date.now() - started) / 60_000).toFixed(1)} min: ${stats.restarts} restarts, ${stats.fetches} fetches, stable RSS ${rss} MB\n`)
    }
  }
  const churn = async (): Promise<void> => {
    const i = Math.floor(Math.random() * churning.length)
    const old = churning[i]!
    if (Math.random() < 0.7) await old.kill()
    else await old.stop()
    if (old.child?.exitCode !== null && old.child?.exitCode !== 0 && old.child?.signalCode !== 'SIGKILL') stats.deaths.push(`churning node exited with ${String(old.child?.exitCode)}`)
    await old.dispose()
    const fresh = new NodeProcess({ n: old.opts.n, extraArgs: ['-testNet'], env, startTimeoutMs: 60_000 })
    // a node that does not come up is killed by start(); its data dir goes too
    await fresh.start().catch(async (e: unknown) => { await fresh.dispose(); throw e })
    churning = churning.map((n) => n === old ? fresh : n)
    stats.restarts++
    await fresh.client.envelope('bootstrapAdd', { body: { peers: stable.map((n) => n.multiaddr) } })
    await waitFor(async () => ((await fresh.client.call('nodeStatus')).result?.connected_peers ?? 0) > 0, { timeoutMs: 30_000, what: 'the fresh node to connect' })
    // large frames while the others keep churning
    void fetchOn(fresh)
  }
  await Promise.all([
    loop(2000, watchdog),
    loop(5000, churn),
    loop(2000, check),
    // stable nodes fetch too (a fetch of something already held is local, so they fetch once)
    (async () => { for (const n of stable.slice(1)) await fetchOn(n) })()
  ])
  const elapsed = (Date.now() - started) / 60_000
  process.stdout.write([
    `churn_minutes ${elapsed.toFixed(1)}`,
    `churn_nodes ${nodeCount} (${stable.length} stable)`,
    `churn_restarts ${stats.restarts}`,
    `churn_nft_fetches ${stats.fetches} (${stats.fetchFailures} failed, ${artifactMb} MiB artifact)`,
    `churn_bootstrap_calls ${stats.bootstrapCalls}`,
    `churn_stable_max_rss_mb ${stats.maxRss.toFixed(0)}`,
    `churn_unexpected_exits ${stats.deaths.length}`
  ].join('\n') + '\n')
  for (const d of stats.deaths) process.stdout.write(d + '\n')
  if (stats.deaths.length > 0 || stats.maxRss > rssBoundMb) process.exitCode = 1
}

try {
  await main()
} finally {
  await Promise.all([...stable, ...churning].map(async (n) => { await n.dispose().catch(() => {}) }))
  for (const n of [...stable, ...churning]) rmSync(n.dir, { recursive: true, force: true })
}
