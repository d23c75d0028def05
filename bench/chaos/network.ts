import { mintTestRbt, setUpQuorums } from '../../src/testnet/setup.js'
import type { Lan } from '../../test/helpers/netns.js'
import { NodeProcess } from '../../test/helpers/node-process.js'
import { FIXTURE_ENV, QUORUM_PASSWORD, USER_PASSWORD, complete, createLiteDid } from '../../test/helpers/quorum-network.js'
import { waitFor } from '../../test/helpers/wait.js'

/** Environment of every chaos node: the test fixture's (fast sweeps, test hooks) with a pledge period of a minute, so pledges come back during the run. */
export const CHAOS_ENV: Record<string, string> = { ...FIXTURE_ENV, RBTNODE_LOG_LEVEL: process.env.CHAOS_LOG_LEVEL ?? 'INFO', RBTNODE_PLEDGE_PERIOD_MS: '60000', RBTNODE_ARBITER_FORGET_MS: '600000' }

export const QUORUMS = 7
const QUORUM_RBT = 20

export interface ChaosNode {
  name: string
  role: 'quorum' | 'user'
  proc: NodeProcess
  dids: string[]
  /** the quorum DIDs this node lists (user nodes: one of the two quorum sets) */
  quorumSet: string[]
}

export interface UserDid { did: string, node: number }

export interface ChaosNetwork {
  nodes: ChaosNode[]
  quorumDids: string[]
  /** user DIDs with the index (into nodes) of their node */
  users: UserDid[]
  /** RBT minted (milli) minus what FT mints burnt */
  rbtMilli: number
  ft: Array<{ name: string, creator: string, count: number }>
  nfts: string[]
}

/**
 * The two quorum sets user nodes list, as indexes of the quorum nodes: even user nodes the first,
 * odd ones the second. Each has six of the seven quorums (five must sign), and they differ.
 */
export const QUORUM_SETS: ReadonlyArray<readonly number[]> = [[0, 1, 2, 3, 4, 5], [1, 2, 3, 4, 5, 6]]

export interface BuildOptions {
  userNodes: number
  didsPerNode: number
  rbtPerDid: number
  nftCount: number
  started: NodeProcess[]
  log: (s: string) => void
  /** node i runs in lan.members[i]'s namespace and listens on its LAN address (discovery stays off) */
  lan?: Lan
  /** the data dir of node i (a tmpfs mount for the disk faults); a fresh temp dir when undefined */
  dir?: (i: number) => string | undefined
  /** false: every node lists all the quorums (one set) */
  twoQuorumSets?: boolean
}

/**
 * 7 quorum nodes (one DID each, 20 RBT, set up as quorum) and `userNodes` user nodes with
 * `didsPerNode` DIDs each (`rbtPerDid` RBT each); two FT kinds minted on two different nodes and
 * `nftCount` deployed NFTs. Quorum nodes list every quorum, user nodes one of QUORUM_SETS in turn;
 * every node knows every DID's peer.
 */
