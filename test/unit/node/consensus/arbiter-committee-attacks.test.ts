import { expect } from 'chai'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { ArbiterCommittee } from '../../../../src/node/consensus/arbiter-committee.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import { countCommittee, type KeptRegistration } from '../../../../src/consensus/arbiter-registration.js'
import { peerSigner, verifyPeerSignature } from '../../../../src/p2p/peer-signature.js'
import { buildBundle } from '../../../../src/consensus/bundle.js'
import { ClaimTable, claimThreshold, CLAIM_ARBITERS } from '../../../../src/consensus/claims.js'
import { peerSealBytes, type PeerSeal } from '../../../../src/consensus/claim-proofs.js'
import { nodeStateClaims } from '../../../../src/node/consensus/state-claims.js'
import type { ArbiterView } from '../../../../src/node/consensus/arbiter-view.js'
import type { NodeSpentMarkers } from '../../../../src/node/consensus/spent-markers.js'
import { spentKeyBytes } from '../../../../src/node/consensus/spent-markers.js'
import type { P2pHost } from '../../../../src/p2p/host.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { compareDistance, kadKey, kadPeerKey } from '../../../../src/p2p/closest-query.js'
import { didSignatureVerifier } from '../../../../src/tokens/verifier.js'
import { silentLogger } from '../../../../src/util/logger.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { bytesToHex } from '../../../../src/wallet/bytes.js'
import { memoryClaimStore, twoQuorumSets, type SimDid, type SimNet, type SimNode } from '../../consensus/harness.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'

/**
 * The arbiter committee read as the cheating owner would (issue 51, case 5): each test names the
 * hole it shows. They are written against what the committee must hold, so each failed on the
 * commit that built the committee.
 */

type Probe = (items: Array<{ stateHash: string, holder: string }>) => Promise<{ refused?: string }>

interface Ctx { net: SimNet, node: SimNode, did: SimDid, peer: string, sign: (d: Uint8Array) => Promise<Uint8Array> }

const committeeOf = (net: SimNet, o: { selfPeer?: string, sign?: (d: Uint8Array) => Promise<Uint8Array>, probe?: Probe, now?: () => number, addrs?: string[] } = {}): ArbiterCommittee => new ArbiterCommittee({
  col: memoryCollection<any>(), // eslint-disable-line @typescript-eslint/no-explicit-any
  host: () => ({ peerId: o.selfPeer ?? 'self', signAsPeer: o.sign ?? (async () => new Uint8Array(64)), addrs: () => o.addrs ?? [], learn: async () => {}, connected: () => [] }),
  testNet: true,
  rpc: () => undefined,
  verifier: didSignatureVerifier({ resolve: async (did) => net.docs.get(did) }),
  verifyPeer: verifyPeerSignature,
  probe: o.probe ?? (async () => ({})),
  log: silentLogger,
  maturityMs: 0,
  graceMs: 0,
  recheckMs: 0,
  pullMs: 0,
  ...(o.now !== undefined ? { now: o.now } : {})
})

async function peerKey (): Promise<{ peer: string, sign: (d: Uint8Array) => Promise<Uint8Array> }> {
  const key = await generateKeyPair('Ed25519')
  return { peer: peerIdFromPrivateKey(key).toString(), sign: peerSigner(key) }
}

/** `c`'s DID registers its token `token` (at its latest block on `c.node`) from its own node; the registration as offered. */
async function registerOn (c: Ctx, token: string, o: { now?: () => number, addrs?: string[] } = {}): Promise<WireRegistration> {
  const own = committeeOf(c.net, { selfPeer: c.peer, sign: c.sign, ...o })
  const t = (await c.node.ledger.tokensById([token]))[0]!
  const reg = await own.register(c.did.quorum, [{ token, block: t.latestBlockId }], await buildBundle(c.node.ledger, [token], { levels: 0 }))
  return own.list().find((w) => w.reg.at === reg.at && w.reg.did === reg.did)!
}

