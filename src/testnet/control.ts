/** `rbtnode testnet status` and `stop`: a running network seen from another process, through its directory. */
import { readFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { RbtClient } from '../client/rbt-client.js'
import { waitUntil } from '../util/wait-until.js'
import { rbtBalance } from './setup.js'
import { alive, readState, readSupervisor, removeSupervisor, runningSupervisor } from './state.js'
import { pasteCommands, type TestnetSummary } from './testnet.js'

/** Whether process `pid` is a node of the network in `dir` (its command line names the dir), not a process that reused the id. */
function isNodeOf (pid: number, dir: string): boolean {
  try {
    return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir)
  } catch {
    return false
  }
}

export interface TestnetStatus extends TestnetSummary {
  /** process id of the running `rbtnode testnet`, if one runs */
  supervisor?: number
}

/** Every node of the network in `dir` as it answers now; undefined when `dir` holds no network. */
export async function testnetStatus (dir: string): Promise<TestnetStatus | undefined> {
  const abs = resolve(dir)
  const state = readState(abs)
  if (state === undefined) return undefined
  const nodes = await Promise.all(state.nodes.map(async (r) => {
    const client = new RbtClient({ baseUrl: `http://127.0.0.1:${r.apiPort}`, timeoutMs: 5000 })
    try {
      const st = await client.envelope('nodeStatus').catch(() => undefined)
      const running = st?.result?.core_started === true
      const balance = running && r.did !== '' ? await rbtBalance(client, r.did).catch(() => undefined) : undefined
      return { name: r.name, role: r.role, api: client.baseUrl, peerId: r.peerId, did: r.did, balance, running }
    } finally {
      await client.close()
    }
  }))
  return { dir: abs, restarted: false, password: state.password, nodes, commands: pasteCommands(state.nodes, state.password), supervisor: runningSupervisor(abs)?.pid }
}

/**
 * Stops the network running from `dir`: SIGTERM to its `rbtnode testnet` process, which stops every
 * node; nodes left behind by a supervisor that was killed are sent SIGTERM themselves.
 */
export async function stopTestnet (dir: string, timeoutMs = 60_000): Promise<'stopped' | 'not running' | 'none'> {
  const abs = resolve(dir)
  if (readState(abs) === undefined) return 'none'
  const sup = readSupervisor(abs)
  if (sup === undefined) return 'not running'
  let any = false
  if (alive(sup.pid)) {
    any = true
    process.kill(sup.pid, 'SIGTERM')
    await waitUntil(() => !alive(sup.pid), { timeoutMs, intervalMs: 100, what: `process ${sup.pid} to stop its nodes` })
  }
  const orphans = sup.nodes.filter((n) => n.pid > 0 && alive(n.pid) && isNodeOf(n.pid, abs))
  for (const n of orphans) { any = true; process.kill(n.pid, 'SIGTERM') }
  await waitUntil(() => orphans.every((n) => !alive(n.pid)), { timeoutMs, intervalMs: 100, what: 'the nodes to stop' })
  removeSupervisor(abs)
  return any ? 'stopped' : 'not running'
}
