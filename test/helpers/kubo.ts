/**
 * Kubo daemons for the interop suites, configured as a reference Rubix node configures its own
 * (swarm key copied into the repo, LIBP2P_FORCE_PNET=1, stream mounting on, the pubsub experiment
 * on, the bootstrap list emptied and then set) plus what a loopback network needs (DHT server mode,
 * ports of its own, mDNS, AutoNAT, relays and the resource manager off). Each daemon runs inside a
 * network namespace the test made, where the rbtnode nodes of the suite run too (with -mdns=false).
 *
 *   before(async function () { await requireKubo(this) })        // skips, saying why, or fails on CI
 *   const ns = await createNetns('kubo')
 *   const k = await new KuboDaemon({ netns: ns, swarmKey: path }).start()
 *   await k.ipfs(['swarm', 'connect', node.multiaddr])
 *   await k.stop(); await ns.dispose()
 *
 * The binary: RBTNODE_KUBO_BIN, else `ipfs` on PATH, else $(go env GOPATH)/bin/ipfs. `.ci/run`
 * builds Kubo from the Go module proxy into a cache and exports RBTNODE_KUBO_BIN. It does not wait
 * for that build before the tests: while it runs, RBTNODE_KUBO_BUILDING names a file that exists
 * until the build ends (holding why, when it failed), and a suite's `before` waits for it.
 */
