import { expect } from 'chai'
import { silentLogger } from '../../../../src/util/logger.js'
import { GRACE, MATURITY, claimsAt, committeeOf, fourSeats, peerKey } from './committee-fixture.js'
import { nodeStateClaims } from '../../../../src/node/consensus/state-claims.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { MemoryLedger } from '../../consensus/harness.js'
import { CertificateEvidence, type GrantCheck, type KeptGrant } from '../../../../src/consensus/certificate-evidence.js'

/**
 * A second reading of the committee as the cheating owner would read it, after "a committee once
 * in force stays in force" and "a seat's addresses only from its own peer". Each test names the
 * hole it shows and failed on the commit it was written against.
 */

describe('node: the arbiter committee, second review (in force, addresses)', function () {
  this.timeout(120_000)

  it('HOLE in force by chance: two honest nodes that saw the same registrations at the same times agree on whether the committee is in force', async () => {
    // `~in-force` is written only when `seats()` happens to be called while 4 seats are counted. The
    // owner holds the fourth seat: its join matures at T + 10 min on every node, and he sends his
    // leave a moment later (a leave removes the join from the store as soon as it is taken, see the
    // next test). A node that answered a claim in that moment (the owner sends it one) records "in
    // force" for good and counts the 3 seats left; a node that was idle then never does and counts
    // the peers of its view, Sybils ground next to a state's key included, for good. The owner then
    // pays one receiver on the first node with a certificate of the seats and another on the second
    // with seals of his Sybils: paid twice.
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    const a = committeeOf(n, { now, maturityMs: MATURITY, graceMs: GRACE })
    const b = committeeOf(n, { now, maturityMs: MATURITY, graceMs: GRACE })
    for (const w of wires) { expect(await a.receive(w, 'p')).to.equal(undefined); expect(await b.receive(w, 'p')).to.equal(undefined) }
    await last.own.receive(wires[3]!, 'p')
    // the moment the four joins count, before the leave is sent
    clock = wires[3]!.reg.at + MATURITY
    expect(a.seats(), 'node a, asked in that moment').to.have.length(4)
    clock += 1
    await last.own.register(last.ctx.did.quorum, [], { chains: {}, contents: {} }, true)
    const leave = last.own.list().find((x) => x.reg.leave === true)!
    expect(await a.receive(leave, 'p')).to.equal(undefined)
    expect(await b.receive(leave, 'p')).to.equal(undefined)
    // both nodes later, holding the same registrations
    clock += MATURITY + GRACE
    expect(a.seats(), 'node a counts the seats left').to.have.length(3)
    expect(b.seats(), 'node b, idle in that moment, counts the same arbiters as node a (not the peers of its view)').to.deep.equal(a.seats())
  })

  it('HOLE leave at once: a leave (or a replacement) takes the seat away only once matured, not as soon as a node holds it', async () => {
    // docs/protocol.md: "A replacement or a leave counts, like a join, once matured, so nodes that
    // saw it early and late switch together". But `verify` deletes the DID's earlier registrations
    // as soon as the leave is taken, so the seat is gone at once on the nodes that have the leave
    // and stays on those that have not: the owner shows his leave to some nodes (he cuts links) and
    // the honest nodes count different committees (in force on some, peers on others, and with
    // the in-force record, for good: the previous test)
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const a = committeeOf(last.ctx.net, { now, maturityMs: MATURITY, graceMs: GRACE })
    for (const w of wires) expect(await a.receive(w, 'p')).to.equal(undefined)
    await last.own.receive(wires[3]!, 'p')
    clock += MATURITY + GRACE
    expect(a.seats()).to.have.length(4)
    await last.own.register(last.ctx.did.quorum, [], { chains: {}, contents: {} }, true)
    const leave = last.own.list().find((x) => x.reg.leave === true)!
    expect(await a.receive(leave, 'p')).to.equal(undefined)
    clock += 1_000
    expect(a.seats(), 'the leave, a second old, does not count yet').to.have.length(4)
  })

  it('HOLE a node that joins late: a node started after one seat of four left counts the same arbiters as the nodes on which the committee was in force', async () => {
    // the in-force record is local (never carried by a registration or a list): a node installed,
    // or its store wiped, after the committee shrank below 4 counts the peers of its view for good,
    // while every older node counts the 3 seats. The owner (one seat of four) leaves, then pays a
    // receiver on an old node through the seats and a receiver on the new node through his Sybils.
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const old = committeeOf(last.ctx.net, { now })
    for (const w of wires) expect(await old.receive(w, 'p')).to.equal(undefined)
    expect(old.seats()).to.have.length(4)
    await last.own.receive(wires[3]!, 'p')
    clock += 1
    await last.own.register(last.ctx.did.quorum, [], { chains: {}, contents: {} }, true)
    const leave = last.own.list().find((x) => x.reg.leave === true)!
    expect(await old.receive(leave, 'p')).to.equal(undefined)
    expect(old.seats(), 'the old node counts the 3 seats left').to.have.length(3)
    const fresh = committeeOf(last.ctx.net, { now })
    // what a pull of the old node's list (`arbiters.list`) hands the new one
    await fresh.take(old.listAnswer(), 'old')
    expect(fresh.seats(), 'the new node counts the same arbiters as the old one').to.deep.equal(old.seats())
  })

  it('HOLE seat unreachable: a seat learnt through an honest relay (never connected to this node) has addresses to be dialled at', async () => {
    // addresses are now kept only from the seat's own peer, so a node that learns a seat from its
    // lists (the way a joining node learns every seat) and is not connected to it keeps none, and
    // with the committee in force the claim asks that seat at no address (a dial by id alone, which
    // needs a peer routing the node may not have). A wrong address costs one failed dial (the
    // handshake proves the peer id), so a relay's addresses were a hint, not a trust: a node that
    // cannot reach f + 1 seats refuses every claim (CLAIM_UNREACHABLE)
    const clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const relay = committeeOf(last.ctx.net, { now })
    const s2 = { ...wires[0]!, addrs: [`/ip4/127.0.0.1/tcp/4001/p2p/${wires[0]!.reg.peer}`] }
    expect(await relay.receive(s2, s2.reg.peer)).to.equal(undefined)
    const joining = committeeOf(last.ctx.net, { now })
    for (const w of relay.list()) expect(await joining.receive(w, 'relay')).to.equal(undefined)
    expect(joining.addrsOf(s2.reg.peer), 'a seat known from an honest list has an address to dial').to.not.deep.equal([])
  })

  it('HOLE unanswered for good: a receiver\'s check of many earlier blocks (1,500 states: 750 FTs paid on twice) is answered by honest seats, not refused as unreachable on every try', async () => {
    // priorSeals sends a seat every state in batches of 64, one after the other, and a seat takes at
    // most 1,024 states at once from one asker (then 256 a second): the batches past the burst are
    // refused (TOO_MANY_REQUESTS), their states count as unanswered by every seat, and the receiver
    // refuses the delivery (CLAIM_UNREACHABLE, "try again"). The next try asks the same states at
    // the same pace and is refused the same way: an honest delivery of many tokens with a history
    // (or a registration staking a long chain) is refused for good. Before `unanswered`, the
    // states short of answers passed.
    const seats = await Promise.all(Array.from({ length: 4 }, async () => await peerKey()))
    const self = (await peerKey()).peer
    const claimsOf = (peerId: string, sign: (d: Uint8Array) => Promise<Uint8Array>, rpc?: RpcClient<never>): ReturnType<typeof nodeStateClaims> =>
      claimsAt(peerId, { sign, ...(rpc !== undefined ? { rpc } : {}), committee: () => seats.map((x) => x.peer) })
    const served = new Map(seats.map((x) => [x.peer, claimsOf(x.peer, x.sign)]))
    const rpc = { call: async (peer: string, method: string, req: never) => { if (method !== 'claims.seal') throw new Error('not served'); return await served.get(peer)!.serveSeal!(req, self) } } as unknown as RpcClient<never>
    const receiver = claimsOf(self, async () => new Uint8Array(64), rpc)
    const items = Array.from({ length: 1500 }, (_, i) => ({ stateHash: sha3Hex(`an earlier state ${i}`), holder: sha3Hex(`its spend ${i}`) }))
    const r = await receiver.priorSeals!(items)
    expect(r.refused).to.equal(undefined)
    expect(r.unanswered, 'honest seats, all up, leave states unanswered').to.equal(undefined)
  })

  it('HOLE evidence cut at 40: with a committee of 100 seats, 34 seats that sealed one state to two transactions are found (some distrusted), whatever the order of the seals shown', async () => {
    // every seat is an arbiter of every state now, but the watch of conflicting certificates still
    // keeps at most 2 x CLAIM_ARBITERS = 40 arbiters a side, first come. n = 100: q = 67, so two
    // certificates take 34 seats that sealed both (beyond the bound: this is the accountability
    // that is meant to catch them). The owner shows each certificate with the 33 honest seats of
    // its side first: side one keeps 33 honest + liars 0..6, side two 33 honest + liars 7..13, the
    // two kept sides share no arbiter and nobody is distrusted, on any node
    const S = 'a'.repeat(64)
    const T1 = '1'.repeat(64)
    const T2 = '2'.repeat(64)
    const g = (peer: string, txid: string): KeptGrant => ({ peer, sig: 'final', txid, states: [S], seal: true })
    const check = async (x: KeptGrant): Promise<GrantCheck> => x.sig === 'final' ? 'final' : undefined
    const e = new CertificateEvidence({ ledger: new MemoryLedger(), check, log: silentLogger, clock: { now: () => 1000 } })
    const liars = Array.from({ length: 34 }, (_, i) => `liar${i}`)
    const h1 = Array.from({ length: 33 }, (_, i) => `honest-a${i}`)
    const h2 = Array.from({ length: 33 }, (_, i) => `honest-b${i}`)
    e.observe('quorum', [{ stateHash: S, txid: T1, grants: [...h1, ...liars].map((p) => g(p, T1)) }])
    e.observe('receiver', [{ stateHash: S, txid: T2, grants: [...h2, ...liars.slice(7), ...liars.slice(0, 7)].map((p) => g(p, T2)) }])
    await e.settled()
    expect(liars.some((p) => e.distrusted(p)), 'a seat that sealed the state twice is distrusted').to.equal(true)
  })
})
