import { expect } from 'chai'
import type { RpcClient } from '../../../../src/p2p/rpc.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { MiB, committeeOf, fourSeats, junkReg, wireBytes } from './committee-fixture.js'

/**
 * A reading of the paged arbiter list (`arbiters.list {after}`, `next`) as a cheating peer would
 * attack it. Each test names the hole it shows and failed on the commit it was written against.
 */

describe('node: the paged arbiter list, review', function () {
  this.timeout(60_000)

  // The page budget counted JSON characters, the frame counts UTF-8 bytes. The addresses a
  // registration carries are not signed (whoever offers it first picks them: 8 strings of up to
  // 255 characters each, any characters): a relay that fills them with 3-byte characters makes a
  // page of 512 Ki characters weigh about 1.3 MiB, over the frame, and every pull of that node fails.
  it('HOLE page bytes: every page of `arbiters.list` fits one frame in UTF-8 bytes, whatever characters the addresses carry', async () => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const wide = '\u4e00'.repeat(255)
    for (let i = 0; i < 400; i++) {
      const w = junkReg(`held ${i}`, 1_000_000_000 + i)
      await col.put(`k${i}`, { ...w, chains: { [w.reg.stake[0]!.token]: ['ab'.repeat(100)] }, addrs: Array(8).fill(wide), seen: 1_000_000_000, verified: true })
    }
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const c = committeeOf(net, { col, now: () => 1_000_000_000 })
    await c.load()
    const seen = new Set<string>()
    let after: string | undefined
    for (let page = 0; page < 100; page++) {
      const a = c.listAnswer(after)
      expect(wireBytes(a), `page ${page} in UTF-8 bytes`).to.be.below(MiB)
      for (const w of a.regs) seen.add(w.reg.did)
      if (a.next === undefined) break
      after = a.next
    }
    expect(seen.size, 'every registration held, across the pages').to.equal(400)
  })
})

describe('node: the paged arbiter list, review (the charter beside the first page)', function () {
  this.timeout(60_000)

  // The first page carries the charter, and its first registration went in whatever the charter
  // weighed (only a page already holding one stopped at the budget): a charter of 4 seats with
  // long chains (~600 KB) and a first registration of ~450 KB made the first page ~1 MiB and more,
  // so every pull of that node failed before it read a seat or the charter.
  it('HOLE charter page: the first page, charter included, fits one frame, and the registrations after it are still reached', async () => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const charter = [0, 1, 2, 3].map((i) => {
      const w = junkReg(`charter ${i}`, 900_000_000 + i)
      return { ...w, chains: { [w.reg.stake[0]!.token]: ['ab'.repeat(75_000)] } }
    })
    await col.put('~charter', { regs: charter })
    for (let i = 0; i < 3; i++) {
      const w = junkReg(`big ${i}`, 1_000_000_000 + i)
      await col.put(`k${i}`, { ...w, chains: { [w.reg.stake[0]!.token]: ['ab'.repeat(225_000)] }, seen: 1_000_000_000, verified: true })
    }
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const c = committeeOf(net, { col, now: () => 1_000_000_000 })
    await c.load()
    const first = c.listAnswer()
    expect(first.charter?.length, 'the charter on the first page').to.equal(4)
    const seen = new Set<string>()
    let a = first
    for (let page = 0; page < 20; page++) {
      expect(wireBytes(a), `page ${page} in UTF-8 bytes`).to.be.below(MiB)
      for (const w of a.regs) seen.add(w.reg.did)
      if (a.next === undefined) break
      a = c.listAnswer(a.next)
    }
    expect(seen.size, 'every registration held, across the pages').to.equal(3)
  })
})

describe('node: the paged arbiter list, review (backdated registrations ahead of the pages)', function () {
  this.timeout(120_000)

  // The list is ordered by `at`, which the registrant picks (any time before now: a backdated
  // seat waits the grace after it is first seen, but it sorts first). An owner with 64 DIDs, each
  // staking one RBT of a long chain (~480 KB a registration, one a page), backdated to the first
  // milliseconds, fills the LIST_PAGES pages every pull reads, and each pull starts again from
  // the first page: a registration made later was never read by a pull (a new node learnt it only
  // if someone offered it again). A pull cut at LIST_PAGES now goes on, next time, from where it
  // stopped (a cursor kept per peer).
  it('HOLE backdated push-out: two pulls in a row reach a registration listed after LIST_PAGES pages of backdated ones', async () => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    for (let i = 0; i < 70; i++) {
      const w = junkReg(`backdated ${i}`, 1 + i)
      await col.put(`b${i}`, { ...w, chains: { [w.reg.stake[0]!.token]: ['ab'.repeat(240_000)] }, seen: 1_000_000_000, verified: true })
    }
    const honest = junkReg('honest', 1_000_000_000)
    await col.put('h', { ...honest, seen: 1_000_000_000, verified: true })
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const c = committeeOf(net, { col, now: () => 1_000_000_000 })
    await c.load()
    const read = new Set<string>()
    const rpc = { call: async (_p: string, _m: string, req: { after?: string }) => { const a = c.listAnswer(req.after); for (const w of a.regs) read.add(w.reg.did); return a } } as unknown as RpcClient<never>
    const puller = committeeOf(net, { rpc, now: () => 1_000_000_000 })
    await puller.pullFrom('relay')
    await puller.pullFrom('relay')
    expect(read.has(honest.reg.did), 'the honest registration read by a pull').to.equal(true)
  })
})

describe('node: the paged arbiter list, review (a charter past the frame)', function () {
  this.timeout(60_000)

  // The charter rode the first page whole (its 4 registrations with their chains, each up to what
  // one offer carries). An owner whose 4 seats stake RBT of long chains (~300 KB each) made a
  // charter heavier than a frame: every first page, so every pull of a node holding it, failed,
  // and no node learnt a seat or the charter from it. A charter past CHARTER_INLINE_BYTES now
  // travels apart: the first page names its digest, `arbiters.charter` answers its registrations
  // one by one (test/unit/node/consensus/arbiter-charter-apart.test.ts).
  it('HOLE charter past the frame: the first page fits one frame whatever chains the charter\'s seats show', async () => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const charter = [0, 1, 2, 3].map((i) => {
      const w = junkReg(`heavy charter ${i}`, 900_000_000 + i)
      return { ...w, chains: { [w.reg.stake[0]!.token]: ['ab'.repeat(150_000)] } }
    })
    await col.put('~charter', { regs: charter })
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const c = committeeOf(net, { col, now: () => 1_000_000_000 })
    await c.load()
    expect(c.charterView()?.dids.length, 'the charter held').to.equal(4)
    expect(wireBytes(c.listAnswer()), 'the first page in UTF-8 bytes').to.be.below(MiB)
  })
})
