/**
 * Request/response figures between two in-process hosts on 127.0.0.1 with the test-net swarm key:
 * rbt.ping round trip (new stream per request) p50/p99, sequential requests per second, a 1 KiB
 * echo, and paged bulk throughput. Run directly: `node dist/bench/p2p.bench.js`.
 */
import '../src/util/polyfill.js'
import { fileURLToPath } from 'node:url'
import { createP2pHost, type P2pHost } from '../src/p2p/host.js'
import { createRpc, type PagedSpec, type UnarySpec } from '../src/p2p/rpc.js'
import { defaultSwarmKeyPath, loadSwarmKey } from '../src/p2p/swarm-key.js'

interface BenchMethods {
  'bench.echo': UnarySpec<{ data: Uint8Array }, { data: Uint8Array }>
  'bench.bulk': PagedSpec<{ pages: number, pageBytes: number }, { data: Uint8Array }>
}

function percentile (sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(p / 100 * sorted.length))]
}

const ms = (n: number): number => Math.round(n * 1000) / 1000

export async function run (opts: { rounds?: number, warmup?: number } = {}): Promise<Record<string, string | number>> {
  const rounds = opts.rounds ?? 2000
  const warmup = opts.warmup ?? 200
  const swarmKey = await loadSwarmKey(defaultSwarmKeyPath(true))
  const hosts: P2pHost[] = []
  for (let i = 0; i < 2; i++) hosts.push(await createP2pHost({ swarmKey }))
  const [a, b] = hosts
  const page = new Uint8Array(192 * 1024).fill(7)
  const handlers = {
    'bench.echo': (req: { data: Uint8Array }) => req,
    'bench.bulk': async function * (req: { pages: number, pageBytes: number }) {
      for (let i = 0; i < req.pages; i++) yield { data: page.subarray(0, req.pageBytes) }
    }
  }
  const ra = createRpc<BenchMethods>({ host: a, handlers })
  const rb = createRpc<BenchMethods>({ host: b, handlers })
  try {
    for (const h of hosts) await h.start()
    await ra.start()
    await rb.start()
    const tDial = performance.now()
    await a.dial(b.multiaddrs()[0])
    const dialMs = performance.now() - tDial

    for (let i = 0; i < warmup; i++) await ra.call(b.peerId, 'rbt.ping', {})
    const rtts: number[] = []
    const t0 = performance.now()
    for (let i = 0; i < rounds; i++) {
      const s = performance.now()
      await ra.call(b.peerId, 'rbt.ping', {})
      rtts.push(performance.now() - s)
    }
    const seqSeconds = (performance.now() - t0) / 1000
    rtts.sort((x, y) => x - y)

    const kib = { data: new Uint8Array(1024).fill(1) }
    const echo: number[] = []
    for (let i = 0; i < Math.min(rounds, 1000); i++) {
      const s = performance.now()
      await ra.call(b.peerId, 'bench.echo', kib)
      echo.push(performance.now() - s)
    }
    echo.sort((x, y) => x - y)

    const concurrency = 16
    const perWorker = Math.floor(rounds / concurrency)
    const tc = performance.now()
    await Promise.all(Array.from({ length: concurrency }, async () => {
      for (let i = 0; i < perWorker; i++) await ra.call(b.peerId, 'rbt.ping', {})
    }))
    const concSeconds = (performance.now() - tc) / 1000

    const pages = 64
    const tb = performance.now()
    let bytes = 0
    for await (const p of ra.callPaged(b.peerId, 'bench.bulk', { pages, pageBytes: page.length })) bytes += p.data.length
    const bulkSeconds = (performance.now() - tb) / 1000

    const libp2pPing: number[] = []
    for (let i = 0; i < 200; i++) libp2pPing.push(await a.ping(b.peerId))
    libp2pPing.sort((x, y) => x - y)

    return {
      node: process.version,
      rounds,
      'dial+handshake ms': ms(dialMs),
      'rpc rbt.ping p50 ms': ms(percentile(rtts, 50)),
      'rpc rbt.ping p99 ms': ms(percentile(rtts, 99)),
      'rpc sequential req/s': Math.round(rounds / seqSeconds),
      'rpc 1KiB echo p50 ms': ms(percentile(echo, 50)),
      'rpc 1KiB echo p99 ms': ms(percentile(echo, 99)),
      [`rpc ${concurrency} concurrent req/s`]: Math.round(perWorker * concurrency / concSeconds),
      'paged bulk MiB/s': Math.round(bytes / 1024 / 1024 / bulkSeconds * 10) / 10,
      'libp2p ping p50 ms': percentile(libp2pPing, 50)
    }
  } finally {
    await rb.stop().catch(() => {})
    await ra.stop().catch(() => {})
    for (const h of hosts) await h.stop().catch(() => {})
  }
}

if (process.argv[1] !== undefined && fileURLToPath(import.meta.url) === process.argv[1]) {
  run().then(r => {
    for (const [k, v] of Object.entries(r)) console.log(`${k.padEnd(28)} ${v}`)
  }).catch(e => { console.error(e); process.exitCode = 1 })
}