import { execFile, execFileSync, type ChildProcess } from 'node:child_process'
import { accessSync, constants, copyFileSync, existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { delimiter, join } from 'node:path'
import { promisify } from 'node:util'
import { netnsAvailability, type Netns } from './netns.js'
import { freePort } from './ports.js'
import { waitFor } from './wait.js'

const execFileP = promisify(execFile)

/** The Kubo release the suites are written against (the last one with `ipfs dht findprovs`). */
export const KUBO_VERSION = '0.26.0'

function executable (path: string): boolean {
  try {
    accessSync(path, constants.X_OK)
    return true
  } catch {
    return false
  }
}

let found: { bin?: string, reason: string } | undefined

/** Where the `ipfs` binary is, or why there is none (looked up once). */
export function findKubo (): { bin?: string, reason: string } {
  if (found !== undefined) return found
  const env = process.env.RBTNODE_KUBO_BIN
  if (env !== undefined && env !== '') {
    found = executable(env) ? { bin: env, reason: '' } : { reason: `RBTNODE_KUBO_BIN=${env} is not an executable file` }
    return found
  }
  for (const dir of (process.env.PATH ?? '').split(delimiter)) {
    if (dir !== '' && executable(join(dir, 'ipfs'))) {
      found = { bin: join(dir, 'ipfs'), reason: '' }
      return found
    }
  }
  try {
    const gopath = execFileSync('go', ['env', 'GOPATH'], { encoding: 'utf8', timeout: 10_000, stdio: ['ignore', 'pipe', 'ignore'] }).trim()
    for (const dir of gopath.split(delimiter)) {
      const p = join(dir, 'bin', 'ipfs')
      if (dir !== '' && executable(p)) {
        found = { bin: p, reason: '' }
        return found
      }
    }
    found = { reason: `no Kubo binary: RBTNODE_KUBO_BIN is unset, no ipfs on PATH nor in ${gopath}/bin (go install github.com/ipfs/kubo/cmd/ipfs@v${KUBO_VERSION})` }
  } catch {
    found = { reason: 'no Kubo binary: RBTNODE_KUBO_BIN is unset, no ipfs on PATH, and Go is not installed' }
  }
  return found
}

/** How long a suite waits for a Kubo build still running beside the tests (a cold Go cache). */
const KUBO_BUILD_WAIT_MS = 20 * 60_000

/**
 * Waits while a Kubo build started beside the tests is running (RBTNODE_KUBO_BUILDING names a file
 * that exists until it ends). A build that failed leaves `<file>.failed` holding why: the answer is
 * that reason, and the suites skip as they do without Go. Undefined when there is nothing to wait
 * for or the build succeeded.
 */
async function kuboBuildDone (ctx: Mocha.Context): Promise<string | undefined> {
  const marker = process.env.RBTNODE_KUBO_BUILDING ?? ''
  if (marker === '') return undefined
  if (existsSync(marker)) {
    ctx.timeout(KUBO_BUILD_WAIT_MS + 60_000)
    console.log('      (waiting for the Kubo build running beside the tests)')
    await waitFor(() => !existsSync(marker), { timeoutMs: KUBO_BUILD_WAIT_MS, intervalMs: 500, what: 'the Kubo build beside the tests to end' })
    found = undefined
  }
  try { return `Kubo v${KUBO_VERSION} did not build: ${readFileSync(`${marker}.failed`, 'utf8').trim()}` } catch { return undefined }
}

/**
 * For a suite's `before`: skips it (printing the reason) without a Kubo binary or without network
 * namespaces. On CI (`CI` set) a missing namespace fails the suite, as every namespace suite does;
 * a missing Kubo fails it only when RBTNODE_KUBO_BIN was given (CI could build Kubo) but is wrong.
 * A build still running beside the tests is waited for; one that failed skips the suite.
 */
export async function requireKubo (ctx: Mocha.Context): Promise<string> {
  const failed = await kuboBuildDone(ctx)
  if (failed !== undefined) {
    console.log(`      (skipped: ${failed})`)
    ctx.skip()
  }
  const k = findKubo()
  const onCi = process.env.CI !== undefined && process.env.CI !== ''
  if (k.bin === undefined) {
    if (onCi && (process.env.RBTNODE_KUBO_BIN ?? '') !== '') throw new Error(`Kubo interop suite: ${k.reason}`)
    console.log(`      (skipped: ${k.reason})`)
    ctx.skip()
  }
  const ns = await netnsAvailability()
  if (!ns.ok) {
    if (onCi) throw new Error(`the Kubo interop suite needs a network namespace and CI must run it, but ${ns.reason}`)
    console.log(`      (skipped: the Kubo interop suite runs its daemons in a network namespace, but ${ns.reason})`)
    ctx.skip()
  }
  return k.bin as string
}

export interface KuboOptions {
  /** the namespace the daemon runs in (rbtnode nodes of the test run there too) */
  netns: Netns
  /** the address the swarm, API and gateway listen on (default 127.0.0.1) */
  host?: string
  /** a PSK v1 swarm key file, copied into the repo as `swarm.key` */
  swarmKey: string
  /** multiaddrs with /p2p/ set as the bootstrap list after emptying it (default: none) */
  bootstrap?: string[]
  /** extra `ipfs config --json <key> <value>` settings, applied after the defaults */
  config?: Record<string, unknown>
  /** the `ipfs` binary (default: findKubo()) */
  bin?: string
  /** how long start() waits for the daemon (default 60 s: two busy cores) */
  startTimeoutMs?: number
}

/** One Kubo daemon with a repo of its own in a temp dir. */
export class KuboDaemon {
  readonly repo: string
  readonly bin: string
  peerId = ''
  swarmPort = 0
  apiPort = 0
  gatewayPort = 0
  logs = ''
  private child?: ChildProcess
  private exited?: Promise<void>

  constructor (readonly opts: KuboOptions) {
    const bin = opts.bin ?? findKubo().bin
    if (bin === undefined) throw new Error(findKubo().reason)
    this.bin = bin
    this.repo = mkdtempSync(join(tmpdir(), 'rbt-kubo-'))
  }

  /** The swarm address inside the namespace, with /p2p/. */
  get multiaddr (): string { return `/ip4/${this.host}/tcp/${this.swarmPort}/p2p/${this.peerId}` }

  get host (): string { return this.opts.host ?? '127.0.0.1' }

  private get env (): NodeJS.ProcessEnv {
    return { ...process.env, IPFS_PATH: this.repo, LIBP2P_FORCE_PNET: '1', GOLOG_LOG_LEVEL: process.env.GOLOG_LOG_LEVEL ?? 'error' }
  }

  /**
   * Runs `ipfs <args>` against this daemon's repo inside the namespace and returns its stdout;
   * rejects with its stderr on a non-zero exit or after `timeoutMs` (default 30 s).
   */
  async ipfs (args: string[], opts: { timeoutMs?: number } = {}): Promise<string> {
    try {
      const { stdout } = await execFileP('ip', this.opts.netns.execArgs(this.bin, args), {
        env: this.env, timeout: opts.timeoutMs ?? 30_000, maxBuffer: 64 * 1024 * 1024, encoding: 'utf8'
      })
      return stdout
    } catch (e) {
      const err = e as Error & { stderr?: string }
      throw new Error(`ipfs ${args.join(' ')} failed: ${(err.stderr ?? '').trim() || err.message}`)
    }
  }

  /** `ipfs init`, then the reference's settings and the loopback ones. */
  async init (): Promise<void> {
    this.swarmPort = await freePort()
    this.apiPort = await freePort()
    this.gatewayPort = await freePort()
    await this.ipfs(['init', '--empty-repo'], { timeoutMs: 60_000 })
    copyFileSync(this.opts.swarmKey, join(this.repo, 'swarm.key'))
    const settings: Record<string, unknown> = {
      'Addresses.Swarm': [`/ip4/${this.host}/tcp/${this.swarmPort}`],
      'Addresses.API': `/ip4/${this.host}/tcp/${this.apiPort}`,
      'Addresses.Gateway': `/ip4/${this.host}/tcp/${this.gatewayPort}`,
      'Addresses.Announce': [],
      'Addresses.NoAnnounce': [],
      'Experimental.Libp2pStreamMounting': true,
      'Routing.Type': 'dhtserver',
      'Discovery.MDNS.Enabled': false,
      'AutoNAT.ServiceMode': 'disabled',
      'Swarm.RelayClient.Enabled': false,
      'Swarm.RelayService.Enabled': false,
      'Swarm.Transports.Network.Relay': false,
      'Swarm.ResourceMgr.Enabled': false,
      // loopback peers are all one address: the connection manager must not trim them mid-test
      'Swarm.ConnMgr.Type': 'none',
      ...this.opts.config
    }
    for (const [key, value] of Object.entries(settings)) {
      await this.ipfs(['config', '--json', key, JSON.stringify(value)])
    }
    await this.ipfs(['bootstrap', 'rm', '--all'])
    if ((this.opts.bootstrap ?? []).length > 0) await this.ipfs(['bootstrap', 'add', ...(this.opts.bootstrap ?? [])])
    this.peerId = (await this.ipfs(['config', 'Identity.PeerID'])).trim()
  }

  /** Inits the repo (first time) and runs `ipfs daemon --enable-pubsub-experiment` until it says it is ready. */
  async start (): Promise<this> {
    if (this.peerId === '') await this.init()
    const child = this.opts.netns.spawn(this.bin, ['daemon', '--enable-pubsub-experiment'], { env: this.env, stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    this.exited = new Promise((resolve) => { child.once('exit', () => { resolve() }) })
    let ready = false
    const take = (b: Buffer): void => {
      this.logs += b.toString()
      if (this.logs.length > 200_000) this.logs = this.logs.slice(-100_000)
      if (!ready && this.logs.includes('Daemon is ready')) ready = true
    }
    child.stdout?.on('data', take)
    child.stderr?.on('data', take)
    try {
      await waitFor(() => {
        if (child.exitCode !== null || child.signalCode !== null) throw new Error(`ipfs daemon exited (${child.exitCode ?? child.signalCode})`)
        return ready
      }, { timeoutMs: this.opts.startTimeoutMs ?? 60_000, what: `Kubo daemon ${this.peerId} ready`, intervalMs: 50 })
    } catch (e) {
      await this.stop({ keepRepo: true })
      throw new Error(`${(e as Error).message}\n--- ipfs daemon output ---\n${this.logs.slice(-4000)}`)
    }
    return this
  }

  /** The peers `ipfs swarm peers` lists, by peer id. */
  async swarmPeers (): Promise<string[]> {
    const out = await this.ipfs(['swarm', 'peers'])
    return out.split('\n').map((l) => /\/p2p\/([^/\s]+)\s*$/.exec(l.trim())?.[1]).filter((p): p is string => p !== undefined)
  }

  /** Stops the daemon (SIGTERM, then SIGKILL after 10 s) and removes its repo unless asked not to. */
  async stop (opts: { keepRepo?: boolean } = {}): Promise<void> {
    const child = this.child
    this.child = undefined
    if (child !== undefined && child.exitCode === null && child.signalCode === null) {
      child.kill('SIGTERM')
      const killer = setTimeout(() => { child.kill('SIGKILL') }, 10_000)
      await this.exited
      clearTimeout(killer)
    }
    if (opts.keepRepo !== true) rmSync(this.repo, { recursive: true, force: true })
  }
}

/**
 * Gives a namespace an address the DHTs take for public (`ip`/32 on its loopback), so that Kubo's
 * WAN DHT, which keeps only peers with a public address, has peers. The namespace has no link
 * outside: nothing sent to the address leaves it.
 */
export async function addPublicAddress (ns: Netns, ip: string): Promise<void> {
  await execFileP('ip', ['-n', ns.name, 'addr', 'add', `${ip}/32`, 'dev', 'lo'], { timeout: 10_000 })
}

/** A running `ipfs pubsub sub`: the messages it printed so far, decoded. */
export interface KuboSubscription {
  messages: Array<{ from: string, data: Uint8Array }>
  stop: () => void
}

/** Multibase base64url (`u` prefix, no padding), as Kubo's `--enc=json` writes bytes. */
function multibase (text: string): Uint8Array {
  if (!text.startsWith('u')) throw new Error(`not multibase base64url: ${text.slice(0, 20)}`)
  return new Uint8Array(Buffer.from(text.slice(1), 'base64url'))
}

/** Runs `ipfs pubsub sub --enc=json <topic>` against the daemon until stop() (or the daemon ends). */
export function kuboSubscribe (k: KuboDaemon, topic: string): KuboSubscription {
  const child = k.opts.netns.spawn(k.bin, ['pubsub', 'sub', '--enc=json', topic], { env: { ...process.env, IPFS_PATH: k.repo }, stdio: ['ignore', 'pipe', 'pipe'] })
  const sub: KuboSubscription = { messages: [], stop: () => { child.kill('SIGTERM') } }
  let buf = ''
  child.stdout?.on('data', (b: Buffer) => {
    buf += b.toString()
    let nl: number
    while ((nl = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, nl).trim()
      buf = buf.slice(nl + 1)
      if (line === '') continue
      try {
        const m = JSON.parse(line) as { from: string, data: string }
        sub.messages.push({ from: m.from, data: multibase(m.data) })
      } catch {}
    }
  })
  return sub
}
