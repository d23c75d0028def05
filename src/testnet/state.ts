/** The files of a local test network's directory: its state (testnet.json) and its supervisor (supervisor.json). */
import { existsSync, readFileSync, rmSync } from 'node:fs'
import { join } from 'node:path'
import type { LocalNodeSpec } from './local-node.js'
import { writeFileDurableSync } from '../util/durable-write.js'

export const STATE_FILE = 'testnet.json'
export const SUPERVISOR_FILE = 'supervisor.json'
export const SWARM_KEY_FILE = 'swarm.key'

export interface NodeRecord extends LocalNodeSpec {
  peerId: string
  /** the node's DID (a quorum DID or the user's DID) */
  did: string
}

/** What set-up made; a restart reads it and repeats nothing. */
export interface TestnetState {
  version: 1
  created: string
  /** the password of every DID of the network (test network only) */
  password: string
  /** RBT minted per user DID */
  fund: number
  basePort: number
  /** false while the first set-up runs: a network whose set-up did not finish is started again only with -fresh */
  complete: boolean
  nodes: NodeRecord[]
}

/** The running `rbtnode testnet` process, for `testnet status` and `testnet stop` from other terminals. */
export interface SupervisorRecord {
  pid: number
  started: string
  nodes: Array<{ name: string, pid: number }>
}

export function readState (dir: string): TestnetState | undefined {
  const p = join(dir, STATE_FILE)
  if (!existsSync(p)) return undefined
  const s = JSON.parse(readFileSync(p, 'utf8')) as TestnetState
  if (s.version !== 1 || !Array.isArray(s.nodes)) throw new Error(`${p} is not a test network state file this version reads`)
  return s
}

export function writeState (dir: string, s: TestnetState): void {
  writeFileDurableSync(join(dir, STATE_FILE), JSON.stringify(s, null, 2) + '\n', { mode: 0o600 })
}

export function readSupervisor (dir: string): SupervisorRecord | undefined {
  try { return JSON.parse(readFileSync(join(dir, SUPERVISOR_FILE), 'utf8')) as SupervisorRecord } catch { return undefined }
}

export function writeSupervisor (dir: string, r: SupervisorRecord): void {
  writeFileDurableSync(join(dir, SUPERVISOR_FILE), JSON.stringify(r) + '\n')
}

export function removeSupervisor (dir: string): void {
  rmSync(join(dir, SUPERVISOR_FILE), { force: true })
}

/** Whether a process with this id exists (signal 0 checks without sending anything). */
export function alive (pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (e) {
    return (e as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/** The supervisor of `dir` if it is still running. */
export function runningSupervisor (dir: string): SupervisorRecord | undefined {
  const r = readSupervisor(dir)
  return r !== undefined && alive(r.pid) ? r : undefined
}
