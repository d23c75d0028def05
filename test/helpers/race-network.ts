import type { RbtClient } from '../../src/client/rbt-client.js'
import { setUpQuorums } from '../../src/testnet/setup.js'
import { generateMnemonic } from '../../src/wallet/bip39.js'
import { createLan, type Lan } from './netns.js'
import { NodeProcess } from './node-process.js'
import { FIXTURE_ENV, QUORUM_PASSWORD, USER_PASSWORD, complete, createLiteDid, mintRbt, rbtBalance } from './quorum-network.js'
import { waitFor } from './wait.js'

/**
 * The network of an owner who races one wallet from two nodes (docs/protocol.md, "Claims"): ten
 * quorum nodes in two disjoint sets of five; node X lists set 1, node Y set 2 (they share no
 * quorum, as operators lay networks out); a fullnode F that Y's wallet sync restores from; the
 * receivers' nodes R1 (bob) and R2 (carol). With `lan`, every node runs in a network namespace of
 * its own on one bridge (root only), so the network can be cut in two: side 1 is set 1, X and R1,
 * side 2 is set 2, Y, R2 and F.
 */
export interface RaceNetwork {
  quorums: NodeProcess[]
  quorumDids: string[]
  set1: string[]
  set2: string[]
  x: NodeProcess
  y: NodeProcess
  full: NodeProcess
  r1: NodeProcess
  r2: NodeProcess
  bob: string
  carol: string
  all: () => NodeProcess[]
  /** cuts the network between `side` (default: side 1, set 1 with X and R1) and every other node (LAN only) */
  partition: (side?: NodeProcess[]) => Promise<void>
  heal: () => Promise<void>
  lan?: Lan
  close: () => Promise<void>
}

export interface RaceNetworkOptions {
  /** run every node in a namespace of its own on one bridge (partitions possible; root only) */
  lan?: boolean
  /** test RBT each quorum DID holds to pledge (default 30) */
  quorumRbt?: number
  env?: Record<string, string>
  log?: (s: string) => void
  /** how long X and Y may take to reach their quorums once set up (default 120 s; more on a loaded machine) */
  setupTimeoutMs?: number
}

export async function raceNetwork (o: RaceNetworkOptions = {}): Promise<RaceNetwork> {
  const started: NodeProcess[] = []
  let lan: Lan | undefined
  try {
    return await build(o, started, (l) => { lan = l })
  } catch (e) {
    await Promise.all(started.map(async (n) => { await n.dispose().catch(() => {}) }))
    await lan?.dispose().catch(() => {})
    throw e
  }
}

const COUNT = 15

