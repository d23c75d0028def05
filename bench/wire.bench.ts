import '../src/util/polyfill.js'
import { randomBytes } from 'node:crypto'
import { createServer, connect, type AddressInfo } from 'node:net'
import { performance } from 'node:perf_hooks'
import type { Stream } from '@libp2p/interface'
import { XSalsa20Keystream } from '../src/p2p/pnet-protector.js'
import { jsSalsa20, salsa20Core } from '../src/p2p/salsa20-core.js'
import { noiseCrypto } from '../src/p2p/noise-crypto.js'
import { createP2pHost, type P2pHost } from '../src/p2p/host.js'
import { defaultSwarmKeyPath, loadSwarmKeySync } from '../src/p2p/swarm-key.js'
import { isMain, median } from './stats.js'

/**
 * The transport's layers, each alone and all together, on this machine (MB = 10^6 bytes):
 * - wire_tcp_mb_per_s: raw loopback TCP, both ends in this process (the limit for what follows);
 * - wire_pnet_mb_per_s: the private network's XSalsa20 on the core the node picks (libsodium's
 *   where it loads), 64 KiB chunks, one core; wire_pnet_js_mb_per_s, the JavaScript fallback;
 * - wire_noise_mb_per_s: Noise's ChaCha20-Poly1305 as the node runs it (libsodium where it loads,
 *   `wire_noise_aead` says which), one encryption and one decryption (in place, as Noise asks) of
 *   each 64 KiB message (the most a Noise message holds), one core; wire_noise_node_mb_per_s, the
 *   Noise library's own (node:crypto at that size);
 * - wire_stream_mb_per_s: one libp2p stream between two hosts of this process (TCP, pnet, Noise,
 *   Yamux, the node's own stack settings), written in 256 KiB pieces.
 * Each figure is the median of WIRE_ROUNDS (default 3) runs of WIRE_MIB (default 256) MiB;
 * WIRE_ONLY=stream (or tcp, pnet, noise, comma-separated) measures only those (to profile one).
 * `npm run bench -- wire`.
 */
const MiB = 1024 * 1024
const mbps = (bytes: number, ms: number): number => Math.round(bytes / 1e6 / (ms / 1000))

async function tcpRate (total: number): Promise<number> {
  const server = createServer()
  let got = 0
  let done: () => void = () => {}
  const finished = new Promise<void>((resolve) => { done = resolve })
  server.on('connection', (s) => { s.on('data', (d: Buffer) => { got += d.byteLength; if (got >= total) done() }) })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as AddressInfo).port
  const sock = connect(port, '127.0.0.1')
  await new Promise<void>((resolve) => sock.once('connect', resolve))
  const piece = randomBytes(256 * 1024)
  const t0 = performance.now()
  for (let sent = 0; sent < total; sent += piece.byteLength) {
    if (!sock.write(piece)) await new Promise<void>((resolve) => sock.once('drain', resolve))
  }
  await finished
  const ms = performance.now() - t0
  sock.destroy()
  await new Promise<void>((resolve) => server.close(() => { resolve() }))
  return mbps(total, ms)
}

function pnetRate (total: number, js: boolean): number {
  const ks = new XSalsa20Keystream(randomBytes(32), randomBytes(24), js ? jsSalsa20 : salsa20Core())
  const chunk = randomBytes(64 * 1024)
  const t0 = performance.now()
  for (let n = 0; n < total; n += chunk.byteLength) ks.xor(chunk)
  return mbps(total, performance.now() - t0)
}

function noiseRate (total: number, crypto = noiseCrypto()): number {
  const key = randomBytes(32)
  const nonce = new Uint8Array(12)
  const ad = new Uint8Array(0)
  const msg = randomBytes(65535 - 16)
  const t0 = performance.now()
  for (let n = 0; n < total; n += msg.byteLength) {
    const sealed = crypto.chaCha20Poly1305Encrypt(msg, nonce, ad, key).subarray()
    crypto.chaCha20Poly1305Decrypt(sealed, nonce, ad, key, sealed.subarray(0, msg.byteLength))
  }
  return mbps(total, performance.now() - t0)
}

const SINK = '/rbt-bench/wire-sink/1.0.0'

async function streamRate (a: P2pHost, b: P2pHost, total: number): Promise<number> {
  const stream = await a.openStream(b.peerId, SINK, { signal: AbortSignal.timeout(10_000) })
  const piece = randomBytes(256 * 1024)
  const answered = (async () => { for await (const _ of stream) { /* the sink's byte count */ } })()
  const t0 = performance.now()
  for (let sent = 0; sent < total; sent += piece.byteLength) {
    if (!stream.send(piece)) await stream.onDrain({ signal: AbortSignal.timeout(30_000) })
  }
  await stream.close()
  await answered
  return mbps(total, performance.now() - t0)
}

async function sink (stream: Stream): Promise<void> {
  try {
    let n = 0
    for await (const c of stream) n += c.byteLength
    stream.send(new TextEncoder().encode(String(n)))
    await stream.close()
  } catch (e) {
    stream.abort(e as Error)
  }
}

export async function run (): Promise<Record<string, string | number>> {
  const total = Number(process.env.WIRE_MIB ?? 256) * MiB
  const rounds = Number(process.env.WIRE_ROUNDS ?? 3)
  const key = loadSwarmKeySync(defaultSwarmKeyPath(true))
  const hosts: P2pHost[] = []
  try {
    for (let i = 0; i < 2; i++) {
      const h = await createP2pHost({ swarmKey: key, listen: ['/ip4/127.0.0.1/tcp/0'] })
      await h.start()
      hosts.push(h)
    }
    const [a, b] = hosts
    await b.handleProtocol(SINK, (s) => { void sink(s) })
    await a.dial(b.multiaddrs()[0])
    const tcp: number[] = []
    const pnet: number[] = []
    const pnetJs: number[] = []
    const noise: number[] = []
    const noiseNode: number[] = []
    const stream: number[] = []
    const only = new Set((process.env.WIRE_ONLY ?? 'tcp,pnet,noise,stream').split(','))
    for (let r = 0; r < rounds; r++) {
      if (only.has('tcp')) tcp.push(await tcpRate(total))
      if (only.has('pnet')) pnet.push(pnetRate(total, false))
      if (only.has('pnet')) pnetJs.push(pnetRate(Math.min(total, 64 * MiB), true))
      if (only.has('noise')) noise.push(noiseRate(total))
      if (only.has('noise')) noiseNode.push(noiseRate(total, noiseCrypto('node')))
      if (only.has('stream')) stream.push(await streamRate(a, b, total))
    }
    const med = (v: number[]): number | string => v.length === 0 ? '-' : median(v)
    return {
      wire_mib: total / MiB,
      wire_rounds: rounds,
      wire_tcp_mb_per_s: med(tcp),
      wire_pnet_mb_per_s: med(pnet),
      wire_pnet_core: salsa20Core().name,
      wire_pnet_js_mb_per_s: med(pnetJs),
      wire_noise_mb_per_s: med(noise),
      wire_noise_aead: noiseCrypto().aead,
      wire_noise_node_mb_per_s: med(noiseNode),
      wire_stream_mb_per_s: med(stream)
    }
  } finally {
    for (const h of hosts) await h.stop().catch(() => {})
  }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k}: ${String(v)}\n`)
}
