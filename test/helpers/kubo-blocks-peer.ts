/**
 * An rbtnode peer of the Kubo interop suites and the `kubo` bench, in a process of its own inside
 * the suite's network namespace (where the Kubo daemons are): a p2p host with the test swarm key
 * and Kubo's DHTs (as `-kubo` builds it), the blockstore and bitswap of src/p2p/kubo, and the `/x/<peer id>RubixCore/1.0` handler over a
 * small HTTP app. The test drives it with one JSON command a line on stdin and reads one JSON
 * answer a line on stdout.
 *
 *   const peer = await KuboBlocksPeer.start(ns)
 *   const { cid } = await peer.call('addFile', { path, layout: 'v0' })
 *   await peer.stop()
 *
 * The HTTP app it serves on /x/: GET /api/ping, POST /echo (the body back), GET /big?n=<bytes>
 * (a chunked body of n bytes, byte i = i % 251), GET /status?code=<n>.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { createHash } from 'node:crypto'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { readdir, readFile } from 'node:fs/promises'
import { connect } from 'node:net'
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createInterface } from 'node:readline'
import { fileURLToPath, pathToFileURL } from 'node:url'
import type { Netns } from './netns.js'

const SELF = fileURLToPath(import.meta.url)
const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const TEST_SWARM_KEY = join(ROOT, 'swarm-keys', 'testswarm.key')

/** The body GET /big?n= answers: byte i is i % 251. */
export function bigBody (n: number): Buffer {
  const b = Buffer.allocUnsafe(n)
  for (let i = 0; i < n; i++) b[i] = i % 251
  return b
}

export const sha256 = (b: Uint8Array): string => createHash('sha256').update(b).digest('hex')

/** The app behind /x/ (and behind a plain TCP port for `p2p listen` targets). */
function testApp (req: IncomingMessage, res: ServerResponse): void {
  const url = new URL(req.url ?? '/', 'http://x')
  const parts: Buffer[] = []
  req.on('data', (c: Buffer) => parts.push(c))
  req.on('end', () => {
    const body = Buffer.concat(parts)
    if (url.pathname === '/api/ping') {
      res.setHeader('Content-Type', 'application/json')
      res.end(JSON.stringify({ status: true, message: 'Ping Received' }))
    } else if (url.pathname === '/echo') {
      res.setHeader('Content-Type', 'application/octet-stream')
      res.setHeader('Content-Length', body.length)
      res.setHeader('X-Body-Sha256', sha256(body))
      res.end(body)
    } else if (url.pathname === '/big') {
      const all = bigBody(Number(url.searchParams.get('n') ?? '0'))
      res.setHeader('Content-Type', 'application/octet-stream')
      // written in pieces without a length: the body goes chunked, as Go's server sends it
      for (let off = 0; off < all.length; off += 10_000) res.write(all.subarray(off, off + 10_000))
      res.end()
    } else if (url.pathname === '/status') {
      res.statusCode = Number(url.searchParams.get('code') ?? '500')
      res.end('status asked for')
    } else {
      res.statusCode = 404
      res.end('not found')
    }
  })
}

// ---------------------------------------------------------------------------------------------
// the child process

