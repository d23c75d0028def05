import { expect } from 'chai'
import { Prng } from '../../../bench/chaos/prng.js'
import { planOp } from '../../../bench/chaos/ops.js'
import { DEFAULT_FAULTS, PARTITION_KINDS, busyMs, planFaults } from '../../../bench/chaos/schedule.js'

describe('chaos: seeded randomness', () => {
  it('the same seed gives the same sequence; another seed another one', () => {
    const take = (seed: number): number[] => { const r = new Prng(seed); return Array.from({ length: 50 }, () => r.u32()) }
    expect(take(42)).to.deep.equal(take(42))
    expect(take(42)).to.not.deep.equal(take(43))
    // pinned: a change of the generator would silently change every recorded seed's replay
    expect(take(1).slice(0, 3)).to.deep.equal([1828152527, 3394835397, 2967886022])
    const r = new Prng(7)
    for (let i = 0; i < 1000; i++) {
      const x = r.next()
      expect(x).to.be.at.least(0).and.below(1)
      const k = r.int(3, 5)
      expect(k).to.be.oneOf([3, 4, 5])
    }
  })

  it('forks are reproducible and independent of each other', () => {
    const a = new Prng(9).fork('ops/0')
    const b = new Prng(9).fork('ops/0')
    const c = new Prng(9).fork('ops/1')
    const xs = Array.from({ length: 20 }, () => a.u32())
    expect(Array.from({ length: 20 }, () => b.u32())).to.deep.equal(xs)
    expect(Array.from({ length: 20 }, () => c.u32())).to.not.deep.equal(xs)
  })

  it('int covers its whole range about evenly', () => {
    const r = new Prng(123)
    const seen = new Array<number>(6).fill(0)
    for (let i = 0; i < 6000; i++) seen[r.int(0, 5)]!++
    for (const n of seen) expect(n).to.be.within(850, 1150)
  })

  it('a seed gives the same operation stream', () => {
    const world = { didNodes: [7, 7, 7, 8, 8, 8, 9, 9, 9], ftKinds: 2, nfts: 6 }
    const ops = (seed: number): unknown[] => { const r = new Prng(seed).fork('ops/0'); return Array.from({ length: 30 }, () => planOp(r, world)) }
    expect(ops(5)).to.deep.equal(ops(5))
    expect(ops(5)).to.not.deep.equal(ops(6))
    for (const op of ops(5) as Array<ReturnType<typeof planOp>>) {
      expect(op.from).to.not.equal(op.to)
      expect(op.amountMilli).to.be.within(1, 3000)
    }
  })
})

describe('chaos: fault schedule', () => {
  const opts = { ...DEFAULT_FAULTS, durationMs: 180_000, nodes: 10, quorums: 7, diskNodes: [7, 1] }

  it('the same seed gives the same faults', () => {
    expect(planFaults(new Prng(11), opts)).to.deep.equal(planFaults(new Prng(11), opts))
    expect(planFaults(new Prng(11), opts)).to.not.deep.equal(planFaults(new Prng(12), opts))
  })

  it('3 minutes give at least 10 kills for every seed tried, and partitions for nearly all', () => {
    let without = 0
    for (let seed = 1; seed <= 500; seed++) {
      const plan = planFaults(new Prng(seed), opts)
      expect(plan.filter((f) => f.kind === 'kill').length, `seed ${seed}`).to.be.at.least(10)
      if (!plan.some((f) => PARTITION_KINDS.has(f.kind))) without++
    }
    expect(without).to.be.at.most(5)
  })

  it('30 minutes give at least 150 kills and 30 partitions for every seed tried', () => {
    for (let seed = 1; seed <= 100; seed++) {
      const plan = planFaults(new Prng(seed), { ...opts, durationMs: 30 * 60_000 })
      expect(plan.filter((f) => f.kind === 'kill').length, `seed ${seed}`).to.be.at.least(170)
      expect(plan.filter((f) => PARTITION_KINDS.has(f.kind)).length, `seed ${seed}`).to.be.at.least(40)
    }
  })

  it('never faults a node twice at once, at most maxConcurrent faults at a time, nothing in the tail', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const plan = planFaults(new Prng(seed), opts)
      const windows = plan.map((f) => ({ ...f, end: f.atMs + busyMs(f, opts) }))
      for (const f of windows) {
        expect(f.atMs).to.be.at.most(opts.durationMs - opts.tailMs)
        expect(f.node).to.equal(f.nodes[0])
        expect(new Set(f.nodes).size).to.equal(f.nodes.length)
        const overlapping = windows.filter((g) => g !== f && g.atMs <= f.atMs && g.end > f.atMs)
        expect(overlapping.filter((g) => g.nodes.some((n) => f.nodes.includes(n))), `seed ${seed}`).to.deep.equal([])
        expect(overlapping.length, `seed ${seed}`).to.be.below(opts.maxConcurrent)
      }
    }
  })

  it('partitions cut a minority of the quorums, split two user nodes; full disks only hit tmpfs nodes', () => {
    const seen = new Set<string>()
    for (let seed = 1; seed <= 100; seed++) {
      for (const f of planFaults(new Prng(seed), opts)) {
        seen.add(f.kind)
        if (f.kind === 'quorums') {
          expect(f.nodes.length).to.be.within(1, 3)
          for (const n of f.nodes) expect(n).to.be.below(7)
        } else if (f.kind === 'split') {
          expect(f.nodes).to.have.length(2)
          for (const n of f.nodes) expect(n).to.be.within(7, 9)
        } else {
          expect(f.nodes).to.have.length(1)
          if (f.kind === 'diskfull') expect(f.node).to.be.oneOf(opts.diskNodes)
        }
        const range = f.kind === 'kill' ? opts.killDownMs : f.kind === 'pause' ? opts.pauseMs : f.kind === 'diskfull' ? opts.diskFullMs : opts.partitionMs
        expect(f.downMs).to.be.within(range[0], range[1])
      }
    }
    expect([...seen].sort()).to.deep.equal(['diskfull', 'isolate', 'kill', 'pause', 'quorums', 'split'])
  })

  it('without a LAN or tmpfs nodes the plan has no partitions and no full disks', () => {
    for (let seed = 1; seed <= 50; seed++) {
      const plan = planFaults(new Prng(seed), { ...opts, partitionShare: 0, diskNodes: [] })
      expect(plan.filter((f) => f.kind !== 'kill' && f.kind !== 'pause'), `seed ${seed}`).to.deep.equal([])
    }
  })
})
