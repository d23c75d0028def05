import { expect } from 'chai'
import { ErrorCode, RbtError } from '../../../../src/util/errors.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import { nodeStateClaims } from '../../../../src/node/consensus/state-claims.js'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { sha3Hex } from '../../../../src/tokenchain/hash.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { B58, MATURITY, claimsAt, committeeOf, fourSeats, junkReg, peerKey, pick } from './committee-fixture.js'

/**
 * A third reading of the committee, after the charter (4 joins that stood together, made or
 * pulled, never taken back) and the pacing of batches an arbiter refuses as past its budget. Each
 * test names the hole it shows and failed on the commit it was written against.
 */

describe('node: the arbiter charter, third review', function () {
  this.timeout(120_000)

  /** A receiver's check of one earlier state at 4 seats, one of which answers TOO_MANY_REQUESTS to every request at once. */
  const jammed = async (timeoutMs: number): Promise<{ took: number, asked: number, refused?: string }> => {
    const seats = await Promise.all(Array.from({ length: 4 }, async () => await peerKey()))
    const self = (await peerKey()).peer
    const claimsOf = (peerId: string, sign: (d: Uint8Array) => Promise<Uint8Array>, rpc?: RpcClient<never>): ReturnType<typeof nodeStateClaims> =>
      claimsAt(peerId, { sign, ...(rpc !== undefined ? { rpc } : {}), timeoutMs, committee: () => seats.map((x) => x.peer) })
    const served = new Map(seats.map((x) => [x.peer, claimsOf(x.peer, x.sign)]))
    const jammer = seats[0]!.peer
    let asked = 0
    const rpc = {
      call: async (peer: string, method: string, req: never) => {
        if (method !== 'claims.seal') throw new Error('not served')
        if (peer === jammer) { asked++; throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, 'past this arbiter\'s budget') }
        return await served.get(peer)!.serveSeal!(req, self)
      }
    } as unknown as RpcClient<never>
    const receiver = claimsOf(self, async () => new Uint8Array(64), rpc)
    const t0 = Date.now()
    const r = await receiver.priorSeals!([{ stateHash: sha3Hex('an earlier state'), holder: sha3Hex('its spend') }])
    return { took: Date.now() - t0, asked, ...(r.refused !== undefined ? { refused: r.refused } : {}) }
  }

  it('HOLE always too many: an arbiter that answers every request TOO_MANY_REQUESTS holds a receiver\'s check no longer than a silent one', async () => {
    // withinBudget sends a batch again, for up to 30 s, while the arbiter answers that this node is
    // past its budget. An arbiter that answers so to every request, at once (cheaper than hanging),
    // holds every check that asks it (the receiver's earlier blocks, the sender's seal) 30 s,
    // against 3 s (the call's timeout) for one that does not answer at all: one seat, one whole RBT,
    // slows every transfer of the network tenfold
    const { took, asked, refused } = await jammed(500)
    expect(refused).to.equal(undefined)
    expect(took, `held ${took} ms by one arbiter answering TOO_MANY_REQUESTS (${asked} times), a silent one costs the 500 ms timeout`).to.be.below(3 * 500)
  })

  it('HOLE asked again every 29 ms: an arbiter that answers TOO_MANY_REQUESTS to everything is asked again a few times a check, not flooded', async () => {
    // withinBudget waits the time the budget takes to refill for the states asked (29 ms for one)
    // and sends the whole request again, as long as the check lasts: a hundred requests in the 3 s
    // of a default timeout, each with what the first carried (a claim's first request carries the
    // contract, up to 768 KiB). One byzantine arbiter's tiny answer makes every node that asks it
    // send it a hundred times as much
    const { asked } = await jammed(3000)
    expect(asked, 'requests sent to the arbiter in one check').to.be.at.most(10)
  })

  it('HOLE charter refusals unbounded: charters refused are remembered within the bound registrations are (4,096), however many strangers offer them', async () => {
    // receiveCharter remembers every refused charter (its four registrations' keys, some 600 bytes)
    // with no bound, where a refused registration is remembered among at most 4,096: junk charters
    // (right shape, signatures of nothing) cost their sender one frame each and peer ids cost
    // nothing, so the memory grows for as long as he sends
    const c = committeeOf((await fourSeats(() => 1_000_000_000)).last.ctx.net, { now: () => 1_000_000_000 })
    for (let i = 0; i < 4_200; i++) {
      const charter = [0, 1, 2, 3].map((j) => junkReg(`${i}/${j}`))
      expect(await c.receiveCharter(charter, `stranger${i}`)).to.be.a('string')
    }
    const refused = (c as unknown as { refused: Map<string, unknown> }).refused
    expect(refused.size, 'refusals remembered').to.be.at.most(4096)
  })

  it('HOLE charter crashes the start: a malformed charter record in the store is dropped at load, not thrown', async () => {
    // the registrations of the store are checked for their shape at load and dropped when bad; the
    // charter's record is read as it is, and one whose registrations are not objects (a store
    // written by another version, or damaged) throws out of load(): the node does not start
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    for (const bad of [{ regs: [null, null, null, null] }, { regs: [{}, {}, {}, {}] }, { regs: [1, 'x', [], true] }]) {
      const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
      await col.put('~charter', bad)
      const c = committeeOf(net, { col, now: () => 1_000_000_000 })
      await c.load()
      expect(c.inForce()).to.equal(false)
      expect(await col.get('~charter'), 'the bad record is dropped').to.equal(undefined)
    }
  })

  it('HOLE charter starved by its relay\'s registrations: a charter a peer lists is taken even when the registrations listed with it used up that peer\'s budget', async () => {
    // a charter costs 4 of the budget a peer's registrations share (2 a second, 64 at once), and a
    // pull takes the charter last, after every registration the list holds. A list with more than 60
    // registrations new here (a node joining a network of some size, or one whose seat re-registers
    // again and again, each one valid and passed on by every honest relay) spends the relay's budget
    // before the charter is reached: refused, the node stays out of force (the peers of its view
    // count, Sybils ground next to a state's key included) for as long as the relays' budgets are
    // kept spent
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const fresh = committeeOf(last.ctx.net, { now, maturityMs: MATURITY })
    const regs = Array.from({ length: 100 }, (_, i) => junkReg(`listed ${i}`, clock - 1))
    clock += MATURITY
    await fresh.take({ regs, charter: wires }, 'relay')
    expect(fresh.charterView(), 'the charter listed with the registrations').to.not.equal(undefined)
    expect(fresh.inForce()).to.equal(true)
    // and offered by a relay whose budget the registrations it passed on spent just before
    const other = committeeOf(last.ctx.net, { now, maturityMs: MATURITY })
    await other.take({ regs: regs.map((w) => ({ ...w, reg: { ...w.reg, at: w.reg.at - 1 } })) }, 'relay')
    await other.take({ regs: [], charter: wires }, 'relay')
    expect(other.inForce(), 'the charter offered after the registrations').to.equal(true)
  })

  it('HOLE charter bloat: a charter is kept and passed on as its joins were signed and staked, without what a relay padded it with', async () => {
    // receiveCharter checks only the staked tokens' chains and contents of each registration, and
    // keeps and lists the registrations as offered: any other chain, content or address a stranger
    // adds rides along, kept for good and sent in every `arbiters.list` answer of every node that
    // took it (never replaced once in force). Padded near the 1 MiB frame limit, the list answer no
    // longer fits in a frame: every node's `arbiters.list` fails, and no node pulls registrations
    // or the charter again
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const fresh = committeeOf(last.ctx.net, { now, maturityMs: MATURITY })
    const stray = `Qm${pick(B58, 'stray', 44)}`
    const padded = wires.map((w, i) => i === 0 ? { ...w, chains: { ...w.chains, [stray]: ['ab'.repeat(430_000)] }, contents: { ...w.contents, [stray]: 'x'.repeat(90_000) }, addrs: Array.from({ length: 2000 }, (_, j) => `/ip4/10.0.${j % 250}.1/tcp/4001`) } : w)
    expect(await fresh.receiveCharter(padded, 'stranger')).to.equal(undefined)
    const clean = JSON.stringify(wires.map((w) => ({ reg: w.reg, chains: w.chains, contents: w.contents })))
    const listed = JSON.stringify(fresh.listAnswer())
    expect(listed.length, 'the list answer, with the charter').to.be.below(clean.length + 16 * 1024)
  })
  it('HOLE lapsed by a relay: a registration passed on with fields its signatures do not cover (`lapsed`, `why`) seats its DID like the clean copy', async () => {
    // verify() kept a registration as `{ ...wire, addrs, seen, verified, anchors }`: every other field
    // the offer carried was kept too, `lapsed: true` among them, which countCommittee reads as "its
    // stake was found spent". A relay (the owner's node) that passes an honest seat's registration on
    // first, with `lapsed: true` added, takes that seat away on the nodes he picks (the clean copy,
    // arriving later, is the same registration: already kept). Those nodes count fewer seats and a
    // lower threshold: with 7 seats, 2 his, a node missing 2 honest seats needs 4 grants of 5, and
    // his 2 with 2 honest seats the other receivers' certificate (5 of 7) never asked make a
    // second certificate it accepts
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const honest = committeeOf(last.ctx.net, { now })
    const picked = committeeOf(last.ctx.net, { now })
    for (const w of wires) expect(await honest.receive(w, 'relay')).to.equal(undefined)
    for (const w of wires) expect(await picked.receive({ ...w, lapsed: true, why: 'spent' } as unknown as WireRegistration, 'owner')).to.equal(undefined)
    for (const w of wires) expect(await picked.receive(w, 'relay')).to.equal(undefined)
    clock += 1
    expect(honest.seats()).to.have.length(4)
    expect(picked.seats(), 'the node the owner relayed to first').to.deep.equal(honest.seats())
  })
  it('HOLE no seat, no registration: a node on which a charter counts with no seat standing takes a registration, not refuses every one for good', async () => {
    // a registration's stake is probed at the state's arbiters as the node counts them (priorSeals):
    // once a charter counts, its seats and nothing else. With none (a node that took the charter
    // before any of its seats matured here, or a network whose seats all left or lapsed, or one a
    // stranger put in force with a charter of 4 RBT he once held), no arbiter can answer: every
    // registration is refused "its stake cannot be checked now", its own included, on every try,
    // so no seat is ever taken again and every claim is refused for good. Here the node holds the
    // charter and the peers of its view answer; it is offered one of the charter's joins
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const peers = await Promise.all(Array.from({ length: 4 }, async () => await peerKey()))
    const self = await peerKey()
    let com: ReturnType<typeof committeeOf> | undefined
    const claimsOf = (peerId: string, sign: (d: Uint8Array) => Promise<Uint8Array>, rpc?: RpcClient<never>): ReturnType<typeof nodeStateClaims> =>
      claimsAt(peerId, { sign, view: peers.map((p) => p.peer), timeoutMs: 500, ...(rpc !== undefined ? { rpc, committee: () => com?.seats() } : {}) })
    const served = new Map(peers.map((x) => [x.peer, claimsOf(x.peer, x.sign)]))
    const rpc = { call: async (peer: string, method: string, req: never) => { if (method !== 'claims.seal') throw new Error('not served'); return await served.get(peer)!.serveSeal!(req, self.peer) } } as unknown as RpcClient<never>
    const claims = claimsOf(self.peer, self.sign, rpc)
    com = committeeOf(last.ctx.net, { selfPeer: self.peer, sign: self.sign, now, maturityMs: MATURITY, probe: async (items, o) => await claims.priorSeals!(items, o) })
    // before the charter, the peers of the view answer the probe
    expect(await com.receive(wires[0]!, 'relay'), 'taken before any charter').to.equal(undefined)
    clock += MATURITY + 1
    expect(await com.receiveCharter(wires, 'relay')).to.equal(undefined)
    expect(com.inForce()).to.equal(true)
    // every seat leaves or lapses: none stands
    ;(com as unknown as { kept: Map<string, { lapsed?: boolean }> }).kept.forEach((s) => { s.lapsed = true })
    ;(com as unknown as { cache: unknown }).cache = undefined
    expect(com.seats()).to.deep.equal([])
    expect(await com.receive(wires[2]!, 'relay'), 'a registration offered with no seat standing').to.equal(undefined)
    clock += 1
    expect(com.seats(), 'the seat it takes').to.have.length(1)
  })
  it('HOLE addresses not a list: a registration offered with `addrs` that is no list is taken or refused, not thrown once its whole check is done', async () => {
    // the addresses ride outside the signatures and outside the key a check is shared and a refusal
    // remembered by; verify() read them with `.filter` after the signatures, the chains and the
    // stake's probe had all passed: a TypeError out of receive(), out of the `arbiters.offer`
    // handler and out of a pull (the rest of the list not taken), nothing kept and nothing
    // remembered, so the same valid registration offered again with `addrs: "x"` costs a whole
    // check (chains validated, the stake's arbiters asked) each time; and a clean copy offered
    // while that check runs shares its failure
    const clock = 1_000_000_000
    const { wires, last } = await fourSeats(() => clock)
    const c = committeeOf(last.ctx.net, { now: () => clock })
    const bad = { ...wires[0]!, addrs: 'x' } as unknown as WireRegistration
    const said = await c.receive(bad, 'relay').then((r) => r ?? 'taken', (e: unknown) => `thrown: ${String(e)}`)
    expect(said).to.not.match(/^thrown/)
    const viaList = await c.take({ regs: [bad, wires[1]!] }, 'relay2').then(() => 'ok', (e: unknown) => `thrown: ${String(e)}`)
    expect(viaList).to.equal('ok')
  })

  // Open: not a small fix. The charter is checked by what it carries, not probed (a node joining
  // years later, after its seats' stakes moved on, must count the same), so 4 DIDs that each once
  // held a whole RBT, spent since, make a charter a stranger can offer: a network with no seat yet
  // (one upgrading, where no quorum registered) comes into force with none, and every claim is
  // refused until seats are registered and matured (10 minutes and the grace). A refusal, not a
  // double spend (docs/protocol.md says so), and seats can now be taken with none standing. The
  // fix needs a charter to prove its stakes stood unspent together (signed answers of their
  // arbiters at the time, kept with it). Tried and taken back: in force waiting until four seats
  // stood here at once, kept from then on. It makes in force depend on when a node looked, which the
  // second review closed ("in force by chance", "a node that joins late" in
  // arbiter-committee-review2.test.ts both fail with it: a node idle while four stood, or started
  // after one left, counts peers for good while the others count seats). And the proof is only as
  // good as the arbiters of a charter's stakes at its time, which, before any seat, are peers.
  it.skip('HOLE charter of spent stakes: a charter whose every stake was spent before it was offered puts no seatless node in force', async () => {
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    // every stake's state is held by its arbiters for a later transfer
    const spent = committeeOf(last.ctx.net, { now, maturityMs: MATURITY, probe: async () => ({ refused: 'held for a later transfer' }) })
    clock += MATURITY + 1
    await spent.receiveCharter(wires, 'stranger')
    expect(spent.inForce(), 'a charter of stakes all spent').to.equal(false)
  })

  // `arbiters.list` was one unary answer, and a frame carries at most 1 MiB: a node holding more
  // registrations (with their chains) than that answered every pull with an error, so no node
  // learnt a seat, or the charter, from it; a network of a few hundred seats gets there honestly.
  // Trimming the list to a byte budget would let whoever registers most often push older seats out
  // of every list: the list is paged (`arbiters.list {after}`, `next`)
  it('HOLE list past the frame: a node answers `arbiters.list` within one frame whatever registrations it holds, and every one of them is reached page by page', async () => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 400; i++) {
      const w = junkReg(`held ${i}`, 1_000_000_000 + i)
      await col.put(`k${i}`, { ...w, chains: { [w.reg.stake[0]!.token]: ['ab'.repeat(1500)] }, seen: 1_000_000_000, verified: true })
    }
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const c = committeeOf(net, { col, now: () => 1_000_000_000 })
    await c.load()
    expect(JSON.stringify(c.listAnswer()).length, 'the list answer').to.be.below(1024 * 1024)
    const seen = new Set<string>()
    let after: string | undefined
    for (let page = 0; page < 100; page++) {
      const a = c.listAnswer(after)
      expect(JSON.stringify(a).length, `page ${page}`).to.be.below(1024 * 1024)
      for (const w of a.regs) seen.add(w.reg.did + String(w.reg.at))
      if (a.next === undefined) break
      after = a.next
    }
    expect(seen.size, 'every registration held, across the pages').to.equal(400)
    // a pull reads every page
    const asked: Array<string | undefined> = []
    const rpc = { call: async (_p: string, method: string, req: { after?: string }) => { expect(method).to.equal('arbiters.list'); asked.push(req.after); return c.listAnswer(req.after) } } as unknown as RpcClient<never>
    await committeeOf(net, { rpc, now: () => 1_000_000_000 }).pullFrom('relay')
    expect(asked.length, 'pages asked').to.be.above(1)
    expect(asked[0]).to.equal(undefined)
    expect(c.listAnswer(asked[asked.length - 1]).next, 'the last page asked is the last').to.equal(undefined)
  })
})