describe('node: the arbiter committee against the cheating owner', function () {
  this.timeout(120_000)

  it('HOLE stake-at-genesis: a stake still at its genesis block and then paid away is found spent by the probe (on registration and at the next recheck)', async () => {
    // the probe asks about tokenStateHash(token, latest block id), but claims (and the seals the
    // probe reads) key a token at its genesis on GENESIS_ANCHOR (and a token past owner-only
    // blocks on its last quorum-signed block): the probe asks about a state nobody ever claims,
    // so a freshly minted stake is never found spent and its seat never lapses
    const n = await twoQuorumSets(true)
    const mallory = await n.net.addDid(n.x)
    const [tok] = await n.net.mint(n.x, mallory.did, 1)
    const { peer, sign } = await peerKey()
    const ctx: Ctx = { net: n.net, node: n.x, did: mallory, peer, sign }
    const wire = await registerOn(ctx, tok!)
    // the network's earlier-seals check, as the node wires it for the stake probe
    const probe = n.net.claimsFor('q0').priorSeals!
    const before = committeeOf(n.net, { probe })
    expect(await before.receive(wire, 'p')).to.equal(undefined)
    // the stake is paid away through honest quorums: claimed, sealed and committed at every arbiter
    const r = await n.x.sender.transfer({ sender: mallory.did, receiver: n.bob.did, amountMilli: 1000, memo: 'stake', quorums: n.set1 }, mallory.owner)
    expect(r.delivered).to.equal(true)
    // a node that saw the registration before the spend: the next probe lapses the seat
    await before.recheck()
    expect(before.view().find((v) => v.did === mallory.did)?.state, 'the seat stands on a spent stake').to.equal('lapsed')
    // a node that sees it only now refuses it
    const after = committeeOf(n.net, { probe })
    expect(await after.receive(wire, 'p'), 'a paid-away stake taken').to.match(/stake is spent/)
  })

  // Open: the probe reads the arbiters' claim records, not spent markers, because a marker may be
  // signed by any DID and would let a stranger's marker refuse honest seats. Every rbtnode node
  // claims, so a markers-only spend is one of old nodes; docs/security.md, "The arbiter committee".
  it.skip('HOLE stake spent where no claim was made: a stake paid away through quorums that keep only spent markers (old nodes, or before claims) is found spent', async () => {
    // the probe reads the arbiters' claim records only; a transfer signed by quorums without claims
    // (an upgrade without a flag day keeps them signing) leaves a verified spent marker and no
    // record, so the former owner's registration, its chain shown up to his own block, is taken
    // and his seat stands on a token he no longer holds
    const n = await twoQuorumSets(false)
    const mallory = await n.net.addDid(n.x)
    const [tok] = await n.net.mint(n.x, mallory.did, 1)
    const wire = await registerOn({ net: n.net, node: n.x, did: mallory, ...(await peerKey()) }, tok!)
    const r = await n.x.sender.transfer({ sender: mallory.did, receiver: n.bob.did, amountMilli: 1000, memo: 'stake', quorums: n.set1 }, mallory.owner)
    expect(r.delivered).to.equal(true)
    const c = committeeOf(n.net, { probe: n.net.claimsFor('q0').priorSeals! })
    expect(await c.receive(wire, 'p'), 'a stake spent with markers only taken').to.not.equal(undefined)
  })

  it('HOLE stale-prefix eviction: the former owner of a token, showing its chain only up to his block with a backdated time, does not take the seat of the token\'s current owner', async () => {
    // countCommittee gives a token to the registration with the earliest `at`, which the
    // registrant writes (only the future is bounded): the token's former owner shows the chain up
    // to his own block (validated: it is a true prefix) and an `at` older than the current owner's,
    // and the current owner's seat is no longer counted. A later block of the token's chain proves
    // the earlier state spent, whatever the probe finds
    const n = await twoQuorumSets(false)
    const mallory = await n.net.addDid(n.x)
    const honest = await n.net.addDid(n.bobNode)
    const [tok] = await n.net.mint(n.x, mallory.did, 1)
    const mk = await peerKey()
    const hk = await peerKey()
    // the prefix: the chain as it stood while Mallory held the token, kept before paying it away
    let clock = 1_000_000
    const mWire = await registerOn({ net: n.net, node: n.x, did: mallory, ...mk }, tok!, { now: () => clock })
    const r = await n.x.sender.transfer({ sender: mallory.did, receiver: honest.did, amountMilli: 1000, memo: 'pay', quorums: n.set1 }, mallory.owner)
    expect(r.delivered).to.equal(true)
    clock = 2_000_000
    const hWire = await registerOn({ net: n.net, node: n.bobNode, did: honest, ...hk }, tok!, { now: () => clock })
    expect(hWire.reg.stake[0]!.block).to.not.equal(mWire.reg.stake[0]!.block)
    // three more honest seats, so the committee is in force
    const others: WireRegistration[] = []
    for (let i = 0; i < 3; i++) {
      const q = n.net.nodeOf(n.set2[i]!)
      const d = q.dids.get(n.set2[i]!)!
      const [t] = await n.net.mint(q, d.did, 1)
      others.push(await registerOn({ net: n.net, node: q, did: d, ...(await peerKey()) }, t!, { now: () => clock }))
    }
    // a node whose stake probe finds nothing held (the spend was claimed at other arbiters, or
    // before claims): it takes both registrations, each chain validates
    const c = committeeOf(n.net, { now: () => 3_000_000 })
    for (const w of [hWire, ...others, mWire]) expect(await c.receive(w, `p${w.reg.did}`)).to.equal(undefined)
    const seated = c.members().map((m) => m.did)
    expect(seated, 'the current owner\'s seat is not counted').to.include(honest.did)
    expect(seated, 'the former owner sits on a token he paid away').to.not.include(mallory.did)
  })

  it('HOLE unbounded registrations: one DID and one token, registered again and again, are one seat and one stored registration, and do not push the honest seats out of the lists new nodes pull', async () => {
    // every registration with a new `at` is a new digest, verified and kept for good (memory, disk,
    // a probe of each at every recheck); `list()` answers the newest 1,024, so an attacker's
    // 1,024 fresh registrations of one DID hide every older honest seat from a node that joins
    const n = await twoQuorumSets(false)
    const mallory = await n.net.addDid(n.x)
    const [tok] = await n.net.mint(n.x, mallory.did, 1)
    const mk = await peerKey()
    let probes = 0
    const c = committeeOf(n.net, { probe: async () => { probes++; return {} } })
    const honest: WireRegistration[] = []
    let clock = 1_000_000
    for (let i = 0; i < 4; i++) {
      const q = n.net.nodeOf(n.set1[i]!)
      const d = q.dids.get(n.set1[i]!)!
      const [t] = await n.net.mint(q, d.did, 1)
      honest.push(await registerOn({ net: n.net, node: q, did: d, ...(await peerKey()) }, t!, { now: () => clock }))
    }
    for (const w of honest) expect(await c.receive(w, 'h')).to.equal(undefined)
    const seats = c.seats()
    expect(seats).to.have.length(4)
    const own = committeeOf(n.net, { selfPeer: mk.peer, sign: mk.sign, now: () => clock })
    const t = (await n.x.ledger.tokensById([tok!]))[0]!
    const bundle = await buildBundle(n.x.ledger, [tok!], { levels: 0 })
    const SPAM = 1030
    for (let i = 0; i < SPAM; i++) {
      clock++
      const reg = await own.register(mallory.quorum, [{ token: tok!, block: t.latestBlockId }], bundle)
      const w = own.list().find((x) => x.reg.at === reg.at)!
      await c.receive(w, `sybil-${i}`)
    }
    const kept = c.view().filter((v) => v.did === mallory.did).length
    probes = 0
    await c.recheck()
    // a node that joins and pulls c's list
    const fresh = committeeOf(n.net, { now: () => clock + 1 })
    for (const [i, w] of c.list().entries()) await fresh.receive(w, `pull-${i % 500}`)
    expect(kept, 'registrations of one DID kept').to.be.at.most(2)
    expect(probes, 'stake probes at a recheck (four honest seats and one DID)').to.be.at.most(4 + 2)
    expect(fresh.seats() ?? [], 'the honest seats a joining node learns from a list').to.include.members(seats!)
  })

  it('HOLE fallback to peer ids: one seat of four leaving (f = 1: one liar is within the bound) does not turn the claims back to counting free peer ids', async () => {
    // below COMMITTEE_MIN seats `seats()` is undefined and every path counts the peers of the view
    // again, Sybils included: the owner holding one of four seats leaves (or spends his stake and
    // lapses), and the Sybil attack of case 5 is open again on every node, with no flag to show it
    const n = await twoQuorumSets(false)
    const c = committeeOf(n.net)
    let clock = 1_000_000
    let last: { ctx: Ctx, own: ArbiterCommittee } | undefined
    for (let i = 0; i < 4; i++) {
      const q = n.net.nodeOf(n.set1[i]!)
      const d = q.dids.get(n.set1[i]!)!
      const [t] = await n.net.mint(q, d.did, 1)
      const ctx: Ctx = { net: n.net, node: q, did: d, ...(await peerKey()) }
      const w = await registerOn(ctx, t!, { now: () => clock })
      expect(await c.receive(w, 'p')).to.equal(undefined)
      if (i === 3) { last = { ctx, own: committeeOf(n.net, { selfPeer: ctx.peer, sign: ctx.sign, now: () => clock }) }; await last.own.receive(w, 'p') }
    }
    expect(c.seats()).to.have.length(4)
    clock++
    await last!.own.register(last!.ctx.did.quorum, [], { chains: {}, contents: {} }, true)
    const leave = last!.own.list().find((x) => x.reg.leave === true)!
    expect(await c.receive(leave, 'p')).to.equal(undefined)
    expect(c.seats(), 'the claims count the peers of the view again').to.not.equal(undefined)
  })

  it('HOLE unsigned addresses: a registration relayed first by a stranger with addresses of his own does not make nodes dial him for the seat', async () => {
    // the addresses ride outside both signatures; the first copy of a registration a node checks
    // is kept with its addresses (later copies are `kept.has(key)` and dropped), and a committee
    // in force asks each seat directly at the addresses `addrsOf` gives
    const n = await twoQuorumSets(false)
    const q = n.net.nodeOf(n.set1[0]!)
    const d = q.dids.get(n.set1[0]!)!
    const [t] = await n.net.mint(q, d.did, 1)
    const k = await peerKey()
    const real = `/ip4/127.0.0.1/tcp/4001/p2p/${k.peer}`
    const wire = await registerOn({ net: n.net, node: q, did: d, ...k }, t!, { addrs: [real] })
    const c = committeeOf(n.net)
    const fake = '/ip4/127.0.0.1/tcp/6666/p2p/12D3KooWRkGLz4YbVmrsWK75VjFTs8s6JBE7NAbJMk5wERPJXv2Y'
    expect(await c.receive({ ...wire, addrs: [fake] }, 'stranger')).to.equal(undefined)
    await c.receive(wire, k.peer)
    expect(c.addrsOf(k.peer), 'the stranger\'s addresses are dialled for the seat').to.not.include(fake)
  })

  it('HOLE repeated refusals: a registration refused once is not checked (chains, signatures, a probe of 20 arbiters) again on every offer', async () => {
    const n = await twoQuorumSets(false)
    const mallory = await n.net.addDid(n.x)
    const [tok] = await n.net.mint(n.x, mallory.did, 1)
    const wire = await registerOn({ net: n.net, node: n.x, did: mallory, ...(await peerKey()) }, tok!)
    let probes = 0
    const c = committeeOf(n.net, { probe: async () => { probes++; return { refused: 'held for transaction ff' } } })
    for (let i = 0; i < 50; i++) expect(await c.receive(wire, `sybil-${i}`)).to.match(/stake is spent/)
    expect(probes, 'probes run for one refused registration offered by 50 peers').to.be.at.most(1)
  })
})

