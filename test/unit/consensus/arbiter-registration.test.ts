import { expect } from 'chai'
import {
  ARBITER_CLOCK_SKEW_MS, charterCountsFrom, charterOf, charterProblem, countCommittee, registrationDigest, registrationShapeProblem, stakeProbeTx, stakeProblem,
  type ArbiterRegistration, type KeptRegistration, type StakeTip
} from '../../../src/consensus/arbiter-registration.js'
import { TokenType } from '../../../src/tokenchain/types.js'

const did = (i: number): string => `bafybmi${String(i).padStart(52, 'a').replace(/[^a-z2-7]/g, 'b')}`
const peer = (i: number): string => `12D3KooW${String(i).padStart(44, 'A').replace(/0/g, 'z')}`
const token = (i: number): string => `Qm${String(i).padStart(44, 'T').replace(/0/g, 'x')}`
const block = (n = 0): string => `${n}-${'ab'.repeat(32)}`

const reg = (i: number, o: Partial<ArbiterRegistration> = {}): ArbiterRegistration => ({ v: 1, did: did(i), peer: peer(i), stake: [{ token: token(i), block: block() }], at: 1_000 + i, sig: 'aa', peerSig: 'bb', ...o })
const kept = (r: ArbiterRegistration, o: Partial<KeptRegistration> = {}): KeptRegistration => ({ reg: r, seen: r.at, verified: true, ...o })
const rules = { maturityMs: 600_000, graceMs: 60_000 }

