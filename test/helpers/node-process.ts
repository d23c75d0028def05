import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { RbtClient } from '../../src/client/rbt-client.js'
import { undiciTransport } from '../../src/client/undici-transport.js'
import { BIN, ROOT, childEnv } from './cli.js'
import type { Netns } from './netns.js'
import { freePort } from './ports.js'
import { waitFor } from './wait.js'

export interface NodeProcessOptions {
  /** working dir (-p); a fresh temp dir when absent */
  dir?: string
  n?: number
  apiPort?: number
  swarmPort?: number
  extraArgs?: string[]
  env?: Record<string, string>
  /** cwd of the process (where -testNetKey is resolved) */
  cwd?: string
  /**
   * Run inside this network namespace, with mDNS discovery on (every 1 s unless env says
   * otherwise; `-mdns=false` in extraArgs turns it off). Without it the node runs in the test's
   * own namespace and always with `-mdns=false`: discovery sends multicast, allowed only inside a
   * namespace the test made.
   */
  netns?: Netns
  /**
   * The script run in place of the package's bin (`<entry> run -p … -n … -port …`, the same
   * arguments): the cheating owner's node of test/helpers/attacker/cheating-node.ts
   */
  entry?: string
  /** how long start() waits for the core (default 20 s; large networks on two cores start slower) */
  startTimeoutMs?: number
  /**
   * How start() decides the node is ready: `svc` (default) waits for `GET /svc/v1/node/status`
   * to report the core started; `api` polls the reference's `GET /api/getalldid` until it
   * answers 200, as a script written for the reference does, and reads the peer id from
   * `GET /api/get-peer-id`.
   */
  readiness?: 'svc' | 'api'
  /**
   * The address the swarm listens on and `multiaddr` names (default 127.0.0.1): a LAN member's
   * address (netns.ts createLan) for a node in its own namespace that other namespaces dial.
   */
  swarmHost?: string
}

/**
 * A node that ended during its start: its exit code (docs/operations.md, "When a start fails": 75
 * starting again may help, 78 the operator must act, 70 an unforeseen error) or the signal, and
 * what this start wrote (stdout and stderr); the message is the first line then that output.
 */
export class NodeExitedError extends Error {
  constructor (readonly exitCode: number | null, readonly signal: NodeJS.Signals | null, readonly output: string) {
    super(`node exited during start (${signal ?? `exit code ${String(exitCode)}`}):\n${output}`)
    this.name = 'NodeExitedError'
  }

  /** The last `n` lines this start wrote. */
  lastLines (n: number): string[] { return this.output.trimEnd().split('\n').slice(-n) }
}

/** The API bridge run inside a namespace (see ns-bridge.ts). */
const BRIDGE = fileURLToPath(new URL('./ns-bridge.js', import.meta.url))

/** A `-mdns` argument that turns discovery on (a bare flag or a true value). */
const MDNS_ON = /^--?mdns(=(true|t|1))?$/i
const MDNS_ANY = /^--?(no-)?mdns(=|$)/i

/**
 * A real `rbtnode run` process on 127.0.0.1 with its own temp data dir and free ports.
 * Logs are kept in memory for failure reports. With `netns` the process runs inside that namespace
 * and the test reaches its API through a unix socket in the data dir (`socketPath`); `url`,
 * `multiaddr` and `cliArgs` then name addresses as seen inside the namespace (use them with
 * `runCli(args, { netns })` or from other nodes of the same namespace).
 */
export class NodeProcess {
  readonly dir: string
  apiPort = 0
  swarmPort = 0
  peerId = ''
  logs = ''
  child?: ChildProcess
  private exited?: Promise<number | null>
  private _client?: RbtClient
  private readonly ownsDir: boolean
  private bridge?: ChildProcess