describe('consensus: counting the committee against a former owner\'s fork', () => {
  it('HOLE owner-only fork: a former owner\'s old state with owner-only blocks appended (a higher tip number) does not take the token from its current owner', () => {
    // owner-only blocks (pledged, unpledged, contract committed) need only the owner's signature and
    // are valid anywhere in an RBT chain: the owner of a token at block 3, paid away at block 4,
    // appends ten of them to block 3 and shows a chain that validates and ends at block 13. Its
    // spend anchor is still block 3: compared by anchors, the current owner's block 4 is newer
    const did = (i: number): string => `bafybmi${String(i).padStart(52, 'a').replace(/[^a-z2-7]/g, 'b')}`
    const peer = (i: number): string => `12D3KooW${String(i).padStart(44, 'A').replace(/0/g, 'z')}`
    const token = (i: number): string => `Qm${String(i).padStart(44, 'T').replace(/0/g, 'x')}`
    const blk = (n: number, c = 'ab'): string => `${n}-${c.repeat(32)}`
    const k = (i: number, stake: string, at: number, anchor?: string): KeptRegistration => ({ reg: { v: 1, did: did(i), peer: peer(i), stake: [{ token: i === 1 ? token(9) : i === 2 ? token(9) : token(i), block: stake }], at, sig: 'aa', peerSig: 'bb' }, seen: 0, verified: true, ...(anchor !== undefined ? { anchors: [anchor] } : {}) })
    const current = k(2, blk(4), 5_000, blk(4))
    const fork = k(1, blk(13, 'cd'), 500, blk(3))
    const others = [k(3, blk(0), 1_000), k(4, blk(0), 1_000), k(5, blk(0), 1_000)]
    const seated = countCommittee([current, fork, ...others], 10_000, { maturityMs: 0, graceMs: 0 }).map((m) => m.did)
    expect(seated).to.include(did(2))
    expect(seated).to.not.include(did(1))
  })
})

