import '../src/util/polyfill.js'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, openSync, closeSync, writeSync, rmSync, statSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { KuboDaemon, findKubo } from '../test/helpers/kubo.js'
import { KuboBlocksPeer, TEST_SWARM_KEY } from '../test/helpers/kubo-blocks-peer.js'
import { createNetns, netnsAvailability, type Netns } from '../test/helpers/netns.js'
import { RssWatch } from '../test/helpers/rss.js'
import { isMain, loadAverage, median } from './stats.js'

/**
 * Bitswap against Kubo: a 256 MiB file (random bytes, so nothing is shared between runs) fetched
 * Kubo←rbtnode (`ipfs get` of what rbtnode added), rbtnode←Kubo (rbtnode's get of what Kubo
 * added) and Kubo←Kubo (the anchor), each written to a file on disk, in a network namespace on
 * loopback with the test swarm key, ROUNDS times in turn. MB/s is 10^6 bytes a second of the
 * median round; the peak RSS is each side's rise above its RSS at the start of the fetch.
 * Part of `npm run bench -- kubo` (bench/kubo.bench.ts); alone: `node dist/bench/kubo-bitswap.js`
 * after a build. A Kubo binary and network namespaces are needed. KUBO_BENCH_MIB sets the size,
 * KUBO_BENCH_ROUNDS the rounds. The rbtnode side is test/helpers/kubo-blocks-peer.ts: a process
 * with the host, blockstore and bitswap a `-kubo` node runs (the node has no route that fetches a
 * CID yet), so its RSS is that of the block exchange without the rest of a node.
 */
const MiB = 1024 * 1024
const SIZE = Number(process.env.KUBO_BENCH_MIB ?? '256') * MiB
const ROUNDS = Number(process.env.KUBO_BENCH_ROUNDS ?? '3')
const execFileP = promisify(execFile)

function randomFile (dir: string, name: string): string {
  const path = join(dir, name)
  const fd = openSync(path, 'w')
  for (let off = 0; off < SIZE; off += 4 * MiB) writeSync(fd, randomBytes(Math.min(4 * MiB, SIZE - off)))
  closeSync(fd)
  return path
}

const kuboPid = (k: KuboDaemon): number => (k as unknown as { child: { pid: number } }).child.pid

interface Round { mbps: number, rssFetcher: number, rssServer: number }

async function kuboGet (k: KuboDaemon, ns: Netns, cid: string, dest: string): Promise<void> {
  const argv = ns.execArgs('env', [`IPFS_PATH=${k.repo}`, 'LIBP2P_FORCE_PNET=1', k.bin, 'get', cid, '-o', dest])
  await execFileP('ip', argv, { timeout: 600_000 })
}

