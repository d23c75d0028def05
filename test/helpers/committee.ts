import type { NodeProcess } from './node-process.js'
import { waitFor } from './wait.js'

/** Node settings that let arbiter registrations count at once and spread fast (test networks only). */
export const COMMITTEE_ENV = { RBTNODE_ARBITER_MATURITY_MS: '0', RBTNODE_ARBITER_GRACE_MS: '0', RBTNODE_ARBITER_PULL_MS: '2000' }

/**
 * Seats every quorum DID (each on its own node, holding Free whole RBT) as an arbiter, then waits
 * until every node counts the committee in force with all of them.
 */
export async function seatQuorums (quorums: readonly NodeProcess[], dids: readonly string[], all: readonly NodeProcess[], timeoutMs = 120_000): Promise<string[]> {
  const peers: string[] = []
  for (const [i, q] of quorums.entries()) {
    const env = await q.client.envelope('arbitersRegister', { body: { did: dids[i]! }, timeoutMs: 60_000 })
    if (!env.status) throw new Error(`seating ${dids[i]!}: ${env.message}`)
    peers.push((env.result as { peer: string }).peer)
  }
  await waitFor(async () => {
    const views = await Promise.all(all.map(async (n) => (await n.client.call('arbiters', { timeoutMs: 10_000 })).result))
    return views.every((v) => v?.in_force === true && v.seats === quorums.length)
  }, { timeoutMs, intervalMs: 500, what: `every node to count the ${quorums.length} arbiter seats` })
  return peers
}
