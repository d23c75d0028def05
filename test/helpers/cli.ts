import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import type { Netns } from './netns.js'

export const ROOT = fileURLToPath(new URL('../../../', import.meta.url))
export const BIN = fileURLToPath(new URL('../../../bin/run.js', import.meta.url))

/**
 * Environment for child processes: no interactive terminal, no slow CA bundle loading, and mDNS
 * discovery off unless `extra` says otherwise (discovery sends multicast: only nodes inside a
 * namespace the test made may have it on, see netns.ts).
 */
export function childEnv (extra: Record<string, string> = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, RBTNODE_MDNS: '0', ...extra }
  delete env.NODE_EXTRA_CA_CERTS
  return env
}

export interface CliResult { code: number | null, stdout: string, stderr: string }

/**
 * Runs the real `rbtnode` executable with no standard input; with `netns`, inside that network
 * namespace (`ip netns exec`), where the addresses of the namespace's nodes (their cliArgs) work.
 */
export async function runCli (args: string[], opts: { cwd?: string, env?: Record<string, string>, timeoutMs?: number, netns?: Netns } = {}): Promise<CliResult> {
  return await new Promise((resolve, reject) => {
    const spawnOpts = { cwd: opts.cwd ?? ROOT, env: childEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] as Array<'ignore' | 'pipe'> }
    const child = opts.netns !== undefined
      ? opts.netns.spawn(process.execPath, [BIN, ...args], spawnOpts)
      : spawn(process.execPath, [BIN, ...args], spawnOpts)
    let stdout = ''
    let stderr = ''
    child.stdout?.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr?.on('data', (d: Buffer) => { stderr += d.toString() })
    const t = setTimeout(() => { child.kill('SIGKILL') }, opts.timeoutMs ?? 60_000)
    child.on('error', reject)
    child.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }) })
  })
}

/** Any command (npm, npx, node with a script) in `cwd`, with no standard input. */
export async function runProcess (cmd: string, args: string[], opts: { cwd?: string, env?: Record<string, string>, timeoutMs?: number } = {}): Promise<CliResult> {
  return await new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: opts.cwd ?? ROOT, env: childEnv(opts.env), stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', (d: Buffer) => { stdout += d.toString() })
    child.stderr.on('data', (d: Buffer) => { stderr += d.toString() })
    const t = setTimeout(() => { child.kill('SIGKILL') }, opts.timeoutMs ?? 60_000)
    child.on('error', reject)
    child.on('close', (code) => { clearTimeout(t); resolve({ code, stdout, stderr }) })
  })
}
