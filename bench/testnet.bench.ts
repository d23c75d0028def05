import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { freeBasePort, TestnetProcess } from '../test/helpers/testnet-process.js'

/**
 * `rbtnode testnet` with 7 quorums and 2 users, as a newcomer runs it. testnet_first_start_s: from
 * the command to the printed table with every DID funded (goal at most 20 s on 2 cores);
 * testnet_restart_s: the same network started again from its directory (goal at most 5 s).
 */
export async function run (): Promise<Record<string, string | number>> {
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bench-testnet-'))
  const base = await freeBasePort(9)
  try {
    let t0 = Date.now()
    let net = new TestnetProcess(['-quorums', '7', '-users', '2', '-p', dir, '-basePort', String(base)])
    const first = await net.ready()
    const firstS = (Date.now() - t0) / 1000
    if (first.nodes.some((n) => n.balance !== 10)) throw new Error('a DID is not funded')
    await net.stop()
    t0 = Date.now()
    net = new TestnetProcess(['-p', dir])
    const again = await net.ready()
    const restartS = (Date.now() - t0) / 1000
    if (!again.restarted || again.nodes.some((n) => n.balance === undefined)) throw new Error('the restart did not find the network')
    await net.stop()
    return { testnet_nodes: first.nodes.length, testnet_first_start_s: firstS.toFixed(1), testnet_restart_s: restartS.toFixed(1) }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
}