describe('consensus: arbiter registrations and the committee they seat', () => {
  it('a registration\'s shape: DID, peer, staked tokens at their blocks, signatures; none made ahead of the clock', () => {
    expect(registrationShapeProblem(reg(1), 10_000)).to.equal(undefined)
    expect(registrationShapeProblem(reg(1, { did: 'x' }), 10_000)).to.equal('bad DID')
    expect(registrationShapeProblem(reg(1, { stake: [] }), 10_000)).to.equal('no stake')
    expect(registrationShapeProblem(reg(1, { stake: [], leave: true }), 10_000)).to.equal(undefined)
    expect(registrationShapeProblem(reg(1, { stake: [{ token: token(1), block: block() }, { token: token(1), block: block(1) }] }), 10_000)).to.equal('a token staked twice')
    expect(registrationShapeProblem(reg(1, { at: 10_000 + ARBITER_CLOCK_SKEW_MS + 1 }), 10_000)).to.equal('made in the future')
    expect(registrationShapeProblem(null, 1)).to.equal('not an object')
  })

  it('the digest binds every field both signatures cover; the stake probe names no transaction of anyone', () => {
    const r = reg(1)
    const d = registrationDigest(r)
    expect(registrationDigest({ ...r, peer: peer(2) })).to.not.equal(d)
    expect(registrationDigest({ ...r, at: r.at + 1 })).to.not.equal(d)
    expect(registrationDigest({ ...r, stake: [{ token: token(2), block: block() }] })).to.not.equal(d)
    expect(registrationDigest({ ...r, leave: true })).to.not.equal(d)
    expect(registrationDigest({ ...r, sig: 'cc' } as ArbiterRegistration)).to.equal(d)
    expect(stakeProbeTx(r)).to.match(/^[0-9a-f]{64}$/)
  })

  it('a stake is the registrant\'s whole RBT at the block named: another owner, a moved token or a part does not count', () => {
    const r = reg(1)
    const net = { testNet: true }
    const tip = (o: Partial<StakeTip> = {}): Map<string, StakeTip> => new Map([[token(1), { owner: did(1), blockId: block(), tokenType: TokenType.TEST_RBT, ...o }]])
    expect(stakeProblem(r, tip(), net)).to.equal(undefined)
    expect(stakeProblem(r, tip({ owner: did(2) }), net)).to.match(/belongs to/)
    expect(stakeProblem(r, tip({ blockId: block(1) }), net)).to.match(/is at block/)
    expect(stakeProblem(r, tip({ tokenType: TokenType.TEST_PART }), net)).to.match(/no whole RBT/)
    expect(stakeProblem(r, new Map(), net)).to.match(/was not shown/)
    // a test RBT costs nothing to mint: it stakes nothing outside a test network; an RBT does
    expect(stakeProblem(r, tip(), { testNet: false })).to.match(/test RBT/)
    expect(stakeProblem(r, tip({ tokenType: TokenType.RBT }), { testNet: false })).to.equal(undefined)
  })

  it('seats count once mature, and a peer or a token seats one DID only', () => {
    const regs = [1, 2, 3, 4].map((i) => kept(reg(i)))
    expect(countCommittee(regs, 1_000 + 600_000, rules)).to.have.length(0)
    const later = 2_000_000
    const four = countCommittee(regs, later, rules)
    expect(four.map((m) => m.did)).to.deep.equal([1, 2, 3, 4].map(did))
    // a second DID on the same peer, and a second DID staking the same token: the earlier keeps the seat
    const samePeer = kept(reg(5, { peer: peer(1) }))
    const sameToken = kept(reg(6, { stake: [{ token: token(2), block: block() }] }))
    expect(countCommittee([...regs, samePeer, sameToken], later, rules)).to.have.length(4)
  })

  it('a later registration of a DID replaces the earlier; a leave, a lapsed stake, a refused check or a distrusted peer ends the seat', () => {
    const later = 5_000_000
    const base = [1, 2, 3, 4, 5].map((i) => kept(reg(i)))
    const moved = kept(reg(1, { peer: peer(9), at: 3_000_000 }))
    const m = countCommittee([...base, moved], later, rules)
    expect(m.find((x) => x.did === did(1))?.peer).to.equal(peer(9))
    const left = kept(reg(2, { stake: [], leave: true, at: 3_000_000 }))
    expect(countCommittee([...base, left], later, rules).map((x) => x.did)).to.not.include(did(2))
    const lapsed = [...base.slice(0, 4), kept(reg(5), { lapsed: true })]
    expect(countCommittee(lapsed, later, rules)).to.have.length(4)
    const refused = [...base.slice(0, 4), kept(reg(5), { verified: false })]
    expect(countCommittee(refused, later, rules)).to.have.length(4)
    expect(countCommittee(base, later, { ...rules, distrusted: (p) => p === peer(3) }).map((x) => x.peer)).to.not.include(peer(3))
  })

  it('a replacement or a leave takes effect once matured: until then the seat it replaces keeps counting', () => {
    const base = [1, 2, 3, 4].map((i) => kept(reg(i)))
    const moved = kept(reg(1, { peer: peer(9), at: 3_000_000 }))
    const left = kept(reg(2, { stake: [], leave: true, at: 3_000_000 }))
    const before = countCommittee([...base, moved, left], 3_000_000 + 1_000, rules)
    expect(before.map((x) => x.peer)).to.deep.equal([1, 2, 3, 4].map(peer))
    const after = countCommittee([...base, moved, left], 3_000_000 + 600_000, rules)
    expect(after.map((x) => x.peer)).to.deep.equal([3, 4, 9].map(peer))
  })

  it('a registration made long ago and shown late waits the grace after it is first seen (a backdated seat does not count at once)', () => {
    const old = kept(reg(1, { at: 1_000 }), { seen: 10_000_000 })
    expect(countCommittee([old], 10_000_000 + 1_000, rules)).to.have.length(0)
    expect(countCommittee([old], 10_000_000 + 60_000, rules)).to.have.length(1)
  })

  it('a charter is four joins of distinct DIDs, peers and tokens; made of the earliest joins a node holds, it counts once the youngest matured', () => {
    const regs = [1, 2, 3, 4].map((i) => reg(i))
    expect(charterProblem(regs)).to.equal(undefined)
    expect(charterProblem(regs.slice(0, 3))).to.match(/holds 4/)
    expect(charterProblem([...regs.slice(0, 3), reg(1, { at: 9_000 })])).to.match(/DID .* twice/)
    expect(charterProblem([...regs.slice(0, 3), reg(5, { peer: peer(1) })])).to.match(/peer .* twice/)
    expect(charterProblem([...regs.slice(0, 3), reg(5, { stake: [{ token: token(1), block: block(2) }] })])).to.match(/staked twice/)
    expect(charterProblem([...regs.slice(0, 3), reg(4, { stake: [], leave: true })])).to.match(/joins only/)
    expect(charterCountsFrom(regs, rules.maturityMs)).to.equal(1_004 + rules.maturityMs)
    // of the joins held: the earliest four that share no peer or token; a DID whose newest is a leave or whose stake lapsed makes none
    const held = [5, 1, 2, 3, 4, 6].map((i) => kept(reg(i)))
    expect(charterOf(held)?.map((k) => k.reg.did)).to.deep.equal([1, 2, 3, 4].map(did))
    const after = [...held, kept(reg(1, { stake: [], leave: true, at: 9_000 })), kept(reg(2), { lapsed: true }), kept(reg(7, { peer: peer(3) }))]
    const again = after.filter((k) => !(k.reg.did === did(2) && k.lapsed !== true))
    expect(charterOf(again)?.map((k) => k.reg.did)).to.deep.equal([3, 4, 5, 6].map(did))
    expect(charterOf(held.slice(0, 3))).to.equal(undefined)
  })
})
