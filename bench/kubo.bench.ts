import '../src/util/polyfill.js'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { randomBytes } from 'node:crypto'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { CID } from 'multiformats/cid'
import * as raw from 'multiformats/codecs/raw'
import { sha256 } from 'multiformats/hashes/sha2'
import { KuboDaemon, addPublicAddress, findKubo } from '../test/helpers/kubo.js'
import { createNetns, netnsAvailability, type Netns } from '../test/helpers/netns.js'
import { NodeProcess } from '../test/helpers/node-process.js'
import { waitFor } from '../test/helpers/wait.js'
import { isMain, median, ms } from './stats.js'
import { bitswapFigures } from './kubo-bitswap.js'

/**
 * rbtnode (-kubo) beside Kubo v0.26 daemons configured as reference nodes configure theirs
 * (`npm run bench -- kubo`; needs root for the network namespaces and a Kubo binary, see
 * test/helpers/kubo.ts). Figures, each the median of ROUNDS:
 * - connect time both ways, with Kubo→Kubo as the anchor, each round to fresh daemons. rbtnode
 *   dials through its API (`POST /svc/v1/p2p/connect`), Kubo through `ipfs swarm connect`, whose
 *   wall time includes the CLI's own start: compare Kubo→rbtnode with Kubo→Kubo, not with
 *   rbtnode→Kubo.
 * - provide-then-findprovs on each DHT: one side provides a fresh CID, the other is asked until it
 *   names the provider; from the provide's start to the answer. LAN: every peer on loopback;
 *   WAN: every peer on an address the DHTs take for public. Kubo→Kubo is the anchor.
 * - bitswap: a 256 MiB file Kubo←rbtnode, rbtnode←Kubo and Kubo←Kubo (the anchor), MB/s and
 *   the peak RSS rise of each side (bench/kubo-bitswap.ts, in a namespace of its own).
 */
const ROUNDS = 5
const SWARM_KEY = fileURLToPath(new URL('../../swarm-keys/swarm.key', import.meta.url))

async function randomCid (): Promise<string> {
  return CID.createV1(raw.code, await sha256.digest(randomBytes(64))).toString()
}

async function timed (fn: () => Promise<unknown>): Promise<number> {
  const t0 = performance.now()
  await fn()
  return performance.now() - t0
}

interface Net { ns: Netns, host: string | undefined, r: NodeProcess, k1: KuboDaemon, k2: KuboDaemon }

async function startNet (label: string, host: string | undefined, stopAll: Array<() => Promise<void>>): Promise<Net> {
  const ns = await createNetns(label)
  stopAll.push(async () => { await ns.dispose() })
  if (host !== undefined) await addPublicAddress(ns, host)
  const r = new NodeProcess({ netns: ns, extraArgs: ['-mdns=false', '-kubo'], ...(host !== undefined ? { swarmHost: host } : {}), env: { RBTNODE_LOG_LEVEL: 'ERROR' }, startTimeoutMs: 120_000 })
  stopAll.push(async () => { await r.dispose() })
  const kubo = (): KuboDaemon => {
    const k = new KuboDaemon({ netns: ns, swarmKey: SWARM_KEY, ...(host !== undefined ? { host } : {}) })
    stopAll.push(async () => { await k.stop() })
    return k
  }
  const [k1, k2] = [kubo(), kubo()]
  await Promise.all([r.start(), k1.start(), k2.start()])
  return { ns, host, r, k1, k2 }
}

async function connectFigures (n: Net): Promise<Record<string, string>> {
  const { r, k1 } = n
  const rbtToKubo: number[] = []
  const kuboToRbt: number[] = []
  const kuboToKubo: number[] = []
  // fresh daemons each round: a peer that was hung up on is dialled again at once by the other side
  for (let i = 0; i < ROUNDS; i++) {
    const fresh = [0, 1, 2].map(() => new KuboDaemon({ netns: n.ns, swarmKey: SWARM_KEY, ...(n.host !== undefined ? { host: n.host } : {}) }))
    try {
      await Promise.all(fresh.map(async (k) => await k.start()))
      const [a, b, c] = fresh as [KuboDaemon, KuboDaemon, KuboDaemon]
      rbtToKubo.push(await timed(async () => await r.client.call('p2pConnect', { body: { addr: a.multiaddr } })))
      kuboToRbt.push(await timed(async () => await b.ipfs(['swarm', 'connect', r.multiaddr])))
      kuboToKubo.push(await timed(async () => await c.ipfs(['swarm', 'connect', k1.multiaddr])))
    } finally {
      await Promise.all(fresh.map(async (k) => { await k.stop() }))
    }
  }
  return {
    connect_rbtnode_to_kubo: ms(median(rbtToKubo)),
    connect_kubo_to_rbtnode_cli: ms(median(kuboToRbt)),
    connect_kubo_to_kubo_cli_anchor: ms(median(kuboToKubo))
  }
}

