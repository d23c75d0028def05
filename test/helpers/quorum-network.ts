import { expect } from 'chai'
import type { RbtClient } from '../../src/client/rbt-client.js'
import type { PendingSignature } from '../../src/api/contract/envelope.js'
import { NodeProcess, type NodeProcessOptions } from './node-process.js'
import { waitFor } from './wait.js'

export const USER_PASSWORD = 'user-pw'
export const QUORUM_PASSWORD = 'quorum-pw'

/** Environment of every node of the fixture: fast sweeps, short pledge period, test hooks on. */
export const FIXTURE_ENV: Record<string, string> = {
  RBTNODE_LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'INFO',
  RBTNODE_SWEEP_MS: '1000',
  RBTNODE_STALE_VOTE_MS: '3000',
  RBTNODE_PLEDGE_PERIOD_MS: '600000',
  RBTNODE_TEST_HOOKS: '1',
  RBTNODE_EXPLORER_MAX_BACKOFF_MS: '2000'
}

/** Answers a two-step challenge with `password` until the final envelope arrives. */
export async function complete (client: RbtClient, first: { status: boolean, message: string, result: unknown }, password: string): Promise<{ status: boolean, message: string, result: unknown }> {
  let env = first
  for (let i = 0; i < 8 && env.status && (env.result as PendingSignature | null)?.id !== undefined && typeof (env.result as PendingSignature).only_priv_key === 'boolean'; i++) {
    env = await client.envelope('signatureComplete', { body: { id: (env.result as PendingSignature).id, password } })
  }
  return env
}

export async function createLiteDid (client: RbtClient, password: string): Promise<string> {
  const env = await client.call('didCreate', { body: { type: 4, password } as never })
  return (env.result as { did: string }).did
}

export async function mintRbt (client: RbtClient, did: string, count: number, startIndex: number, password: string): Promise<void> {
  const first = await client.call('tokensGenerateLocalRbt', { body: { did, number_of_tokens: count, start_index: startIndex } })
  const done = await complete(client, first, password)
  expect(done.status, done.message).to.equal(true)
}

export async function rbtBalance (client: RbtClient, did: string): Promise<number> {
  const env = await client.call('didBalancesRbt', { params: { did } })
  const r = env.result as unknown as { balance: number } | Array<{ balance: number }>
  return Array.isArray(r) ? r[0].balance : r.balance
}

export interface TransferOutcome { status: boolean, message: string, txid?: string }

export async function transfer (client: RbtClient, from: string, to: string, amount: number | string, password: string, memo = 'e2e'): Promise<TransferOutcome> {
  const first = await client.envelope('txInitiate', { body: { initiator: from, owner: to, tokens: { rbt: amount }, memo } })
  if (!first.status) return { status: false, message: first.message }
  const done = await complete(client, first, password)
  return { status: done.status, message: done.message, txid: (done.result as { transactionID?: string } | null)?.transactionID }
}

export interface QuorumNetwork {
  quorums: NodeProcess[]
  quorumDids: string[]
  a: NodeProcess
  b: NodeProcess
  alice: string
  bob: string
  all: () => NodeProcess[]
  /** connects a node to the network, gives it the quorum list, waits until it resolves the quorum DIDs */
  join: (n: NodeProcess) => Promise<void>
  close: () => Promise<void>
}

let shared: Promise<QuorumNetwork> | undefined

/**
 * One network per test run: 7 quorum nodes (one lite DID each, 10 test RBT, set up as quorum) and two
 * user nodes A (alice) and B (bob), all on the test network over libp2p on 127.0.0.1.
 */
export async function quorumNetwork (): Promise<QuorumNetwork> {
  // a build that failed (a node too slow to start on a loaded machine) is not handed to every later
  // suite: the next caller builds again
  shared ??= build().catch((e: unknown) => { shared = undefined; throw e })
  return await shared
}

