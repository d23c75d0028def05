import { expect } from 'chai'
import { registrationDigest } from '../../../../src/consensus/arbiter-registration.js'
import type { ArbiterList } from '../../../../src/node/consensus/arbiter-rpc.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import type { SimNet } from '../../consensus/harness.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { committeeOf, junkReg } from './committee-fixture.js'

/**
 * The paged `arbiters.list` answer: the order of its registrations (time, then digest) and the
 * cursor `next` a page ends with, whether a registration is held under its digest (as the node
 * keeps every one it takes) or, as a store may hold it, under another key.
 */

const NOW = 1_000_000_000
/** A registration of the right shape drawn from `seed` (its ids drawn from " seed") whose token's chain is `chainHexChars` long. */
const regAt = (seed: string, at: number, chainHexChars: number): WireRegistration => junkReg(` ${seed}`, at, chainHexChars)
const cursor = (w: WireRegistration): string => `${String(w.reg.at).padStart(16, '0')}|${registrationDigest(w.reg)}`

describe('node: the paged arbiter list (order and cursor)', function () {
  this.timeout(60_000)
  // the list reads no DID document: a network of none
  const net = { docs: new Map() } as unknown as SimNet

  async function heldCommittee (): Promise<{ c: ReturnType<typeof committeeOf>, expected: WireRegistration[] }> {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const held: WireRegistration[] = []
    // few distinct times: most registrations share theirs with others, so the digest orders them
    for (let i = 0; i < 30; i++) {
      const w = regAt(`r${i}`, [7, 3, 7, 5, 3, 7][i % 6]! * 1000, 60_000)
      held.push(w)
      // every other one under its digest (as taken), the rest under a key of the store's own
      await col.put(i % 2 === 0 ? registrationDigest(w.reg) : `other ${i}`, { ...w, seen: NOW, verified: true })
    }
    // one not verified: never listed
    const refused = regAt('refused', 1000, 10)
    await col.put(registrationDigest(refused.reg), { ...refused, seen: NOW, verified: false })
    const c = committeeOf(net, { col, now: () => NOW })
    await c.load()
    const expected = [...held].sort((a, b) => a.reg.at - b.reg.at || (registrationDigest(a.reg) < registrationDigest(b.reg) ? -1 : 1))
    return { c, expected }
  }

  it('lists the registrations by time then digest, page after page, each page ending with the cursor of its last', async () => {
    const { c, expected } = await heldCommittee()
    const read: WireRegistration[] = []
    let a: ArbiterList = c.listAnswer()
    let pages = 1
    for (;;) {
      expect(a.regs.length, 'a page holds some').to.be.greaterThan(0)
      read.push(...a.regs)
      if (a.next === undefined) break
      expect(a.next, 'the cursor of the page\'s last registration').to.equal(cursor(a.regs[a.regs.length - 1]!))
      a = c.listAnswer(a.next)
      pages++
    }
    expect(pages, 'pages').to.be.greaterThan(3)
    expect(read.map((w) => w.reg.did)).to.deep.equal(expected.map((w) => w.reg.did))
    expect(c.list().map((w) => w.reg.did), 'the list offered').to.deep.equal(expected.map((w) => w.reg.did))
  })

  it('goes on right after any cursor, and after a cursor between two registrations from the next one', async () => {
    const { c, expected } = await heldCommittee()
    for (const k of [0, 4, 11, 17, 28]) {
      expect(c.listAnswer(cursor(expected[k]!)).regs[0]!.reg.did, `after registration ${k}`).to.equal(expected[k + 1]!.reg.did)
    }
    const firstAt5 = expected.findIndex((w) => w.reg.at === 5000)
    expect(c.listAnswer(`${String(5000).padStart(16, '0')}|`).regs[0]!.reg.did, 'after a time alone').to.equal(expected[firstAt5]!.reg.did)
    expect(c.listAnswer(cursor(expected[expected.length - 1]!)), 'after the last').to.deep.equal({ regs: [] })
  })
})
