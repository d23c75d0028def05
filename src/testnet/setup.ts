/**
 * The set-up phases of a local quorum network, over the typed client only: quorum DIDs funded,
 * pledged and set up as quorums, one quorum list on every node, funded user DIDs. `rbtnode testnet`,
 * the test suites' network and the benches all build their networks with these functions.
 */
import type { RbtClient } from '../client/rbt-client.js'
import type { Envelope } from '../api/contract/envelope.js'
import { waitUntil } from '../util/wait-until.js'

/** What set-up needs of a running node: its client and libp2p identity. */
export interface NetNode {
  readonly client: RbtClient
  readonly peerId: string
  readonly multiaddr: string
}

/** Answers the two-step challenges of `first` with `password` until the final envelope (status may be false). */
export async function completeWithPassword (client: RbtClient, first: Envelope<unknown>, password: string): Promise<Envelope<unknown>> {
  return await client.completeSigned(first, { password: () => password }).catch((e: unknown) => {
    const err = e as { message?: string, result?: unknown }
    return { status: false, message: err.message ?? String(e), result: err.result ?? null }
  })
}

export async function createLiteDid (client: RbtClient, password: string): Promise<string> {
  const env = await client.call('didCreate', { body: { type: 4, password } as never })
  return (env.result as { did: string }).did
}

/** Mints `count` whole test RBT for `did` (test network only). */
export async function mintTestRbt (client: RbtClient, did: string, count: number, startIndex: number, password: string): Promise<void> {
  const done = await client.signed('tokensGenerateLocalRbt', { body: { did, number_of_tokens: count, start_index: startIndex } }, { password: () => password })
  if (!done.status) throw new Error(`minting ${count} RBT for ${did} failed: ${done.message}`)
}

export async function rbtBalance (client: RbtClient, did: string): Promise<number> {
  const env = await client.call('didBalancesRbt', { params: { did } })
  const r = env.result as unknown as { balance: number } | Array<{ balance: number }>
  return Array.isArray(r) ? r[0].balance : r.balance
}

/**
 * Quorum set-up: every quorum node but the first dials the first (the seed), then creates a lite
 * DID with `password`, mints `fund` RBT for it and sets it up as a quorum (its pledge comes from
 * those tokens). Returns the quorum DIDs in node order.
 */
export async function setUpQuorums (quorums: readonly NetNode[], password: string, fund: number): Promise<string[]> {
  const seed = quorums[0].multiaddr
  return await Promise.all(quorums.map(async (q) => {
    if (q !== quorums[0]) await q.client.call('bootstrapAdd', { body: { peers: [seed] } })
    const did = await createLiteDid(q.client, password)
    await mintTestRbt(q.client, did, fund, 0, password)
    await q.client.call('quorumsSetup', { body: { did, password, priv_password: password } })
    return did
  }))
}

/**
 * Joins `n` to the network of `quorums`: it dials the seed (unless it is the seed), gets the quorum
 * list, and the quorum DIDs' peers are given explicitly (add_peers), so nothing waits on how fast
 * announcements spread; returns once `n` resolves every quorum DID.
 */
export async function joinQuorumNetwork (n: NetNode, quorums: readonly NetNode[], quorumDids: readonly string[], timeoutMs = 30_000): Promise<void> {
  if (n !== quorums[0]) await n.client.call('bootstrapAdd', { body: { peers: [quorums[0].multiaddr] } })
  const have = new Set((await n.client.call('quorumsList')).result ?? [])
  for (const did of quorumDids) if (!have.has(did)) await n.client.call('quorumsAdd', { body: { did } })
  for (const [i, did] of quorumDids.entries()) {
    if (quorums[i] !== n) await n.client.call('nodeAddPeers', { body: { DID: did, PeerID: quorums[i].peerId, DIDType: 4 } })
  }
  await waitUntil(async () => {
    for (const did of quorumDids) {
      const env = await n.client.envelope('didResolve', { params: { did } })
      if (!env.status) return false
    }
    return true
  }, { timeoutMs, what: 'the quorum DIDs to resolve' })
}

/**
 * User DIDs: one lite DID per user node with `password`, `fund` test RBT minted for it (none when
 * 0); every user node learns every other user DID's peer and resolves it. Returns the DIDs in order.
 */
export async function setUpUsers (users: readonly NetNode[], password: string, fund: number, timeoutMs = 30_000): Promise<string[]> {
  const dids = await Promise.all(users.map(async (u) => {
    const did = await createLiteDid(u.client, password)
    if (fund > 0) await mintTestRbt(u.client, did, fund, 0, password)
    return did
  }))
  await Promise.all(users.map(async (u, i) => {
    for (const [j, did] of dids.entries()) {
      if (j !== i) await u.client.call('nodeAddPeers', { body: { DID: did, PeerID: users[j].peerId, DIDType: 4 } })
    }
    await waitUntil(async () => {
      for (const [j, did] of dids.entries()) {
        if (j !== i && !(await u.client.envelope('didResolve', { params: { did } })).status) return false
      }
      return true
    }, { timeoutMs, what: 'the user DIDs to resolve each other' })
  }))
  return dids
}