async function main (): Promise<void> {
  const [{ createP2pHost }, { loadSwarmKeySync }, { FsBlockstore, parseCid }, { registerBitswap }, imp, exp, x, http1] = await Promise.all([
    import('../../src/p2p/host.js'), import('../../src/p2p/swarm-key.js'), import('../../src/p2p/kubo/blockstore.js'),
    import('../../src/p2p/kubo/bitswap.js'), import('../../src/p2p/kubo/unixfs-import.js'), import('../../src/p2p/kubo/unixfs-export.js'),
    import('../../src/p2p/kubo/x-stream.js'), import('../../src/p2p/kubo/http1.js')
  ])
  const dataDir = process.env.PEER_DIR as string
  const host = await createP2pHost({ swarmKey: loadSwarmKeySync(TEST_SWARM_KEY), listen: ['/ip4/127.0.0.1/tcp/0'], dht: { addresses: 'all' }, kubo: true })
  await host.start()
  const store = new FsBlockstore(join(dataDir, 'blocks'))
  const bitswap = await registerBitswap(host, store, { ...(host.kubo !== undefined ? { routing: host.kubo } : {}) })
  await x.handleXStreams(host, { server: x.createXHttpServer(testApp) })
  const source = { get: async (cid: import('multiformats/cid').CID, o?: { signal?: AbortSignal }) => await bitswap.get(cid, { ...o, timeoutMs: 120_000 }) }

  const ops: Record<string, (a: any) => Promise<unknown>> = {
    info: async () => ({ peerId: host.peerId, multiaddrs: host.multiaddrs(), pid: process.pid }),
    dial: async (a: { addr: string }) => ({ peer: await host.dial(a.addr, { timeoutMs: 30_000 }) }),
    peers: async () => ({ peers: host.connectedPeers() }),
    hangUp: async (a: { peer: string }) => { await host.hangUp(a.peer); return {} },
    addFile: async (a: { path: string, layout?: 'v0' | 'v1-sha3' }) => {
      const r = await imp.importFile(store, { path: a.path }, a.layout ?? 'v0')
      return { cid: r.cid.toString(), size: r.size }
    },
    addFolder: async (a: { dir: string, layout?: 'v0' | 'v1-sha3' }) => {
      const tree: Record<string, Uint8Array> = {}
      for (const n of await readdir(a.dir)) tree[n] = await readFile(join(a.dir, n))
      const r = await imp.importFolder(store, tree, a.layout ?? 'v1-sha3')
      return { cid: r.cid.toString(), size: r.size }
    },
    /** `ipfs get` of a CID through bitswap, into `path` */
    get: async (a: { cid: string, path: string }) => {
      const t0 = performance.now()
      await exp.getTree(source, parseCid(a.cid), a.path)
      return { ms: performance.now() - t0 }
    },
    stats: async () => ({ ...bitswap.stats, rss: process.memoryUsage().rss, maxRss: process.resourceUsage().maxRSS * 1024 }),
    xRequest: async (a: { peer: string, method: string, path: string, body?: string, bodyLength?: number }) => {
      const body = a.bodyLength !== undefined ? bigBody(a.bodyLength) : a.body
      try {
        const res = await x.xHttpRequest(host, a.peer, { method: a.method, path: a.path, host: 'localhost', ...(body !== undefined ? { body, headers: { 'Content-Type': 'application/octet-stream' } } : {}) }, { timeoutMs: 30_000 })
        return { status: res.status, headers: res.headers, length: res.body.length, sha256: sha256(res.body), text: res.body.length < 2000 ? res.body.toString('utf8') : '' }
      } catch (e) {
        const err = e as { code?: string, message?: string, details?: { status?: number } }
        return { error: err.code ?? 'ERROR', message: err.message, status: err.details?.status }
      }
    },
    /** a plain HTTP server on a local TCP port (a `p2p listen` target); answers its port */
    tcpServe: async () => {
      const srv = createServer(testApp)
      await new Promise<void>((resolve) => srv.listen(0, '127.0.0.1', resolve))
      return { port: (srv.address() as { port: number }).port }
    },
    /** one request, written as Go writes it, to a local TCP port (a `p2p forward` listen address) */
    tcpRequest: async (a: { port: number, method: string, path: string, bodyLength?: number }) => {
      const sock = connect({ host: '127.0.0.1', port: a.port })
      const parser = new http1.ResponseParser()
      const body = a.bodyLength !== undefined ? bigBody(a.bodyLength) : undefined
      return await new Promise((resolve, reject) => {
        sock.on('error', reject)
        sock.on('data', (d: Buffer) => {
          try { parser.push(d) } catch (e) { reject(e); sock.destroy(); return }
          if (parser.done) { sock.destroy(); const r = parser.response; resolve({ status: r.status, headers: r.headers, length: r.body.length, sha256: sha256(r.body) }) }
        })
        sock.on('end', () => { try { parser.end(); const r = parser.response; resolve({ status: r.status, headers: r.headers, length: r.body.length, sha256: sha256(r.body) }) } catch (e) { reject(e) } })
        sock.write(http1.writeRequest({ method: a.method, path: a.path, host: `127.0.0.1:${a.port}`, ...(body !== undefined ? { body } : {}) }))
      })
    }
  }

  const rl = createInterface({ input: process.stdin })
  for await (const line of rl) {
    let cmd: { id: number, op: string, args?: unknown }
    try { cmd = JSON.parse(line) } catch { continue }
    if (cmd.op === 'stop') {
      await bitswap.stop()
      await host.stop()
      process.stdout.write(JSON.stringify({ id: cmd.id, ok: true, result: {} }) + '\n')
      process.exit(0)
    }
    const fn = ops[cmd.op]
    Promise.resolve(fn === undefined ? Promise.reject(new Error(`unknown op ${cmd.op}`)) : fn(cmd.args ?? {}))
      .then((result) => { process.stdout.write(JSON.stringify({ id: cmd.id, ok: true, result }) + '\n') })
      .catch((e: unknown) => { process.stdout.write(JSON.stringify({ id: cmd.id, ok: false, error: e instanceof Error ? e.message : String(e) }) + '\n') })
  }
}

