import { spawn, type ChildProcess } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { RbtClient } from '../../src/client/rbt-client.js'
import { undiciTransport } from '../../src/client/undici-transport.js'
import { BIN, ROOT, childEnv } from './cli.js'
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
}

/**
 * A real `rbtnode run` process on 127.0.0.1 with its own temp data dir and free ports.
 * Logs are kept in memory for failure reports.
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

  constructor (readonly opts: NodeProcessOptions = {}) {
    this.ownsDir = opts.dir === undefined
    this.dir = opts.dir ?? mkdtempSync(join(tmpdir(), 'rbtnode-e2e-'))
  }

  get url (): string { return `http://127.0.0.1:${this.apiPort}` }
  get multiaddr (): string { return `/ip4/127.0.0.1/tcp/${this.swarmPort}/p2p/${this.peerId}` }
  get client (): RbtClient {
    this._client ??= new RbtClient({ baseUrl: this.url, transport: undiciTransport(this.url, 8) })
    return this._client
  }

  /** CLI connection flags for this node. */
  get cliArgs (): string[] { return ['-addr', '127.0.0.1', '-port', String(this.apiPort)] }

  async start (): Promise<this> {
    if (this.apiPort === 0) this.apiPort = this.opts.apiPort ?? await freePort()
    if (this.swarmPort === 0) this.swarmPort = this.opts.swarmPort ?? await freePort()
    const args = [BIN, 'run', '-p', this.dir, '-n', String(this.opts.n ?? 0), '-port', String(this.apiPort), '-swarmPort', String(this.swarmPort), ...(this.opts.extraArgs ?? [])]
    const child = spawn(process.execPath, args, { cwd: this.opts.cwd ?? ROOT, env: childEnv({ RBTNODE_GOSSIP_HEARTBEAT_MS: process.env.E2E_GOSSIP_HEARTBEAT_MS ?? '100', ...this.opts.env }), stdio: ['ignore', 'pipe', 'pipe'] })
    this.child = child
    child.stdout?.on('data', (d: Buffer) => { this.logs += d.toString() })
    child.stderr?.on('data', (d: Buffer) => { this.logs += d.toString() })
    this.exited = new Promise((resolve) => { child.on('exit', (code) => { resolve(code) }) })
    let exitedEarly = false
    void this.exited.then(() => { exitedEarly = true })
    await waitFor(async () => {
      if (exitedEarly) throw new Error(`node exited during start:\n${this.logs}`)
      const env = await this.client.call('nodeStatus')
      return env.result?.core_started === true ? env.result : undefined
    }, { timeoutMs: 20_000, what: `node on port ${this.apiPort} to start`, intervalMs: 30 }).catch((e) => {
      throw new Error(`${(e as Error).message}\n--- logs ---\n${this.logs}`)
    })
    const env = await this.client.call('nodePeerId')
    this.peerId = env.result ?? ''
    return this
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
    if (this.ownsDir) rmSync(this.dir, { recursive: true, force: true })
  }
}

export async function startNodes (count: number, opts: (i: number) => NodeProcessOptions = () => ({})): Promise<NodeProcess[]> {
  return await Promise.all(Array.from({ length: count }, async (_, i) => await new NodeProcess({ n: i, ...opts(i) }).start()))
}