export async function bitswapFigures (): Promise<Record<string, string>> {
  if (findKubo().bin === undefined) return { bitswap: `skipped: ${findKubo().reason}` }
  const nsOk = await netnsAvailability()
  if (!nsOk.ok) return { bitswap: `skipped: network namespaces: ${nsOk.reason}` }
  const ns = await createNetns('kubo-bitswap-bench')
  const work = mkdtempSync(join(tmpdir(), 'rbt-kubo-bench-'))
  const rounds: Record<'kuboFromRbt' | 'rbtFromKubo' | 'kuboFromKubo', Round[]> = { kuboFromRbt: [], rbtFromKubo: [], kuboFromKubo: [] }
  let a: KuboDaemon | undefined
  let b: KuboDaemon | undefined
  let peer: KuboBlocksPeer | undefined
  const importMs: number[] = []
  try {
    a = await new KuboDaemon({ netns: ns, swarmKey: TEST_SWARM_KEY }).start()
    b = await new KuboDaemon({ netns: ns, swarmKey: TEST_SWARM_KEY }).start()
    peer = await KuboBlocksPeer.start(ns)
    await peer.call('dial', { addr: a.multiaddr })
    await peer.call('dial', { addr: b.multiaddr })
    await a.ipfs(['swarm', 'connect', b.multiaddr])

    const measure = async (fetcherPid: number, serverPid: number, fetch: () => Promise<void>): Promise<Round> => {
      const watch = new RssWatch([fetcherPid, serverPid], 25)
      const t0 = performance.now()
      await fetch()
      const s = (performance.now() - t0) / 1000
      const [rf, rs] = watch.phase()
      watch.stop()
      return { mbps: SIZE / 1e6 / s, rssFetcher: rf, rssServer: rs }
    }

    for (let r = 0; r < ROUNDS; r++) {
      // Kubo←rbtnode
      const f1 = randomFile(work, `r${r}-rbt.bin`)
      const t0 = performance.now()
      const { cid: c1 } = await peer.call<{ cid: string }>('addFile', { path: f1, layout: 'v0' }, 600_000)
      importMs.push(performance.now() - t0)
      const d1 = join(work, `r${r}-kubo-from-rbt.bin`)
      rounds.kuboFromRbt.push(await measure(kuboPid(b), peer.pid, async () => { await kuboGet(b!, ns, c1, d1) }))
      if (statSync(d1).size !== SIZE) throw new Error('Kubo←rbtnode: wrong size')
      rmSync(f1); rmSync(d1)

      // rbtnode←Kubo
      const f2 = randomFile(work, `r${r}-kubo.bin`)
      const c2 = (await a.ipfs(['add', '-Q', f2], { timeoutMs: 600_000 })).trim()
      const d2 = join(work, `r${r}-rbt-from-kubo.bin`)
      rounds.rbtFromKubo.push(await measure(peer.pid, kuboPid(a), async () => { await peer!.call('get', { cid: c2, path: d2 }, 600_000) }))
      if (statSync(d2).size !== SIZE) throw new Error('rbtnode←Kubo: wrong size')
      rmSync(d2)

      // Kubo←Kubo, of the same file (b has none of its blocks)
      const d3 = join(work, `r${r}-kubo-from-kubo.bin`)
      rounds.kuboFromKubo.push(await measure(kuboPid(b), kuboPid(a), async () => { await kuboGet(b!, ns, c2, d3) }))
      if (statSync(d3).size !== SIZE) throw new Error('Kubo←Kubo: wrong size')
      rmSync(f2); rmSync(d3)
    }
  } finally {
    await peer?.stop().catch(() => {})
    await a?.stop().catch(() => {})
    await b?.stop().catch(() => {})
    await ns.dispose()
    rmSync(work, { recursive: true, force: true })
  }
  const mb = (v: number): string => `${(v / MiB).toFixed(0)} MiB`
  const line = (rs: Round[], fetcher: string, server: string): string =>
    `${median(rs.map((x) => x.mbps)).toFixed(1)} MB/s (rounds ${rs.map((x) => x.mbps.toFixed(1)).join(' ')}); peak RSS rise ${fetcher} +${mb(Math.max(...rs.map((x) => x.rssFetcher)))}, ${server} +${mb(Math.max(...rs.map((x) => x.rssServer)))}`
  const anchor = median(rounds.kuboFromKubo.map((x) => x.mbps))
  return {
    bitswap_file: `${SIZE / MiB} MiB, ${ROUNDS} rounds, each side writing the file to disk`,
    bitswap_kubo_from_rbtnode: line(rounds.kuboFromRbt, 'Kubo', 'rbtnode'),
    bitswap_rbtnode_from_kubo: line(rounds.rbtFromKubo, 'rbtnode', 'Kubo'),
    bitswap_kubo_from_kubo_anchor: line(rounds.kuboFromKubo, 'fetching Kubo', 'serving Kubo'),
    bitswap_anchor_over_kubo_from_rbtnode: (anchor / median(rounds.kuboFromRbt.map((x) => x.mbps))).toFixed(2),
    bitswap_anchor_over_rbtnode_from_kubo: (anchor / median(rounds.rbtFromKubo.map((x) => x.mbps))).toFixed(2),
    bitswap_rbtnode_add: `${(median(importMs) / 1000).toFixed(2)} s`,
    bitswap_load_average: loadAverage()
  }
}

if (isMain(import.meta.url)) {
  for (const [k, v] of Object.entries(await bitswapFigures())) process.stdout.write(`${k}  ${String(v)}\n`)
  process.exit(0)
}