  constructor (readonly opts: NodeProcessOptions = {}) {
    this.ownsDir = opts.dir === undefined
    this.dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'rbtnode-e2e-'))
  }

  get url (): string { return `http://127.0.0.1:${this.apiPort}` }
  get multiaddr (): string { return `/ip4/${this.opts.swarmHost ?? '127.0.0.1'}/tcp/${this.swarmPort}/p2p/${this.peerId}` }
  get netns (): Netns | undefined { return this.opts.netns }
  /** Unix socket bridged to the API inside the namespace (netns nodes only). */
  get socketPath (): string | undefined { return this.opts.netns !== undefined ? join(this.dir, 'api.sock') : undefined }
  get client (): RbtClient {
    const socketPath = this.socketPath
    // a node started with -apiAuth: its token, once written; the client is made again after it appears
    const token = this.apiToken()
    if (this._client !== undefined && token !== this.clientToken) { void this._client.close().catch(() => {}); this._client = undefined }
    this.clientToken = token
    this._client ??= new RbtClient({ baseUrl: this.url, transport: undiciTransport(this.url, 8, socketPath !== undefined ? { socketPath } : {}), token })
    return this._client
  }

  private clientToken: string | undefined
  /** The token in <dir>/api.cookie (nodes started with -apiAuth), if any. */
  apiToken (): string | undefined {
    try { return readFileSync(join(this.dir, 'api.cookie'), 'utf8').trim() } catch { return undefined }
  }

  /** CLI connection flags for this node. */
  get cliArgs (): string[] { return ['-addr', '127.0.0.1', '-port', String(this.apiPort)] }

  async start (): Promise<this> {
    if (this.apiPort === 0) this.apiPort = this.opts.apiPort ?? await freePort()
    if (this.swarmPort === 0) this.swarmPort = this.opts.swarmPort ?? await freePort()
    const ns = this.opts.netns
    const extra = this.opts.extraArgs ?? []
    if (ns === undefined && extra.some((a) => MDNS_ON.test(a))) throw new Error('mDNS sends multicast: a node with -mdns on must run inside a network namespace (netns option)')
    // E2E_NODE_FLAGS: node options for every spawned node (e.g. `--cpu-prof --cpu-prof-dir=…` to profile a bench)
    const nodeFlags = (process.env.E2E_NODE_FLAGS ?? '').split(' ').filter((f) => f !== '')
    const args = [...nodeFlags, this.opts.entry ?? BIN, 'run', '-p', this.dir, '-n', String(this.opts.n ?? 0), '-port', String(this.apiPort), '-swarmPort', String(this.swarmPort), ...(this.opts.swarmHost !== undefined ? ['-swarmHost', this.opts.swarmHost] : []), ...extra, ...(ns === undefined && !extra.some((a) => MDNS_ANY.test(a)) ? ['-mdns=false'] : [])]
    const childEnvVars = childEnv({
      RBTNODE_GOSSIP_HEARTBEAT_MS: process.env.E2E_GOSSIP_HEARTBEAT_MS ?? '100',
      ...(ns !== undefined ? { RBTNODE_MDNS: '1', RBTNODE_MDNS_INTERVAL_MS: '1000' } : {}),
      ...this.opts.env,
      ...(ns === undefined ? { RBTNODE_MDNS: '0' } : {})
    })
    const spawnOpts = { cwd: this.opts.cwd ?? ROOT, env: childEnvVars, stdio: ['ignore', 'pipe', 'pipe'] as Array<'ignore' | 'pipe'> }
    if (ns !== undefined) await this.startBridge(ns)
    const child = ns !== undefined ? ns.spawn(process.execPath, args, spawnOpts) : spawn(process.execPath, args, spawnOpts)
    this.child = child
    // this start's own lines begin here (logs keeps every start's, in order)
    const logsFrom = this.logs.length
    child.stdout?.on('data', (d: Buffer) => { this.logs += d.toString() })
    child.stderr?.on('data', (d: Buffer) => { this.logs += d.toString() })
    this.exited = new Promise((resolve) => { child.on('exit', (code) => { resolve(code) }) })
    let exitedEarly = false
    void this.exited.then(() => { exitedEarly = true })
    const legacy = this.opts.readiness === 'api'
    const up = await waitFor(async () => {
      // an exit ends the wait at once (a check that throws would be polled again until the deadline)
      if (exitedEarly) return 'exited' as const
      if (legacy) return (await fetch(`${this.url}/api/getalldid`).catch(() => undefined))?.status === 200
      const env = await this.client.call('nodeStatus')
      return env.result?.core_started === true ? env.result : undefined
    }, { timeoutMs: this.opts.startTimeoutMs ?? 20_000, what: `node on port ${this.apiPort} to start`, intervalMs: 30 }).catch(async (e) => {
      // a node that did not come up in time is not left running behind the caller's back (nor is a
      // later start's process killed: only this start's child)
      if (this.child === child) await this.kill()
      throw new Error(`${(e as Error).message}\n--- logs ---\n${this.logs}`)
    })
    if (up === 'exited') throw new NodeExitedError(child.exitCode, child.signalCode, this.logs.slice(logsFrom))
    if (legacy) {
      this.peerId = ((await (await fetch(`${this.url}/api/get-peer-id`)).json()) as { message: string }).message
    } else {
      const env = await this.client.call('nodePeerId')
      this.peerId = env.result ?? ''
    }
    return this
  }

  /** Starts the API bridge inside the namespace once; it outlives restarts (same API port). */
  private async startBridge (ns: Netns): Promise<void> {
    if (this.bridge !== undefined && this.bridge.exitCode === null && this.bridge.signalCode === null) return
    const bridge = ns.spawn(process.execPath, [BRIDGE, this.socketPath!, String(this.apiPort)], { env: childEnv(), stdio: ['pipe', 'pipe', 'pipe'] })
    this.bridge = bridge
    let out = ''
    await new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => { reject(new Error(`API bridge in ${ns.name} did not start: ${out}`)) }, 10_000)
      const onData = (d: Buffer): void => {
        out += d.toString()
        if (out.includes('ready\n')) { clearTimeout(timer); bridge.stdout?.off('data', onData); resolve() }
      }
      bridge.stdout?.on('data', onData)
      bridge.stderr?.on('data', (d: Buffer) => { out += d.toString() })
      bridge.on('exit', (code) => { clearTimeout(timer); reject(new Error(`API bridge in ${ns.name} exited (${String(code)}): ${out}`)) })
    })
  }

  private async stopBridge (): Promise<void> {
    const b = this.bridge
    this.bridge = undefined
    if (b === undefined || b.exitCode !== null || b.signalCode !== null) return
    await new Promise<void>((resolve) => { b.once('exit', () => { resolve() }); b.kill('SIGTERM') })
  }

  get running (): boolean { return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null }

  /** Graceful stop (SIGTERM) and wait for exit. */
  async stop (): Promise<number | null> {
    if (this.child === undefined || !this.running) return this.child?.exitCode ?? null as number | null
    this.child.kill('SIGTERM')
    // a node that does not finish its graceful stop in 20 s is killed, so no suite waits on it forever
    let timer: NodeJS.Timeout | undefined
    const late = await Promise.race([(this.exited ?? Promise.resolve(null)).then(() => false), new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(true) }, 20_000) })])
    clearTimeout(timer)
    if (late) this.child.kill('SIGKILL')
    const code = await this.exited
    await this.resetClient()
    return code ?? null
  }

  /** Hard kill (SIGKILL), as a crash. */
  async kill (): Promise<void> {
    if (this.child === undefined || !this.running) return
    this.child.kill('SIGKILL')
    await this.exited
    await this.resetClient()
  }

  async waitExit (): Promise<number | null> { return await (this.exited ?? Promise.resolve(null)) }

  private async resetClient (): Promise<void> {
    const c = this._client
    this._client = undefined
    await c?.close().catch(() => {})
  }

  async restart (): Promise<this> {
    await this.stop()
    return await this.start()
  }

  /** Stops the process and removes its temp dir. */
  async dispose (): Promise<void> {
    await this.stop().catch(() => {})
    if (this.running) await this.kill()
    await this.stopBridge().catch(() => {})
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true })
  }
}

export async function startNodes (count: number, opts: (i: number) => NodeProcessOptions = () => ({})): Promise<NodeProcess[]> {
  return await Promise.all(Array.from({ length: count }, async (_, i) => await new NodeProcess({ n: i, ...opts(i) }).start()))
}
