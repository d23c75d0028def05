import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import { randomBytes } from 'node:crypto'
import type { ConnectionProtector, MessageStream } from '@libp2p/interface'
import { preSharedKey } from '@libp2p/pnet'
import { multiaddrConnectionPair } from '@libp2p/utils'
import { XSalsa20Keystream, pnetProtector } from '../src/p2p/pnet-protector.js'
import { salsa20Core } from '../src/p2p/salsa20-core.js'
import { defaultSwarmKeyPath, loadSwarmKey, type SwarmKey } from '../src/p2p/swarm-key.js'
import { isMain, median } from './stats.js'

/**
 * The private-network protector alone: 64 MiB written through a protected in-memory connection
 * pair (encrypted by one end, decrypted by the other, both in this process) with our protector and
 * with @libp2p/pnet's, in interleaved rounds because the shared host's speed drifts. Also the bare
 * keystream rate (no stream machinery). Writes are 64 KiB (the size of a TCP read) with at most
 * 512 KiB in flight: @libp2p/pnet's cipher grows its shared WebAssembly memory when a write
 * queued behind backpressure reaches it as one chunk above about 600 KiB, and with both ends in
 * one process that growth repeats until the process fails (see docs/decisions/0005-pnet-cipher.md).
 * `npm run bench -- pnet`, or `node dist/bench/pnet.bench.js` after a build.
 */
const MiB = 1024 * 1024
const TOTAL = 64 * MiB
const CHUNK = 64 * 1024
const WINDOW = 512 * 1024
const ROUNDS = 5

async function pairThroughput (make: () => ConnectionProtector, data: Uint8Array): Promise<number> {
  const [outbound, inbound] = multiaddrConnectionPair()
  const [a, b] = await Promise.all([make().protect(outbound), make().protect(inbound)])
  let got = 0
  let wake: (() => void) | undefined
  const t0 = performance.now()
  const received = new Promise<void>((resolve, reject) => {
    b.addEventListener('message', (evt) => {
      got += evt.data.byteLength
      wake?.()
      if (got >= TOTAL) resolve()
    })
    b.addEventListener('close', () => { reject(new Error(`closed after ${got} bytes`)) })
  })
  received.catch(() => {})
  for (let sent = 0; sent < TOTAL; sent += CHUNK) {
    // at most WINDOW bytes in flight, so that no write reaching the cipher exceeds it
    while (sent - got >= WINDOW) await new Promise<void>((resolve) => { wake = resolve })
    const at = sent % data.byteLength
    if (!a.send(data.subarray(at, at + CHUNK))) await a.onDrain()
  }
  await received
  const seconds = (performance.now() - t0) / 1000
  abortBoth(a, b)
  return TOTAL / MiB / seconds
}

function abortBoth (a: MessageStream, b: MessageStream): void {
  a.abort(new Error('benchmark over'))
  b.abort(new Error('benchmark over'))
}

function keystreamRate (key: SwarmKey): number {
  const ks = new XSalsa20Keystream(key.key, randomBytes(24))
  const buf = new Uint8Array(CHUNK)
  const t0 = performance.now()
  for (let at = 0; at < TOTAL; at += CHUNK) ks.xor(buf)
  return TOTAL / MiB / ((performance.now() - t0) / 1000)
}

export async function run (): Promise<Record<string, string | number>> {
  const key = await loadSwarmKey(defaultSwarmKeyPath(true))
  const ours = (): ConnectionProtector => pnetProtector({ swarmKey: key })()
  const theirs = (): ConnectionProtector => (preSharedKey({ psk: key.psk }) as unknown as () => ConnectionProtector)()
  const data = randomBytes(4 * MiB)
  // warm both up (JIT, WebAssembly compilation)
  await pairThroughput(ours, data)
  await pairThroughput(theirs, data)
  const a: number[] = []
  const b: number[] = []
  const k: number[] = []
  for (let r = 0; r < ROUNDS; r++) {
    a.push(await pairThroughput(ours, data))
    b.push(await pairThroughput(theirs, data))
    k.push(keystreamRate(key))
  }
  const round = (v: number): number => Math.round(v)
  return {
    'our Salsa20 core (RBTNODE_PNET_CIPHER=js for the JavaScript one)': salsa20Core().name,
    'ours, 64 MiB through a pair, MiB/s median': round(median(a)),
    'ours, per round': a.map(round).join(' '),
    '@libp2p/pnet (WebAssembly), 64 MiB through a pair, MiB/s median': round(median(b)),
    '@libp2p/pnet, per round': b.map(round).join(' '),
    'ours / @libp2p/pnet': (median(a) / median(b)).toFixed(2),
    'our keystream alone, 64 KiB chunks, MiB/s median': round(median(k))
  }
}

if (isMain(import.meta.url)) {
  for (const [k, v] of Object.entries(await run())) process.stdout.write(`${k}: ${String(v)}\n`)
}