describe('node: the committee\'s claims against ground seat ids', function () {
  this.timeout(120_000)

  it('HOLE ground seat ids: 14 of 50 seats (fewer than a third) do not make a certificate of a state alone', async () => {
    // a state's arbiters are the 20 seats whose peer ids are closest to its key; the registrant
    // picks the peer id (and may register again with another one, counted after the grace delay
    // with a backdated `at`), so an owner with a handful of seats grinds ids next to the state he
    // is about to spend and holds q(20) = 14 of its 20 arbiters: the bound on liars holds over the
    // committee, not over each state's arbiters
    const honest = await Promise.all(Array.from({ length: 36 }, async () => (await peerKey()).peer))
    const stateHash = sha3Hex('a state the owner is about to spend twice')
    const target = kadKey(spentKeyBytes(stateHash))
    const ground: Array<{ peer: string, sign: (d: Uint8Array) => Promise<Uint8Array>, key: Uint8Array }> = []
    for (let i = 0; i < 1500; i++) {
      const k = await peerKey()
      ground.push({ ...k, key: kadPeerKey(k.peer) })
    }
    const mine = ground.sort((a, b) => compareDistance(target, a.key, b.key)).slice(0, 14)
    const seats = [...honest, ...mine.map((m) => m.peer)]
    expect(mine.length * 3).to.be.lessThan(seats.length)
    const claims = nodeStateClaims({
      host: () => ({ peerId: honest[0]! }) as unknown as P2pHost,
      rpc: () => undefined,
      table: new ClaimTable(memoryClaimStore(), { now: () => Date.now() }),
      view: {} as unknown as ArbiterView,
      markers: {} as unknown as NodeSpentMarkers,
      verifier: { verify: async () => false },
      quorumSigner: () => undefined,
      outcome: async () => 'pending',
      log: silentLogger,
      committee: () => seats
    })
    const holder = sha3Hex('the owner\'s second spend')
    const seals: PeerSeal[] = await Promise.all(mine.map(async (m) => ({ peer: m.peer, holder, states: [stateHash], sig: bytesToHex(await m.sign(peerSealBytes({ peer: m.peer, holder, states: [stateHash] }))) })))
    const r = await claims.checkSeals!([{ stateHash, holder }], seals)
    expect(claimThreshold(CLAIM_ARBITERS)).to.equal(14)
    expect(r.granted, 'the owner\'s 14 seats certified the state alone').to.equal(false)
  })

  // Open: while no committee is in force (a network's start), the stake probe asks the peers of the
  // view and their unsigned answers count; docs/security.md, "The arbiter committee".
  it.skip('HOLE unsigned refusals: peer ids anyone can run do not get an honest stake refused (or an honest seat lapsed for good) while the committee is below its minimum', async () => {
    // the stake probe is priorSeals: below COMMITTEE_MIN its arbiters are the view's peers, and an
    // answer `sealed: false, holder: X` counts against the stake with no signature; 13 of 20
    // ground ids next to the stake's state refuse every honest registration (the committee never
    // forms but for the owner's own seats, whose probes pass) and lapse, for good, the seats that
    // stand while fewer than four do
    const self = (await peerKey()).peer
    const sybils = await Promise.all(Array.from({ length: 20 }, async () => (await peerKey()).peer))
    const rpc = { call: async (_peer: string, method: string, req: { items: unknown[] }) => method === 'claims.seal' ? { answers: req.items.map(() => ({ sealed: false, holder: 'ab'.repeat(32) })) } : {} } as unknown as RpcClient<never>
    const claims = nodeStateClaims({
      host: () => ({ peerId: self, closestKnownPeers: () => [] }) as unknown as P2pHost,
      rpc: () => rpc as never,
      table: new ClaimTable(memoryClaimStore(), { now: () => Date.now() }),
      view: { closest: () => sybils.map((p) => ({ peerId: p, multiaddrs: [] })) } as unknown as ArbiterView,
      markers: {} as unknown as NodeSpentMarkers,
      verifier: { verify: async () => true },
      quorumSigner: () => undefined,
      outcome: async () => 'pending',
      log: silentLogger,
      committee: () => undefined
    })
    const r = await claims.priorSeals!([{ stateHash: sha3Hex('an honest stake'), holder: sha3Hex('the probe') }])
    expect(r.refused, 'an honest stake refused on unsigned words of free peer ids').to.equal(undefined)
  })

  it('HOLE release misses the seats: a quorum\'s signed release goes to the state\'s committee arbiters', async () => {
    // release() still sends to the view's closest peers and the routing table's; with a
    // committee in force the claims were made at the seats, which then keep the state claimed
    // until their sweep asks the claimant (30 s and more): an honest retry is refused meanwhile
    const seats = await Promise.all(Array.from({ length: 6 }, async () => (await peerKey()).peer))
    const self = (await peerKey()).peer
    const asked = new Set<string>()
    const rpc = { call: async (peer: string, method: string) => { if (method === 'claims.release') asked.add(peer); return { freed: 0 } } } as unknown as RpcClient<never>
    const claims = nodeStateClaims({
      host: () => ({ peerId: self, closestKnownPeers: () => [] }) as unknown as P2pHost,
      rpc: () => rpc as never,
      table: new ClaimTable(memoryClaimStore(), { now: () => Date.now() }),
      view: { closest: () => [] } as unknown as ArbiterView,
      markers: {} as unknown as NodeSpentMarkers,
      verifier: { verify: async () => true },
      quorumSigner: () => undefined,
      outcome: async () => 'pending',
      log: silentLogger,
      committee: () => seats
    })
    await claims.release(sha3Hex('tx'), 'bafybmiquorum', [sha3Hex('state')], { nonce: '00'.repeat(16), sig: 'ab' })
    expect([...asked], 'seats sent the release').to.include.members(seats)
  })
})