export async function buildNetwork (o: BuildOptions): Promise<ChaosNetwork> {
  const launch = async (i: number, role: 'quorum' | 'user'): Promise<ChaosNode> => {
    const member = o.lan?.members[i]
    const dir = o.dir?.(i)
    const proc = new NodeProcess({
      n: i,
      extraArgs: ['-testNet', ...(member !== undefined ? ['-mdns=false'] : [])],
      env: CHAOS_ENV,
      // a start is slow, not failed, on a machine whose two cores are shared many times over
      startTimeoutMs: 180_000,
      ...(member !== undefined ? { netns: member.ns, swarmHost: member.ip } : {}),
      ...(dir !== undefined ? { dir } : {})
    })
    o.started.push(proc)
    await proc.start()
    return { name: role === 'quorum' ? `q${i}` : `u${i - QUORUMS}`, role, proc, dids: [], quorumSet: [] }
  }
  const nodes = await Promise.all([
    ...Array.from({ length: QUORUMS }, async (_, i) => await launch(i, 'quorum')),
    ...Array.from({ length: o.userNodes }, async (_, i) => await launch(QUORUMS + i, 'user'))
  ])
  o.log(`  ${nodes.length} nodes started`)
  const seed = nodes[0]!.proc.multiaddr
  const peers = nodes.map((n) => n.proc.multiaddr)
  await Promise.all(nodes.map(async (n) => { await n.proc.client.call('bootstrapAdd', { body: { peers: peers.filter((p) => p !== n.proc.multiaddr) } }) }))
  void seed
  let rbtMilli = 0
  // the quorum phase of `rbtnode testnet` (src/testnet/setup.ts)
  const quorumDids = await setUpQuorums(nodes.slice(0, QUORUMS).map((q) => q.proc), QUORUM_PASSWORD, QUORUM_RBT)
  for (const [i, did] of quorumDids.entries()) nodes[i]!.dids.push(did)
  rbtMilli += QUORUMS * QUORUM_RBT * 1000
  const users: UserDid[] = []
  await Promise.all(nodes.slice(QUORUMS).map(async (n, k) => {
    for (let j = 0; j < o.didsPerNode; j++) {
      const did = await createLiteDid(n.proc.client, USER_PASSWORD)
      await mintTestRbt(n.proc.client, did, o.rbtPerDid, 0, USER_PASSWORD)
      n.dids.push(did)
      users.push({ did, node: QUORUMS + k })
    }
  }))
  users.sort((a, b) => a.node - b.node || nodes[a.node]!.dids.indexOf(a.did) - nodes[b.node]!.dids.indexOf(b.did))
  rbtMilli += users.length * o.rbtPerDid * 1000
  o.log(`  ${QUORUMS} quorum DIDs and ${users.length} user DIDs funded`)

  // every node: its quorum list and the peer of every DID (given, not discovered)
  const all = [...quorumDids.map((did, i) => ({ did, node: i })), ...users]
  for (const [i, n] of nodes.entries()) {
    n.quorumSet = n.role === 'quorum' || o.twoQuorumSets === false ? [...quorumDids] : QUORUM_SETS[(i - QUORUMS) % QUORUM_SETS.length]!.map((q) => quorumDids[q]!)
  }
  await Promise.all(nodes.map(async (n) => {
    for (const did of n.quorumSet) await n.proc.client.call('quorumsAdd', { body: { did } })
    for (const d of all) if (nodes[d.node] !== n) await n.proc.client.call('nodeAddPeers', { body: { DID: d.did, PeerID: nodes[d.node]!.proc.peerId, DIDType: 4 } })
  }))
  let missing = ''
  await waitFor(async () => {
    for (const n of nodes.slice(QUORUMS)) {
      for (const did of n.quorumSet) {
        const env = await n.proc.client.envelope('quorumsStatus', { query: { quorumAddress: did } })
        if (!env.status) { missing = `${n.name} → quorum ${did.slice(0, 12)}…: ${env.message}`; return false }
      }
      for (const d of users) {
        const env = await n.proc.client.envelope('didResolve', { params: { did: d.did } })
        if (!env.status) { missing = `${n.name} → ${d.did.slice(0, 12)}…: ${env.message}`; return false }
      }
    }
    return true
  }, { timeoutMs: 120_000, intervalMs: 250, what: 'the user nodes to reach every quorum and resolve every DID' })
    .catch((e: Error) => { throw new Error(`${e.message}; last: ${missing}`) })
  o.log('  quorums reachable, DIDs resolved')

  // FTs: two kinds, made on two different user nodes (each burns 2 RBT)
  const ft: ChaosNetwork['ft'] = []
  const makers = [users[0]!, users.find((u) => u.node !== users[0]!.node) ?? users[1]!]
  await Promise.all(makers.map(async (u, k) => {
    const name = `CHAOS${k}`
    const client = nodes[u.node]!.proc.client
    const first = await client.envelope('ftsMint', { body: { did: u.did, ft_name: name, ft_count: 200, token_count: 2, ft_num_start_index: 0 } })
    const done = await complete(client, first, USER_PASSWORD)
    if (!done.status) throw new Error(`FT mint ${name}: ${done.message}`)
    ft.push({ name, creator: u.did, count: 200 })
  }))
  rbtMilli -= makers.length * 2 * 1000
  ft.sort((a, b) => a.name.localeCompare(b.name))

  // NFTs: made and deployed by user DIDs in turn
  const nfts: string[] = []
  for (let i = 0; i < o.nftCount; i++) {
    const u = users[i % users.length]!
    const client = nodes[u.node]!.proc.client
    const form = { fields: { did: u.did }, files: { metadata: { filename: 'meta.json', data: Buffer.from(JSON.stringify({ chaos: i })) }, artifact: { filename: 'a.bin', data: Buffer.from(`chaos artifact ${i}`) } } }
    const id = (await client.call('nftsGenerate', { form })).result as string
    const first = await client.envelope('txInitiate', { body: { initiator: u.did, owner: u.did, tokens: { nft: [{ nftId: id, value: 1, data: 'deployed' }], transferNftOwnership: false }, memo: `chaos deploy ${i}` } })
    const done = first.status ? await complete(client, first, USER_PASSWORD) : first
    if (!done.status) throw new Error(`NFT deploy ${i}: ${done.message}`)
    nfts.push(id)
  }
  o.log(`  ${ft.length} FT kinds and ${nfts.length} NFTs made`)
  return { nodes, quorumDids, users, rbtMilli, ft, nfts }
}
