/**
 * One node of a local test network as a child process: `rbtnode run` on loopback with discovery
 * off, its data dir and log file in the network's directory.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { closeSync, openSync, readFileSync, statSync } from 'node:fs'
import { join } from 'node:path'
import { RbtClient } from '../client/rbt-client.js'
import { findPackageRoot } from '../util/package-root.js'
import { waitUntil } from '../util/wait-until.js'

/** The package's executable, bin/run.js (found from the compiled tree and from the bundle alike). */
export function rbtnodeBin (): string { return join(findPackageRoot(), 'bin', 'run.js') }

export type NodeRole = 'quorum' | 'user'

/** What is kept of a node in the network's state file. */
export interface LocalNodeSpec {
  name: string
  role: NodeRole
  /** node number (-n) */
  index: number
  /** working directory (-p), absolute */
  dir: string
  apiPort: number
  swarmPort: number
}

export interface LocalNodeStart {
  swarmKeyPath: string
  /** the test network's faucet node */
  faucet?: boolean
  env?: Record<string, string>
  startTimeoutMs?: number
}

export class LocalNode {
  peerId = ''
  child?: ChildProcess
  private exitedP?: Promise<number | null>
  private stopping = false
  readonly client: RbtClient

  constructor (readonly spec: LocalNodeSpec) {
    this.client = new RbtClient({ baseUrl: this.url })
  }

  get url (): string { return `http://127.0.0.1:${this.spec.apiPort}` }
  get multiaddr (): string { return `/ip4/127.0.0.1/tcp/${this.spec.swarmPort}/p2p/${this.peerId}` }
  get logPath (): string { return join(this.spec.dir, 'node.log') }
  get pid (): number | undefined { return this.child?.pid }
  get running (): boolean { return this.child !== undefined && this.child.exitCode === null && this.child.signalCode === null }

  /**
   * Spawns the process (in its own process group: a Ctrl-C at the terminal reaches the supervisor,
   * which stops every node once) and waits until its core is up. `onExit` hears of an exit that no
   * stop() asked for.
   */
  async start (opts: LocalNodeStart, onExit?: (code: number | null, signal: string | null) => void): Promise<this> {
    const s = this.spec
    const args = [rbtnodeBin(), 'run', '-p', s.dir, '-n', String(s.index), '-port', String(s.apiPort), '-swarmPort', String(s.swarmPort),
      '-testNet', '-testNetKey', opts.swarmKeyPath, '-mdns=false', ...(opts.faucet === true ? ['-faucet'] : [])]
    const log = openSync(this.logPath, 'a')
    const env: NodeJS.ProcessEnv = { ...process.env, RBTNODE_MDNS: '0', ...opts.env }
    const child = spawn(process.execPath, args, { cwd: s.dir, env, stdio: ['ignore', log, log], detached: true })
    closeSync(log)
    this.child = child
    this.stopping = false
    this.exitedP = new Promise((resolve) => {
      child.on('exit', (code, signal) => {
        resolve(code)
        if (!this.stopping) onExit?.(code, signal)
      })
    })
    let exited = false
    void this.exitedP.then(() => { exited = true })
    let why: string | undefined
    try {
      const how = await waitUntil(async () => {
        if (exited) return 'exited'
        const env = await this.client.envelope('nodeStatus')
        return env.result?.core_started === true ? 'up' : false
      }, { timeoutMs: opts.startTimeoutMs ?? 60_000, intervalMs: 30, what: `${s.name} to start` })
      if (how === 'exited') why = `${s.name} exited during start`
    } catch (e) {
      why = (e as Error).message
    }
    if (why !== undefined) {
      await this.kill()
      throw new Error(`${why}; the last lines of ${this.logPath}:\n${this.logTail(20)}`)
    }
    this.peerId = (await this.client.call('nodePeerId')).result ?? ''
    return this
  }

  /** The last `lines` lines of the node's log file. */
  logTail (lines = 20): string {
    try {
      const size = statSync(this.logPath).size
      const text = readFileSync(this.logPath, 'utf8').slice(Math.max(0, size - 64 * 1024))
      return text.trimEnd().split('\n').slice(-lines).join('\n')
    } catch {
      return '(no log)'
    }
  }

  /** Graceful stop (SIGTERM); killed after `graceMs`. */
  async stop (graceMs = 20_000): Promise<void> {
    this.stopping = true
    if (!this.running) return
    this.child!.kill('SIGTERM')
    let timer: NodeJS.Timeout | undefined
    const late = await Promise.race([this.exitedP!.then(() => false), new Promise<boolean>((resolve) => { timer = setTimeout(() => { resolve(true) }, graceMs) })])
    clearTimeout(timer)
    if (late) await this.kill()
  }

  async kill (): Promise<void> {
    this.stopping = true
    if (!this.running) return
    this.child!.kill('SIGKILL')
    await this.exitedP
  }

  async close (): Promise<void> {
    await this.stop()
    await this.client.close().catch(() => {})
  }
}