// closes the shared network once per mocha run (benchmarks close it themselves)
if (typeof after === 'function') {
  after(async function () {
    this.timeout(60_000)
    if (shared !== undefined) await (await shared).close()
  })
}

export async function closeQuorumNetwork (): Promise<void> {
  if (shared !== undefined) await (await shared).close()
  shared = undefined
}

/** Builds the network; a failure part-way stops every process it started, so none outlives the run. */
async function build (): Promise<QuorumNetwork> {
  const started: NodeProcess[] = []
  try {
    return await buildWith(started)
  } catch (e) {
    await Promise.all(started.map(async (n) => { await n.dispose().catch(() => {}) }))
    throw e
  }
}

async function buildWith (started: NodeProcess[]): Promise<QuorumNetwork> {
  // quorum node 0 is also the test network's faucet
  const opts = (i: number): NodeProcessOptions => ({ n: i, extraArgs: i === 0 ? ['-testNet', '-faucet'] : ['-testNet'], env: FIXTURE_ENV, startTimeoutMs: 60_000 })
  const launch = async (i: number): Promise<NodeProcess> => {
    const n = new NodeProcess(opts(i))
    started.push(n)
    return await n.start()
  }
  const quorums = await Promise.all(Array.from({ length: 7 }, async (_, i) => await launch(i)))
  const [a, b] = await Promise.all([launch(7), launch(8)])
  const seed = quorums[0].multiaddr
  const quorumDids = await Promise.all(quorums.map(async (q) => {
    if (q !== quorums[0]) await q.client.call('bootstrapAdd', { body: { peers: [seed] } })
    const did = await createLiteDid(q.client, QUORUM_PASSWORD)
    await mintRbt(q.client, did, 10, 0, QUORUM_PASSWORD)
    await q.client.call('quorumsSetup', { body: { did, password: QUORUM_PASSWORD, priv_password: QUORUM_PASSWORD } })
    return did
  }))
  const net: QuorumNetwork = {
    quorums, quorumDids, a, b, alice: '', bob: '',
    all: () => [...quorums, a, b],
    join: async (n) => {
      if (n !== quorums[0]) await n.client.call('bootstrapAdd', { body: { peers: [seed] } })
      const have = new Set((await n.client.call('quorumsList')).result ?? [])
      for (const did of quorumDids) if (!have.has(did)) await n.client.call('quorumsAdd', { body: { did } })
      // the quorum DIDs' peers are given explicitly (add_peers), so the fixture does not depend on
      // how fast announcements spread on a loaded machine; DHT resolution has its own e2e test
      for (const [i, did] of quorumDids.entries()) {
        if (quorums[i] !== n) await n.client.call('nodeAddPeers', { body: { DID: did, PeerID: quorums[i].peerId, DIDType: 4 } })
      }
      await waitFor(async () => {
        for (const did of quorumDids) {
          const env = await n.client.envelope('didResolve', { params: { did } })
          if (!env.status) return false
        }
        return true
      }, { timeoutMs: 30_000, what: 'the quorum DIDs to resolve' })
    },
    close: async () => { await Promise.all(net.all().map(async (n) => { await n.dispose() })) }
  }
  for (const n of net.all()) await net.join(n)
  net.alice = await createLiteDid(a.client, USER_PASSWORD)
  net.bob = await createLiteDid(b.client, USER_PASSWORD)
  await a.client.call('nodeAddPeers', { body: { DID: net.bob, PeerID: b.peerId, DIDType: 4 } })
  await b.client.call('nodeAddPeers', { body: { DID: net.alice, PeerID: a.peerId, DIDType: 4 } })
  // each side resolves the other
  await waitFor(async () => (await a.client.envelope('didResolve', { params: { did: net.bob } })).status && (await b.client.envelope('didResolve', { params: { did: net.alice } })).status,
    { timeoutMs: 30_000, what: 'alice and bob to resolve each other' })
  return net
}