/** From a provide's start until the other side names the provider (polled every 100 ms). */
async function provideFigures (n: Net, dht: 'lan' | 'wan', work: string): Promise<Record<string, string>> {
  const { r, k1, k2 } = n
  await r.client.call('p2pConnect', { body: { addr: k1.multiaddr } })
  await r.client.call('p2pConnect', { body: { addr: k2.multiaddr } })
  await k1.ipfs(['swarm', 'connect', k2.multiaddr]).catch(() => {})
  if (dht === 'wan') await waitFor(async () => (await k1.ipfs(['stats', 'dht', 'wan'])).includes(r.peerId), { timeoutMs: 60_000, what: 'rbtnode in Kubo\'s WAN table' })
  const kuboFinds = async (k: KuboDaemon, cid: string, peer: string): Promise<void> => {
    await waitFor(async () => (await k.ipfs(['dht', 'findprovs', '-n', '1', cid], { timeoutMs: 30_000 })).includes(peer), { timeoutMs: 60_000, intervalMs: 100, what: 'findprovs' })
  }
  const kuboAdds = async (k: KuboDaemon): Promise<string> => {
    const file = join(work, `b-${randomBytes(4).toString('hex')}`)
    writeFileSync(file, randomBytes(1024))
    return (await k.ipfs(['add', '-Q', '--cid-version', '1', file])).trim()
  }
  const rbtThenKubo: number[] = []
  const kuboThenRbt: number[] = []
  const kuboThenKubo: number[] = []
  for (let i = 0; i < ROUNDS; i++) {
    const c1 = await randomCid()
    rbtThenKubo.push(await timed(async () => {
      const res = await r.client.call('p2pProvide', { body: { cid: c1 } })
      if (res.result?.dht !== dht) throw new Error(`rbtnode provided on ${res.result?.dht ?? '?'}, not ${dht}`)
      await kuboFinds(k1, c1, r.peerId)
    }))
    const c2 = await kuboAdds(k1)
    kuboThenRbt.push(await timed(async () => {
      await k1.ipfs(['dht', 'provide', c2], { timeoutMs: 60_000 })
      await waitFor(async () => ((await r.client.call('p2pProviders', { query: { cid: c2, dht, timeout_ms: 5000 } })).result?.providers ?? []).some((p) => p.peer_id === k1.peerId), { timeoutMs: 60_000, intervalMs: 100, what: 'rbtnode to find Kubo' })
    }))
    const c3 = await kuboAdds(k2)
    kuboThenKubo.push(await timed(async () => {
      await k2.ipfs(['dht', 'provide', c3], { timeoutMs: 60_000 })
      await kuboFinds(k1, c3, k2.peerId)
    }))
  }
  return {
    [`${dht}_rbtnode_provides_kubo_finds`]: ms(median(rbtThenKubo)),
    [`${dht}_kubo_provides_rbtnode_finds`]: ms(median(kuboThenRbt)),
    [`${dht}_kubo_provides_kubo_finds_anchor`]: ms(median(kuboThenKubo))
  }
}

export async function run (): Promise<Record<string, string | number>> {
  const avail = await netnsAvailability()
  if (!avail.ok) throw new Error(`the Kubo benchmark needs network namespaces: ${avail.reason}`)
  const kubo = findKubo()
  if (kubo.bin === undefined) throw new Error(`the Kubo benchmark needs Kubo: ${kubo.reason}`)
  const stopAll: Array<() => Promise<void>> = []
  const work = mkdtempSync(join(tmpdir(), 'rbt-kubo-bench-'))
  const figures: Record<string, string | number> = { rounds: ROUNDS }
  try {
    const lan = await startNet('bench-kubo-lan', undefined, stopAll)
    Object.assign(figures, await connectFigures(lan), await provideFigures(lan, 'lan', work))
    const wan = await startNet('bench-kubo-wan', '11.0.0.1', stopAll)
    Object.assign(figures, await provideFigures(wan, 'wan', work))
  } finally {
    for (const stop of stopAll.reverse()) await stop().catch(() => {})
    rmSync(work, { recursive: true, force: true })
  }
  // with the networks above stopped: the transfers have the machine to themselves
  Object.assign(figures, await bitswapFigures())
  return figures
}

if (isMain(import.meta.url)) {
  for (const [k, v] of Object.entries(await run())) console.log(`${k}  ${String(v)}`)
  process.exit(0)
}
