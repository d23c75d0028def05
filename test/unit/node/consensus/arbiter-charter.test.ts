import { expect } from 'chai'
import { ArbiterCommittee } from '../../../../src/node/consensus/arbiter-committee.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { MATURITY, committeeOf, fourSeats } from './committee-fixture.js'

/**
 * The charter (docs/protocol.md, "The arbiter committee"): the record that the committee came into
 * force, made of the seats' own signed registrations, which every node checks the same way and
 * nobody takes back.
 */
describe('node: the arbiter committee\'s charter', function () {
  this.timeout(120_000)

  it('a charter offered by a stranger holds only by what it carries: a changed field, a spoilt chain, a DID twice, a leave or three registrations put nobody in force', async () => {
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    const fresh = committeeOf(n, { now, maturityMs: MATURITY })
    clock += MATURITY + 1
    const changed = wires.map((w, i) => i === 2 ? { ...w, reg: { ...w.reg, at: w.reg.at - 1 } } : w)
    const spoilt = wires.map((w, i) => i === 1 ? { ...w, chains: wires[0]!.chains } : w)
    const twice = [wires[0]!, wires[1]!, wires[2]!, wires[0]!]
    await last.own.register(last.ctx.did.quorum, [], { chains: {}, contents: {} }, true)
    const leave = last.own.list().find((x) => x.reg.leave === true)!
    const withLeave = [wires[0]!, wires[1]!, wires[2]!, leave]
    for (const [what, c] of [['a changed field', changed], ['a spoilt chain', spoilt], ['a DID twice', twice], ['a leave', withLeave], ['three', wires.slice(0, 3)]] as Array<[string, WireRegistration[]]>) {
      expect(await fresh.receiveCharter(c, 'stranger'), what).to.be.a('string')
      expect(fresh.inForce(), what).to.equal(false)
    }
    expect(fresh.seats()).to.equal(undefined)
  })

  it('a charter pulled by a node that never saw its seats counts from the time its youngest join matured, and survives a restart; a record of the old kind alone does not count', async () => {
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    const old = committeeOf(n, { now, maturityMs: MATURITY })
    for (const w of wires) expect(await old.receive(w, 'p')).to.equal(undefined)
    expect(old.charterView()?.dids).to.have.length(4)
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const fresh = committeeOf(n, { now, maturityMs: MATURITY, col })
    await fresh.take(old.listAnswer(), 'old')
    const youngest = Math.max(...wires.map((w) => w.reg.at))
    clock = youngest + MATURITY - 1
    expect(fresh.seats(), 'not before the youngest join matured').to.equal(undefined)
    clock = youngest + MATURITY
    expect(fresh.seats()).to.have.length(4)
    expect(fresh.seats()).to.deep.equal(old.seats())
    // restarted on the same store: still in force
    const again = committeeOf(n, { now, maturityMs: MATURITY, col })
    await again.load()
    expect(again.inForce()).to.equal(true)
    // the record an earlier version kept on its own ("in force here") counts for nothing now, and is dropped
    const col2 = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    await col2.put('~in-force', { at: clock })
    const legacy: ArbiterCommittee = committeeOf(n, { now, maturityMs: MATURITY, col: col2 })
    await legacy.load()
    expect(legacy.inForce()).to.equal(false)
    expect(await col2.get('~in-force')).to.equal(undefined)
  })
})