async function build (o: RaceNetworkOptions, started: NodeProcess[], keepLan: (l: Lan) => void): Promise<RaceNetwork> {
  const log = o.log ?? (() => {})
  const lan = o.lan === true ? await createLan(`race${process.pid % 10_000}`, COUNT) : undefined
  if (lan !== undefined) keepLan(lan)
  // a partition must not make either side forget the other's arbiters while it lasts
  const env = { ...FIXTURE_ENV, RBTNODE_ARBITER_FORGET_MS: '600000', ...o.env }
  const launch = async (i: number, extra: string[] = []): Promise<NodeProcess> => {
    const member = lan?.members[i]
    const n = new NodeProcess({
      n: i,
      extraArgs: ['-testNet', ...extra, ...(member !== undefined ? ['-mdns=false'] : [])],
      env,
      startTimeoutMs: 180_000,
      ...(member !== undefined ? { netns: member.ns, swarmHost: member.ip } : {})
    })
    started.push(n)
    return await n.start()
  }
  // nodes 0-9 the quorums, then X, Y, F, R1, R2
  const nodes = await Promise.all(Array.from({ length: COUNT }, async (_, i) => await launch(i, i === 12 ? ['-fullnode'] : [])))
  const quorums = nodes.slice(0, 10)
  const [x, y, full, r1, r2] = nodes.slice(10) as [NodeProcess, NodeProcess, NodeProcess, NodeProcess, NodeProcess]
  log(`${nodes.length} nodes started`)
  const peers = nodes.map((n) => n.multiaddr)
  await Promise.all(nodes.map(async (n) => { await n.client.call('bootstrapAdd', { body: { peers: peers.filter((p) => p !== n.multiaddr) } }) }))
  const quorumDids = await setUpQuorums(quorums, QUORUM_PASSWORD, o.quorumRbt ?? 30)
  const set1 = quorumDids.slice(0, 5)
  const set2 = quorumDids.slice(5)
  const bob = await createLiteDid(r1.client, USER_PASSWORD)
  const carol = await createLiteDid(r2.client, USER_PASSWORD)
  // every node knows who hosts the quorums and the receivers; X and Y list their own set only
  const hosted: Array<[string, NodeProcess]> = [...quorumDids.map((d, i): [string, NodeProcess] => [d, quorums[i]!]), [bob, r1], [carol, r2]]
  await Promise.all(nodes.map(async (n) => {
    const list = n === x ? set1 : n === y ? set2 : quorumDids
    for (const did of list) await n.client.call('quorumsAdd', { body: { did } })
    for (const [did, host] of hosted) if (host !== n) await n.client.call('nodeAddPeers', { body: { DID: did, PeerID: host.peerId, DIDType: 4 } })
  }))
  await waitFor(async () => {
    for (const [n, list] of [[x, set1], [y, set2]] as const) {
      for (const did of list) if (!(await n.client.envelope('quorumsStatus', { query: { quorumAddress: did } })).status) return false
    }
    return true
  }, { timeoutMs: o.setupTimeoutMs ?? 120_000, intervalMs: 250, what: 'X and Y to reach their quorums' })
  // every node connected to every other once, so each counts the whole network as the arbiters of a state
  let counts: number[] = []
  await waitFor(async () => {
    counts = await Promise.all(nodes.map(async (n) => (await n.client.call('nodeStatus')).result?.connected_peers ?? 0))
    return counts.every((c) => c >= COUNT - 1)
  }, { timeoutMs: 30_000, intervalMs: 500, what: 'every node to be connected to every other' }).catch(() => { log(`not every pair of nodes connected (${counts.join(' ')}); going on`) })
  log('quorums set up, receivers resolved')
  // the fullnode follows the transaction topic: a first wallet's mint reaches it once the topic's
  // mesh has formed (a wallet restored before that would find nothing to sync)
  const probe = await createLiteDid(x.client, USER_PASSWORD)
  await mintRbt(x.client, probe, 1, 0, USER_PASSWORD)
  await waitFor(async () => ((await full.client.call('tokensList', { query: { did: probe, type: 'rbt' } })).result as unknown[] | null ?? []).length > 0,
    { timeoutMs: 180_000, intervalMs: 500, what: 'the fullnode to follow the transaction topic' })
  log('the fullnode follows the transaction topic')
  const side1 = [...quorums.slice(0, 5), x, r1]
  let cut: Array<[number, number]> = []
  const pairs = (side: NodeProcess[]): Array<[number, number]> => side.flatMap((a) => nodes.filter((b) => !side.includes(b)).map((b): [number, number] => [nodes.indexOf(a), nodes.indexOf(b)]))
  return {
    quorums, quorumDids, set1, set2, x, y, full, r1, r2, bob, carol,
    all: () => [...nodes],
    ...(lan !== undefined ? { lan } : {}),
    partition: async (side = side1) => {
      if (lan === undefined) throw new Error('a partition needs the LAN (raceNetwork({ lan: true }))')
      cut = pairs(side)
      for (const [i, j] of cut) await lan.separate(i, j)
    },
    heal: async () => {
      if (lan === undefined) return
      for (const [i, j] of cut) await lan.join(i, j)
      cut = []
    },
    close: async () => {
      await Promise.all(nodes.map(async (n) => { await n.dispose().catch(() => {}) }))
      await lan?.dispose().catch(() => {})
    }
  }
}

interface Listed { token_id: string, token_status: string, latest_block_id: string }

async function listed (client: RbtClient, did: string, type: string): Promise<Listed[]> {
  return ((await client.call('tokensList', { query: { did, type } })).result as unknown as Listed[] | null) ?? []
}

export interface RaceWallet { did: string, mnemonic: string }