// ---------------------------------------------------------------------------------------------
// the test's side

export class KuboBlocksPeer {
  peerId = ''
  multiaddr = ''
  pid = 0
  logs = ''
  private next = 1
  private readonly waiting = new Map<number, { resolve: (v: any) => void, reject: (e: Error) => void }>()

  private constructor (readonly child: ChildProcess, readonly dir: string) {
    const rl = createInterface({ input: child.stdout! })
    rl.on('line', (line) => {
      let m: { id: number, ok: boolean, result?: unknown, error?: string }
      try { m = JSON.parse(line) } catch { this.logs += line + '\n'; return }
      const w = this.waiting.get(m.id)
      if (w === undefined) return
      this.waiting.delete(m.id)
      if (m.ok) w.resolve(m.result)
      else w.reject(new Error(m.error))
    })
    child.stderr?.on('data', (d: Buffer) => { this.logs += d.toString(); if (this.logs.length > 100_000) this.logs = this.logs.slice(-50_000) })
    child.on('exit', (code) => {
      for (const w of this.waiting.values()) w.reject(new Error(`peer process exited (${code}): ${this.logs.slice(-2000)}`))
      this.waiting.clear()
    })
  }

  /** Starts the peer inside `ns` (node flags from KUBO_PEER_NODE_FLAGS, e.g. --cpu-prof). */
  static async start (ns: Netns): Promise<KuboBlocksPeer> {
    const dir = mkdtempSync(join(tmpdir(), 'rbt-kubo-peer-'))
    const flags = (process.env.KUBO_PEER_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')
    const child = ns.spawn(process.execPath, [...flags, SELF], { env: { ...process.env, PEER_DIR: dir }, stdio: ['pipe', 'pipe', 'pipe'], cwd: dir })
    const p = new KuboBlocksPeer(child, dir)
    const info = await p.call<{ peerId: string, multiaddrs: string[], pid: number }>('info', {}, 30_000)
    p.peerId = info.peerId
    p.multiaddr = info.multiaddrs[0]
    p.pid = info.pid
    return p
  }

  async call<T = any> (op: string, args: unknown = {}, timeoutMs = 120_000): Promise<T> {
    const id = this.next++
    return await new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => { this.waiting.delete(id); reject(new Error(`peer ${op} took over ${timeoutMs} ms`)) }, timeoutMs)
      this.waiting.set(id, { resolve: (v) => { clearTimeout(timer); resolve(v) }, reject: (e) => { clearTimeout(timer); reject(e) } })
      this.child.stdin!.write(JSON.stringify({ id, op, args }) + '\n')
    })
  }

  async stop (): Promise<void> {
    if (this.child.exitCode === null && this.child.signalCode === null) {
      const exited = new Promise<void>((resolve) => this.child.once('exit', () => { resolve() }))
      await this.call('stop', {}, 10_000).catch(() => { this.child.kill('SIGKILL') })
      await exited
    }
    rmSync(this.dir, { recursive: true, force: true })
  }
}

export function readBytes (path: string): Buffer { return readFileSync(path) }

if (process.argv[1] !== undefined && pathToFileURL(process.argv[1]).href === import.meta.url) {
  main().catch((e: unknown) => { process.stderr.write(`${e instanceof Error ? e.stack ?? e.message : String(e)}\n`); process.exit(1) })
}
