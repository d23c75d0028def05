import '../src/util/polyfill.js'
import { createCipheriv, createHash, randomBytes } from 'node:crypto'
import { createReadStream, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { NodeProcess } from '../test/helpers/node-process.js'
import { createLiteDid, USER_PASSWORD } from '../test/helpers/quorum-network.js'
import { RssWatch } from '../test/helpers/rss.js'
import { waitFor } from '../test/helpers/wait.js'
import { isMain } from './stats.js'

/** CPU time (ms) of a process, or of its main thread alone, from /proc (user + system, 10 ms steps). */
function cpuMs (pid: number, mainThreadOnly = false): number {
  try {
    const f = readFileSync(mainThreadOnly ? `/proc/${pid}/task/${pid}/stat` : `/proc/${pid}/stat`, 'utf8')
    const fields = f.slice(f.lastIndexOf(')') + 2).split(' ')
    return (Number(fields[11]) + Number(fields[12])) * 10
  } catch { return NaN }
}

/**
 * A large NFT artifact between two nodes on 127.0.0.1: a file of random bytes (NFT_LARGE_MIB,
 * default 1024) is created as an NFT on node A (create-nft's form, the artifact streamed from
 * disk), then fetched by node B block by block (fetch-nft) and checked against the original.
 * Each node's resident memory is polled from /proc/<pid>/status every 50 ms during each phase.
 * NFT_LARGE_ONLY=create stops after the create phase (to profile it alone).
 * Figures: nft_create_mb_per_s and nft_fetch_mb_per_s (MB = 10^6 bytes; the whole call as the
 * client sees it, the final fsync included), and each node's peak RSS growth over its RSS at
 * the start of the phase (MiB); the creating node's CPU time over the create (all its threads, and
 * its main thread alone: figures a loaded machine disturbs less than rates) and the CPU time of this
 * process, the client that reads the file and sends it; the CPU time of the serving and the fetching
 * node over the fetch.
 */
export async function run (): Promise<Record<string, string | number>> {
  const mib = Number(process.env.NFT_LARGE_MIB ?? 1024)
  const size = mib * 1024 * 1024
  const say = (s: string): void => { process.stdout.write(`  [nft-large] ${s}\n`) }
  const work = mkdtempSync(join(tmpdir(), 'rbtnode-nft-large-'))
  const artifactPath = join(work, 'film.bin')
  const nodes: NodeProcess[] = []
  try {
    // random bytes, written once (AES-CTR keystream of a random key: fast, incompressible)
    const sha = createHash('sha256')
    const cipher = createCipheriv('aes-128-ctr', randomBytes(16), randomBytes(16))
    const fh = await open(artifactPath, 'w')
    const zeros = Buffer.alloc(4 << 20)
    for (let left = size; left > 0; left -= zeros.length) {
      const b = cipher.update(zeros.subarray(0, Math.min(zeros.length, left)))
      sha.update(b)
      await fh.write(b)
    }
    await fh.close()
    const digest = sha.digest('hex')
    say(`artifact of ${mib} MiB written`)

    const env = { RBTNODE_LOG_LEVEL: 'INFO' }
    const [a, b] = await Promise.all([0, 1].map(async (n) => await new NodeProcess({ n, extraArgs: ['-testNet'], env, startTimeoutMs: 60_000 }).start()))
    nodes.push(a, b)
    await b.client.call('bootstrapAdd', { body: { peers: [a.multiaddr] } })
    const did = await createLiteDid(a.client, USER_PASSWORD)

    const watch = new RssWatch([a.child!.pid!, b.child!.pid!])
    const cpu0 = [cpuMs(a.child!.pid!), cpuMs(a.child!.pid!, true)]
    const client0 = process.cpuUsage()
    let t0 = performance.now()
    const made = await a.client.call('nftsGenerate', {
      form: { fields: { did, artifact_name: 'film.bin' }, files: { metadata: { filename: 'meta.json', data: Buffer.from('{"name":"bench film"}') }, artifact: { filename: 'film.bin', path: artifactPath } } },
      timeoutMs: 30 * 60_000
    })
    const createS = (performance.now() - t0) / 1000
    const createCpu = [cpuMs(a.child!.pid!) - cpu0[0], cpuMs(a.child!.pid!, true) - cpu0[1]]
    const clientCpu = process.cpuUsage(client0)
    const clientMs = Math.round((clientCpu.user + clientCpu.system) / 1000)
    const createGrowth = watch.phase()
    const nftId = made.result as string
    say(`created ${nftId} in ${createS.toFixed(1)} s`)
    const mbps = (s: number): number => Math.round(size / 1e6 / s)
    const mibOf = (n: number): number => Math.round(n / 1024 / 1024 * 10) / 10
    if (process.env.NFT_LARGE_ONLY === 'create') {
      watch.stop()
      return { nft_artifact_mib: mib, nft_create_mb_per_s: mbps(createS), nft_create_cpu_ms_creator: createCpu[0], nft_create_main_thread_cpu_ms_creator: createCpu[1], nft_create_cpu_ms_client: clientMs, nft_create_rss_growth_mib_creator: mibOf(createGrowth[0]) }
    }

    // B finds A as a holder (connected peer / DHT provider)
    await waitFor(async () => (await b.client.envelope('nodePing', { query: { peerID: a.peerId } })).status, { timeoutMs: 30_000, what: 'B to reach A' })
    const fetchCpu0 = [cpuMs(a.child!.pid!), cpuMs(b.child!.pid!)]
    t0 = performance.now()
    const fetched = await b.client.call('nftFetch', { query: { nft: nftId }, timeoutMs: 30 * 60_000 })
    const fetchS = (performance.now() - t0) / 1000
    const fetchCpu = [cpuMs(a.child!.pid!) - fetchCpu0[0], cpuMs(b.child!.pid!) - fetchCpu0[1]]
    const fetchGrowth = watch.phase()
    watch.stop()
    const r = fetched.result as { path: string, artifact?: { blocks: number, rejected: Record<string, number> } }
    const got = createHash('sha256')
    for await (const c of createReadStream(join(r.path, 'film.bin'))) got.update(c as Buffer)
    if (got.digest('hex') !== digest) throw new Error('the fetched artifact differs from the original')
    say(`fetched in ${fetchS.toFixed(1)} s (${r.artifact?.blocks ?? 0} blocks), checked`)
    return {
      nft_artifact_mib: mib,
      nft_create_mb_per_s: mbps(createS),
      nft_fetch_mb_per_s: mbps(fetchS),
      nft_create_cpu_ms_creator: createCpu[0],
      nft_create_main_thread_cpu_ms_creator: createCpu[1],
      nft_create_cpu_ms_client: clientMs,
      nft_create_rss_growth_mib_creator: mibOf(createGrowth[0]),
      nft_create_rss_growth_mib_other: mibOf(createGrowth[1]),
      nft_fetch_cpu_ms_server: fetchCpu[0],
      nft_fetch_cpu_ms_fetcher: fetchCpu[1],
      nft_fetch_rss_growth_mib_server: mibOf(fetchGrowth[0]),
      nft_fetch_rss_growth_mib_fetcher: mibOf(fetchGrowth[1])
    }
  } finally {
    await Promise.all(nodes.map(async (n) => { await n.dispose().catch(() => {}) }))
    rmSync(work, { recursive: true, force: true })
  }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k} ${String(v)}\n`)
  process.exit(0)
}
