import { spawn, type ChildProcess } from 'node:child_process'
import { createServer } from 'node:net'
import { BIN, childEnv } from './cli.js'
import { waitFor } from './wait.js'
import type { TestnetSummary } from '../../src/testnet/testnet.js'

/** A base port whose API ports (base..base+n-1) and swarm ports (base+500..) are free now. */
export async function freeBasePort (nodes: number): Promise<number> {
  const free = async (port: number): Promise<boolean> => await new Promise((resolve) => {
    const s = createServer()
    s.once('error', () => { resolve(false) })
    s.listen(port, '127.0.0.1', () => { s.close(() => { resolve(true) }) })
  })
  for (let i = 0; i < 50; i++) {
    // below the ephemeral range (Linux: from 32768), where the nodes' own outgoing connections
    // could take a port before the node that owns it listens
    const base = 20_000 + Math.floor(Math.random() * 12_000)
    let ok = true
    for (let j = 0; j < nodes && ok; j++) ok = await free(base + j) && await free(base + 500 + j)
    if (ok) return base
  }
  throw new Error('no free port range for a test network')
}

/**
 * `rbtnode testnet … --json` as a child process (the command line a user types, with the binary
 * given as `bin`): `ready` resolves with the printed JSON document.
 */
export class TestnetProcess {
  stdout = ''
  stderr = ''
  readonly child: ChildProcess
  readonly exited: Promise<number | null>

  constructor (args: string[], opts: { cwd?: string, command?: string[], env?: Record<string, string> } = {}) {
    const [cmd, ...pre] = opts.command ?? [process.execPath, BIN]
    // a process group of its own, signalled whole as a terminal's Ctrl-C does: a wrapper such as
    // `npx` does not pass SIGTERM on, and left `rbtnode testnet` and its nodes running
    this.child = spawn(cmd, [...pre, 'testnet', ...args, '--json'], { cwd: opts.cwd, env: childEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'], detached: true })
    this.child.stdout?.on('data', (d: Buffer) => { this.stdout += d.toString() })
    this.child.stderr?.on('data', (d: Buffer) => { this.stderr += d.toString() })
    this.exited = new Promise((resolve) => { this.child.on('exit', (code) => { resolve(code) }) })
  }

  get running (): boolean { return this.child.exitCode === null && this.child.signalCode === null }

  /** The JSON document once printed (the network is set up or started again). */
  async ready (timeoutMs = 120_000): Promise<TestnetSummary & { restarted: boolean }> {
    const doc = await waitFor(() => {
      if (!this.running) throw new Error(`rbtnode testnet exited (${String(this.child.exitCode)}):\n${this.stderr}`)
      try { return JSON.parse(this.stdout) as { status: boolean, result: TestnetSummary } } catch { return undefined }
    }, { timeoutMs, intervalMs: 50, what: 'rbtnode testnet to print its table' }).catch((e: Error) => { throw new Error(`${e.message}\n--- stderr ---\n${this.stderr}`) })
    return doc.result as TestnetSummary & { restarted: boolean }
  }

  /** SIGTERM to the whole group, as Ctrl-C does; resolves with the exit code once every process of the group has ended. */
  async stop (): Promise<number | null> {
    const group = -(this.child.pid ?? 0)
    const alive = (): boolean => { try { process.kill(group, 0); return true } catch { return false } }
    if (this.child.pid !== undefined && alive()) process.kill(group, 'SIGTERM')
    const code = await this.exited
    if (this.child.pid !== undefined) await waitFor(() => !alive(), { timeoutMs: 60_000, intervalMs: 100, what: 'every process of rbtnode testnet to end' })
    return code
  }
}

/** The words of a printed command with `npx rbtnode` replaced by the binary under test. */
export function commandArgs (line: string): string[] {
  const words = line.trim().split(/\s+/)
  if (words[0] !== 'npx' || words[1] !== 'rbtnode') throw new Error(`not an rbtnode command: ${line}`)
  return words.slice(2)
}
