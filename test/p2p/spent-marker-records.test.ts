import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { createRpc, type BuiltinMethods, type Rpc, type RpcClient } from '../../src/p2p/rpc.js'
import type { P2pHost } from '../../src/p2p/host.js'
import { LevelStore } from '../../src/storage/level-store.js'
import { silentLogger } from '../../src/util/logger.js'
import { ErrorCode } from '../../src/util/errors.js'
import { tokenStateHash } from '../../src/tokenchain/token-id.js'
import { MARKER_BATCH_STATES_MAX, SPENT_TOPIC, markerDigest, nodeSpentMarkers, spentMarkerRpcHandlers, type NodeSpentMarkers, type SpentMarkerMethods } from '../../src/node/consensus/spent-markers.js'
import { connect, startHosts, stopAll, waitFor, expectRbtError } from './helpers.js'

/**
 * The spent-marker record protocol between real hosts on 127.0.0.1: records stored on the peers
 * closest to their key and found by a walk over the rpc channel. Signatures are stood in for by a
 * keyed tag so the test is about the protocol, not the curve (the curve has its own tests).
 */
describe('p2p: spent-marker records over the rpc channel', function () {
  this.timeout(60_000)
  const N = 5
  let hosts: P2pHost[]
  let rpcs: Array<Rpc<SpentMarkerMethods & BuiltinMethods>>
  let markers: NodeSpentMarkers[]
  let dir: string
  let stores: LevelStore[]
  const QUORUM = 'bafybmiquorumdid'
  const QUORUM2 = 'bafybmisecondquorum'
  const sign = (did: string, msg: string): string => `${did}:${msg}`
  let verifyCalls = 0
  const verifier = { verify: async (did: string, msg: string, sig: string) => { verifyCalls++; return sig === sign(did, msg) } }
  /** two verified markers of different transactions for one state, as each node was told them */
  const conflicts: Array<{ node: number, stateHash: string, held: string, other: string }> = []
  /** the quorum of every marker signature made, in order */
  const signed: string[] = []
  const state = (n: number): string => tokenStateHash(`QmToken${n}`, `1-${'ab'.repeat(32)}`)
  /** every record request a node's markers made: method, asked peer, states named */
  const calls: Array<{ from: number, to: string, method: string, states: number }> = []
  /** node 3 serves only the single-state methods, as a node from before batches */
  const OLD = 3

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbt-markers-'))
    hosts = await startHosts(N)
    for (let i = 1; i < N; i++) await connect(hosts[0]!, hosts[i]!)
    for (let i = 2; i < N; i++) await connect(hosts[1]!, hosts[i]!)
    await waitFor('routing tables', () => hosts.every((h) => h.dhtPeerCount() >= 1), 10_000)
    stores = []
    rpcs = []
    markers = []
    for (let i = 0; i < N; i++) {
      const kv = new LevelStore(join(dir, `db${i}`))
      await kv.open()
      stores.push(kv)
      const h = hosts[i]!
      let m: NodeSpentMarkers | undefined
      const all = spentMarkerRpcHandlers(() => m)
      const handlers = i === OLD ? { 'markers.get': all['markers.get'], 'markers.put': all['markers.put'] } as typeof all : all
      const rpc = createRpc<SpentMarkerMethods>({ host: h, handlers })
      await rpc.start()
      rpcs.push(rpc)
      const counted: RpcClient<SpentMarkerMethods> = {
        call: async (peer, method, req, o) => {
          const r = req as { stateHashes?: unknown[], items?: unknown[] }
          calls.push({ from: i, to: peer, method, states: r.stateHashes?.length ?? r.items?.length ?? 1 })
          return await rpc.call(peer, method, req, o)
        },
        callPaged: (peer, method, req, o) => rpc.callPaged(peer, method, req, o)
      }
      m = nodeSpentMarkers({
        host: () => h,
        rpc: () => counted,
        verifier,
        signerFor: (did) => (did === QUORUM && i === 0) || (did === QUORUM2 && i === 1) ? { did, pvtSign: async (msg: string) => { signed.push(did); return sign(did, msg) }, signHash: async () => { throw new Error('unused') } } : undefined,
        backupDelayMs: 200,
        local: kv.collection('spent-markers'),
        log: silentLogger,
        onConflict: (stateHash, held, other) => { conflicts.push({ node: i, stateHash, held: held.txid, other: other.txid }) }
      })
      markers.push(m)
    }
  })
  after(async () => {
    await stopAll([...hosts, ...rpcs])
    for (const s of stores ?? []) await s.close().catch(() => {})
    rmSync(dir, { recursive: true, force: true })
  })

  it('stores a marker on the peers closest to its key and finds it from any node', async () => {
    const s = state(1)
    expect(await markers[3]!.lookup(s)).to.equal(undefined)
    await markers[0]!.publish(s, { txid: 'tx1', blockId: 'b1', quorum: QUORUM })
    // every other node answers the walk (all are among the k closest of a five-node network)
    for (let i = 1; i < N; i++) expect(await markers[i]!.known(s), `node ${i} holds it`).to.deep.equal({ txid: 'tx1', blockId: 'b1', quorum: QUORUM })
    // a node that lost it (a fresh data dir) finds it again by lookup
    await stores[4]!.collection('spent-markers').del(s)
    expect(await markers[4]!.known(s)).to.equal(undefined)
    expect(await markers[4]!.lookup(s)).to.deep.equal({ txid: 'tx1', blockId: 'b1', quorum: QUORUM })
    expect(await markers[4]!.known(s), 'a found marker is kept').to.deep.equal({ txid: 'tx1', blockId: 'b1', quorum: QUORUM })
  })

  it('a forged record is dropped when it would be used, and cannot shadow the real one sent after it', async () => {
    const forged = (n: number): { stateHash: string, record: { txid: string, blockId: string, quorum: string, sig: string } } =>
      ({ stateHash: state(n), record: { txid: 'forged', blockId: 'b', quorum: QUORUM, sig: 'nope' } })
    // alone, it is kept unverified until used: then it fails verification and is gone
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', forged(12))
    expect(await markers[1]!.known(state(12))).to.equal(undefined)
    expect(await stores[1]!.collection('spent-markers').get(state(12))).to.equal(undefined)
    // sent ahead of the real marker, it is verified when the real one arrives, and replaced
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', forged(2))
    await markers[0]!.publish(state(2), { txid: 'tx2', blockId: 'b2', quorum: QUORUM })
    expect((await stores[1]!.collection<{ txid: string }>('spent-markers').get(state(2)))?.txid).to.equal('tx2')
    // a later claim, even validly signed, does not replace the first valid one
    const m = { txid: 'tx-other', blockId: 'b9', quorum: QUORUM }
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: state(2), record: { ...m, sig: sign(QUORUM, markerDigest(state(2), m)) } })
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', forged(2))
    expect((await markers[1]!.known(state(2)))?.txid).to.equal('tx2')
    // a real marker received first, a forged one after: the real one stays
    await markers[0]!.publish(state(13), { txid: 'tx13', blockId: 'b13', quorum: QUORUM })
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', forged(13))
    expect((await markers[1]!.known(state(13)))?.txid).to.equal('tx13')
    // many states in one read: the same answers, a forged pending record dropped there too
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', forged(15))
    const many = await markers[1]!.knownMany!([state(2), state(15), state(13), state(16)])
    expect(many.map((x) => x?.txid)).to.deep.equal(['tx2', undefined, 'tx13', undefined])
    expect(await stores[1]!.collection('spent-markers').get(state(15))).to.equal(undefined)
  })

  it('two claims arriving at once: the valid one stays whichever lands first', async () => {
    const s = state(14)
    const m = { txid: 'tx14', blockId: 'b14', quorum: QUORUM }
    await Promise.all([
      rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: s, record: { txid: 'forged', blockId: 'b', quorum: QUORUM, sig: 'nope' } }),
      rpcs[3]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: s, record: { ...m, sig: sign(QUORUM, markerDigest(s, m)) } })
    ])
    expect((await markers[1]!.known(s))?.txid).to.equal('tx14')
  })

  it('a lookup passes over a peer answering a forged record and finds the real one', async () => {
    const s = state(3)
    await markers[0]!.publish(s, { txid: 'tx3', blockId: 'b3', quorum: QUORUM })
    // node 1 now answers a forged record for the state (as a corrupted or hostile store would)
    await stores[1]!.collection('spent-markers').put(s, { txid: 'evil', blockId: 'x', quorum: QUORUM, sig: 'bad', stateHash: s })
    await stores[4]!.collection('spent-markers').del(s)
    expect((await markers[4]!.lookup(s))?.txid).to.equal('tx3')
  })

  it('answers malformed requests with INVALID_INPUT and a state nobody spent with nothing', async () => {
    await expectRbtError(rpcs[2]!.call(hosts[1]!.peerId, 'markers.get', { stateHash: '../etc' }), ErrorCode.INVALID_INPUT)
    await expectRbtError(rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: state(4), record: { txid: 1 } as never }), ErrorCode.INVALID_INPUT)
    const res = await rpcs[2]!.call(hosts[1]!.peerId, 'markers.get', { stateHash: state(4) })
    expect(res.record).to.equal(undefined)
    expect(await markers[2]!.lookup(state(4))).to.equal(undefined)
  })

  it('gossips a marker only when the record store left a node of the network without it', async () => {
    const heard = new Map<string, number>()
    const unsubscribe = hosts.map((h) => h.subscribe(SPENT_TOPIC, (msg) => {
      const { stateHash } = JSON.parse(new TextDecoder().decode(msg.data)) as { stateHash: string }
      heard.set(stateHash, (heard.get(stateHash) ?? 0) + 1)
    }))
    // a node that subscribes to the topic but does not serve the record protocol (an older node)
    const [old] = await startHosts(1)
    try {
      old!.subscribe(SPENT_TOPIC, () => {})
      await waitFor('gossip meshes', () => hosts.slice(1).every((h) => h.topicPeers(SPENT_TOPIC).includes(hosts[0]!.peerId)), 10_000)
      await markers[0]!.publish(state(6), { txid: 'tx6', blockId: 'b6', quorum: QUORUM })
      for (let i = 1; i < N; i++) expect((await markers[i]!.known(state(6)))?.txid).to.equal('tx6')
      // every node stored it: a probe message published after it arrives, the marker never does
      await hosts[0]!.publish(SPENT_TOPIC, new TextEncoder().encode(JSON.stringify({ stateHash: 'probe' })))
      await waitFor('the probe', () => (heard.get('probe') ?? 0) >= N - 1, 10_000)
      expect(heard.get(state(6))).to.equal(undefined)

      await connect(hosts[0]!, old!)
      await waitFor('the old node subscribed', () => hosts[0]!.topicPeers(SPENT_TOPIC).includes(old!.peerId), 10_000)
      await markers[0]!.publish(state(7), { txid: 'tx7', blockId: 'b7', quorum: QUORUM })
      await waitFor('the gossip', () => (heard.get(state(7)) ?? 0) >= N - 1, 10_000)
    } finally {
      unsubscribe.forEach((u) => { u() })
      await old!.stop()
    }
  })

  it('a backup publisher stores its marker only when the first publisher\'s did not reach it', async () => {
    const backupSigns = (): number => signed.filter((d) => d === QUORUM2).length
    // the first publisher is down: the backup signs and stores the record after its wait
    await markers[1]!.publish(state(8), { txid: 'tx8', blockId: 'b8', quorum: QUORUM2 }, { backup: true })
    for (const i of [0, 2, 3, 4]) expect((await markers[i]!.known(state(8)))?.quorum, `node ${i}`).to.equal(QUORUM2)
    expect(backupSigns()).to.equal(1)
    // the first publisher stored it everywhere: the backup neither signs nor stores a second record
    await markers[0]!.publish(state(9), { txid: 'tx9', blockId: 'b9', quorum: QUORUM })
    await stores[3]!.collection('spent-markers').del(state(9))
    await markers[1]!.publish(state(9), { txid: 'tx9', blockId: 'b9', quorum: QUORUM2 }, { backup: true })
    expect(await markers[3]!.known(state(9)), 'no second store').to.equal(undefined)
    expect((await markers[1]!.known(state(9)))?.quorum, 'the backup holds the first publisher\'s record').to.equal(QUORUM)
    expect(backupSigns()).to.equal(1)
    // the first publisher's marker arrives while the backup waits
    const backup = markers[1]!.publish(state(10), { txid: 'tx10', blockId: 'b10', quorum: QUORUM2 }, { backup: true })
    await new Promise((resolve) => setTimeout(resolve, 20))
    await markers[0]!.publish(state(10), { txid: 'tx10', blockId: 'b10', quorum: QUORUM })
    await stores[3]!.collection('spent-markers').del(state(10))
    await backup
    expect(await markers[3]!.known(state(10)), 'no second store').to.equal(undefined)
    expect(backupSigns(), 'no signature for a marker it did not store').to.equal(1)
    // a forged marker in the first publisher's name does not silence the backup
    const forged = markers[1]!.publish(state(11), { txid: 'tx11', blockId: 'b11', quorum: QUORUM2 }, { backup: true })
    await new Promise((resolve) => setTimeout(resolve, 20))
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: state(11), record: { txid: 'tx11', blockId: 'b11', quorum: QUORUM, sig: 'forged' } })
    await forged
    expect((await markers[3]!.known(state(11)))?.quorum).to.equal(QUORUM2)
    expect(backupSigns()).to.equal(2)
  })

  it('the walks of states stored or looked up together ask each peer once per round, and an older peer one state at a time', async () => {
    const states = Array.from({ length: 16 }, (_v, k) => state(100 + k))
    calls.length = 0
    await Promise.all(states.map(async (s, k) => { await markers[0]!.publish(s, { txid: `tx${100 + k}`, blockId: 'b', quorum: QUORUM }) }))
    for (let i = 1; i < N; i++) expect((await markers[i]!.known(states[15]!))?.txid, `node ${i}`).to.equal('tx115')
    const puts = calls.filter((c) => c.from === 0)
    const requests = (cs: typeof calls, to: string, one: string, many: string): { requests: number, batches: number, states: number } => {
      const mine = cs.filter((c) => c.to === to && (c.method === one || c.method === many))
      return { requests: mine.length, batches: mine.filter((c) => c.method === many).length, states: mine.reduce((n, c) => n + c.states, 0) }
    }
    // node 0 knows every peer: each other peer gets all 16 states in a few requests (a walk starts
    // once its state's own record is written, so the states come in a few turns, a turn's lone
    // request as a single one); the older node gets 16 single stores
    for (const [i, h] of hosts.entries()) {
      if (i === 0 || i === OLD) continue
      const r = requests(puts, h.peerId, 'markers.put', 'markers.putMany')
      expect(r.states, `states stored on node ${i}`).to.equal(16)
      expect(r.batches, `batches to node ${i}`).to.be.at.least(1)
      expect(r.requests, `requests to node ${i}, not one per state`).to.be.at.most(8)
    }
    expect(puts.filter((c) => c.method === 'markers.put' && c.to === hosts[OLD]!.peerId)).to.have.length(16)

    // node 4 lost them: its 16 lookups run as batched walks and find every record
    for (const s of states) await stores[4]!.collection('spent-markers').del(s)
    calls.length = 0
    const found = await Promise.all(states.map(async (s) => await markers[4]!.lookup(s)))
    expect(found.map((f) => f?.txid)).to.deep.equal(states.map((_s, k) => `tx${100 + k}`))
    const gets = calls.filter((c) => c.from === 4)
    const asked = hosts.filter((_h, i) => i !== 4 && i !== OLD).map((h) => requests(gets, h.peerId, 'markers.get', 'markers.getMany'))
    // one walk per state asked each peer it knew once: 16 requests to a peer; batched, a few per peer and round
    expect(asked.reduce((n, r) => n + r.batches, 0), 'batches').to.be.at.least(1)
    for (const r of asked) expect(r.requests, 'requests to a peer, not one per state').to.be.at.most(4)
  })

  it('refuses a batch naming no states, too many, or a malformed one', async () => {
    await expectRbtError(rpcs[2]!.call(hosts[1]!.peerId, 'markers.getMany', { stateHashes: [] }), ErrorCode.INVALID_INPUT)
    await expectRbtError(rpcs[2]!.call(hosts[1]!.peerId, 'markers.getMany', { stateHashes: Array(65).fill(state(1)) }), ErrorCode.INVALID_INPUT)
    await expectRbtError(rpcs[2]!.call(hosts[1]!.peerId, 'markers.getMany', { stateHashes: [state(1), '../x'] }), ErrorCode.INVALID_INPUT)
    await expectRbtError(rpcs[2]!.call(hosts[1]!.peerId, 'markers.putMany', { items: [{ stateHash: state(1), record: { txid: 1 } as never }] }), ErrorCode.INVALID_INPUT)
    await markers[0]!.publish(state(20), { txid: 'tx20', blockId: 'b20', quorum: QUORUM })
    const res = await rpcs[2]!.call(hosts[1]!.peerId, 'markers.getMany', { stateHashes: [state(20), state(4)] })
    expect(res.answers.map((a) => a.record?.txid)).to.deep.equal(['tx20', undefined])
    expect(res.answers[0]!.closer.every((id) => Array.isArray(res.addrs[id]))).to.equal(true)
  })

  it('does not serve markers known only from a batch (their signature covers the whole batch)', async () => {
    const s = state(5)
    await markers[0]!.publishBatch!(QUORUM, 'tx5', [{ stateHash: s, blockId: 'b5' }])
    expect((await markers[0]!.known(s))?.txid).to.equal('tx5')
    const res = await rpcs[2]!.call(hosts[0]!.peerId, 'markers.get', { stateHash: s })
    expect(res.record).to.equal(undefined)
  })

  it('two verified markers naming different transactions for one state: the node holding one is told both; a forged one tells nothing', async () => {
    const s = state(30)
    await markers[0]!.publish(s, { txid: 'tx30', blockId: 'b30', quorum: QUORUM })
    conflicts.length = 0
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: s, record: { txid: 'forged', blockId: 'b', quorum: QUORUM, sig: 'nope' } })
    expect(conflicts).to.deep.equal([])
    const m = { txid: 'tx30-other', blockId: 'b31', quorum: QUORUM2 }
    await rpcs[2]!.call(hosts[1]!.peerId, 'markers.put', { stateHash: s, record: { ...m, sig: sign(QUORUM2, markerDigest(s, m)) } })
    expect(conflicts).to.deep.equal([{ node: 1, stateHash: s, held: 'tx30', other: 'tx30-other' }])
    // the first stays the one that counts
    expect((await markers[1]!.known(s))?.txid).to.equal('tx30')
  })

  it('drops a gossiped batch naming more states than the cap before any read or signature check', async () => {
    const items = Array.from({ length: MARKER_BATCH_STATES_MAX + 1 }, (_x, n) => ({ stateHash: state(100_000 + n), blockId: 'bx' })).sort((a, b) => a.stateHash < b.stateHash ? -1 : 1)
    const before = verifyCalls
    await markers[1]!.receive(new TextEncoder().encode(JSON.stringify({ batch: { quorum: QUORUM, txid: 'txbig', items, sig: 'whatever' } })))
    expect(verifyCalls).to.equal(before)
    expect(await markers[1]!.known(items[0]!.stateHash)).to.equal(undefined)
  })
})
