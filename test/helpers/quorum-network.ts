import type { RbtClient } from '../../src/client/rbt-client.js'
import { completeWithPassword, createLiteDid, joinQuorumNetwork, mintTestRbt, rbtBalance, setUpQuorums, setUpUsers } from '../../src/testnet/setup.js'
import { NodeProcess, type NodeProcessOptions } from './node-process.js'

export const USER_PASSWORD = 'user-pw'
export const QUORUM_PASSWORD = 'quorum-pw'

/** Environment of every node of the fixture: fast sweeps, short pledge period, test hooks on. */
export const FIXTURE_ENV: Record<string, string> = {
  RBTNODE_LOG_LEVEL: process.env.E2E_LOG_LEVEL ?? 'INFO',
  RBTNODE_SWEEP_MS: '1000',
  RBTNODE_STALE_VOTE_MS: '3000',
  RBTNODE_PLEDGE_PERIOD_MS: '600000',
  RBTNODE_TEST_HOOKS: '1',
  RBTNODE_EXPLORER_MAX_BACKOFF_MS: '2000',
  // the shared network's suites add nodes and dispose of them for good: a peer gone for 5 s no
  // longer counts among the arbiters of a claim (suites that cut networks in two set a longer time)
  RBTNODE_ARBITER_FORGET_MS: '5000'
}

/** Answers a two-step challenge with `password` until the final envelope arrives. */
export async function complete (client: RbtClient, first: { status: boolean, message: string, result: unknown }, password: string): Promise<{ status: boolean, message: string, result: unknown }> {
  return await completeWithPassword(client, first, password)
}

export { createLiteDid, rbtBalance }

export async function mintRbt (client: RbtClient, did: string, count: number, startIndex: number, password: string): Promise<void> {
  await mintTestRbt(client, did, count, startIndex, password)
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
  // the set-up phases are those of `rbtnode testnet` (src/testnet/setup.ts)
  const quorumDids = await setUpQuorums(quorums, QUORUM_PASSWORD, 10)
  const net: QuorumNetwork = {
    quorums, quorumDids, a, b, alice: '', bob: '',
    all: () => [...quorums, a, b],
    join: async (n) => { await joinQuorumNetwork(n, quorums, quorumDids) },
    close: async () => { await Promise.all(net.all().map(async (n) => { await n.dispose() })) }
  }
  for (const n of net.all()) await net.join(n)
  ;[net.alice, net.bob] = await setUpUsers([a, b], USER_PASSWORD, 0)
  return net
}