/**
 * A fresh wallet made from a mnemonic on X and funded there (one test RBT, or `mint(did)`), then
 * restored on Y from the same mnemonic and synced from the fullnode: both nodes hold its tokens.
 */
export async function restoredWallet (net: RaceNetwork, o: { rbt?: number, mint?: (did: string) => Promise<void>, types?: string[] } = {}): Promise<RaceWallet> {
  const mnemonic = generateMnemonic()
  const made = await net.x.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never })
  const did = (made.result as { did: string }).did
  if (o.mint !== undefined) await o.mint(did)
  else await mintRbt(net.x.client, did, o.rbt ?? 1, 0, USER_PASSWORD)
  const types = o.types ?? ['rbt']
  const onX = async (): Promise<Listed[]> => (await Promise.all(types.map(async (t) => await listed(net.x.client, did, t)))).flat().filter((t) => t.token_status !== 'Burnt')
  const want = await onX()
  // the fullnode learns the tokens from their announcements
  await waitFor(async () => {
    const held = (await Promise.all(types.map(async (t) => await listed(net.full.client, did, t)))).flat()
    return want.every((w) => held.some((h) => h.token_id === w.token_id && h.latest_block_id === w.latest_block_id))
  }, { timeoutMs: 60_000, intervalMs: 200, what: 'the fullnode to hold the new wallet\'s tokens' })
  const again = await net.y.client.call('didCreate', { body: { type: 4, password: USER_PASSWORD, mnemonic } as never })
  if ((again.result as { did: string }).did !== did) throw new Error('the mnemonic made another DID on Y')
  const first = await net.y.client.envelope('sync', { body: { did, fullnode: net.full.peerId } })
  if (!first.status) throw new Error(`wallet sync on Y: ${first.message}`)
  const done = await complete(net.y.client, first, USER_PASSWORD)
  if (!done.status) throw new Error(`wallet sync on Y: ${done.message}`)
  await waitFor(async () => {
    const held = (await Promise.all(types.map(async (t) => await listed(net.y.client, did, t)))).flat()
    return want.every((w) => held.some((h) => h.token_id === w.token_id && h.token_status === 'Free'))
  }, { timeoutMs: 30_000, intervalMs: 200, what: 'Y to hold the wallet\'s tokens Free' })
  return { did, mnemonic }
}

export interface SpendOutcome { status: boolean, message: string, code?: string, txid?: string, ms: number }

/** One spend through the two-step API, timed from its first request to its final answer. */
export async function spend (client: RbtClient, body: Record<string, unknown>): Promise<SpendOutcome> {
  const t0 = Date.now()
  const first = await client.envelope('txInitiate', { body: body as never })
  if (!first.status) return { status: false, message: first.message, code: (first as { code?: string }).code, ms: Date.now() - t0 }
  const done = await complete(client, first, USER_PASSWORD) as { status: boolean, message: string, result: unknown, code?: string }
  return { status: done.status, message: done.message, code: done.code ?? (done.result as { code?: string } | null)?.code, txid: (done.result as { transactionID?: string } | null)?.transactionID, ms: Date.now() - t0 }
}

/**
 * X and Y spend the same holding at once (Y `offsetMs` later), X to bob, Y to carol: `tokens` is the
 * transaction's `tokens` field (one RBT, FTs, an NFT).
 */
export async function raceSpends (net: RaceNetwork, did: string, tokens: Record<string, unknown>, offsetMs: number): Promise<{ x: SpendOutcome, y: SpendOutcome }> {
  const [x, y] = await Promise.all([
    spend(net.x.client, { initiator: did, owner: net.bob, tokens, memo: 'race x' }),
    (async () => {
      await new Promise((resolve) => setTimeout(resolve, offsetMs))
      return await spend(net.y.client, { initiator: did, owner: net.carol, tokens, memo: 'race y' })
    })()
  ])
  return { x, y }
}

/** What the two receivers hold in RBT. */
export async function receiversRbt (net: RaceNetwork): Promise<number> {
  return await rbtBalance(net.r1.client, net.bob) + await rbtBalance(net.r2.client, net.carol)
}
