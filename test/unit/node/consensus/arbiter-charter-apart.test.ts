import { expect } from 'chai'
import { charterDigest } from '../../../../src/node/consensus/arbiter-charter.js'
import type { ArbiterCommittee } from '../../../../src/node/consensus/arbiter-committee.js'
import { CHARTER_INLINE_BYTES, arbiterRpcHandlers, type ArbiterList, type ArbiterMethods, type CharterPart } from '../../../../src/node/consensus/arbiter-rpc.js'
import type { WireRegistration } from '../../../../src/node/consensus/arbiter-wire.js'
import type { RpcClient, RpcContext } from '../../../../src/p2p/rpc.js'
import { memoryCollection } from '../../../helpers/memory-collection.js'
import { buildBundle } from '../../../../src/consensus/bundle.js'
import { MATURITY, MiB, committeeOf, fourSeats, junkReg, peerKey, wireBytes } from './committee-fixture.js'

/**
 * A charter too heavy to ride the first list page (docs/protocol.md, "The arbiter committee"):
 * the page names its digest (`charterApart`) and `arbiters.charter` answers its registrations one
 * by one; the puller checks what it fetched as any charter (its digest first). A charter light
 * enough still rides the page whole, as peers of earlier versions send and expect it.
 */

/** The rpc of the nodes `served` (by peer id), as their handlers answer it, the caller being `caller`. */
function rpcTo (served: Record<string, ArbiterCommittee>, caller: string, calls?: string[]): RpcClient<never> {
  const handlers = Object.fromEntries(Object.entries(served).map(([p, c]) => [p, arbiterRpcHandlers(() => c)]))
  return {
    call: async (peer: string, method: keyof ArbiterMethods, req: unknown) => {
      calls?.push(method)
      const ctx = { peerId: caller, method, requestId: 'r', signal: new AbortController().signal } as unknown as RpcContext
      const res = await (handlers[peer]![method] as (r: unknown, c: RpcContext) => Promise<unknown>)(req, ctx)
      // what crosses the wire: JSON, within a frame
      expect(wireBytes(res), `${method} answer in UTF-8 bytes`).to.be.below(MiB)
      return JSON.parse(JSON.stringify(res))
    }
  } as unknown as RpcClient<never>
}

describe('node: a charter too heavy for the first page, sent apart', function () {
  this.timeout(120_000)

  it('a charter past the frame: the first page names its digest and fits a frame; each registration answered apart fits one, and they hash to that digest', async () => {
    const col = memoryCollection<any>() // eslint-disable-line @typescript-eslint/no-explicit-any
    const charter = [0, 1, 2, 3].map((i) => junkReg(`heavy ${i}`, 900_000_000 + i, 300_000))
    expect(wireBytes(charter)).to.be.above(MiB)
    await col.put('~charter', { regs: charter })
    for (let i = 0; i < 3; i++) {
      const w = junkReg(`listed ${i}`, 1_000_000_000 + i, 100_000)
      await col.put(`k${i}`, { ...w, seen: 1_000_000_000, verified: true })
    }
    const net = (await fourSeats(() => 1_000_000_000)).last.ctx.net
    const c = committeeOf(net, { col, now: () => 1_000_000_000 })
    await c.load()
    const first = c.listAnswer()
    expect(wireBytes(first), 'the first page').to.be.below(MiB)
    expect(first.charter, 'no charter whole on the first page').to.equal(undefined)
    expect(first.charterApart).to.equal(charterDigest(charter))
    expect(first.regs.length, 'the registrations listed beside the digest').to.equal(3)
    const rpc = rpcTo({ holder: c }, 'puller') as unknown as RpcClient<ArbiterMethods>
    const parts: WireRegistration[] = []
    for (let i = 0; i < 4; i++) {
      const res: CharterPart = await rpc.call('holder', 'arbiters.charter', { digest: first.charterApart!, i })
      expect(res.digest).to.equal(first.charterApart)
      parts.push(res.reg!)
    }
    expect(charterDigest(parts)).to.equal(first.charterApart)
    // asked for another digest: no registration, the digest held instead
    const other = await rpc.call('holder', 'arbiters.charter', { digest: 'ab'.repeat(32), i: 0 })
    expect(other).to.deep.equal({ digest: first.charterApart })
  })

  it('a puller of a node whose charter is listed apart ends up holding the same charter, in force, the same seats; and a charter offered apart is fetched from its offerer', async () => {
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    // the holder lists every charter apart (a threshold of one byte: a real charter heavier than a
    // frame needs stakes of chains too long to build here; what the page holds is the same)
    const holder = committeeOf(n, { now, maturityMs: MATURITY, charterInlineBytes: 1 })
    for (const w of wires) expect(await holder.receive(w, w.reg.peer)).to.equal(undefined)
    expect(holder.charterView()?.dids).to.have.length(4)
    const first = holder.listAnswer()
    expect(first.charter).to.equal(undefined)
    expect(first.charterApart).to.equal(holder.heldCharter()!.digest)
    const calls: string[] = []
    const puller = committeeOf(n, { now, maturityMs: MATURITY, rpc: rpcTo({ holder }, 'puller', calls) })
    await puller.pullFrom('holder')
    expect(calls.filter((m) => m === 'arbiters.charter'), 'one answer a registration').to.have.length(4)
    expect(puller.charterView()?.dids).to.deep.equal(holder.charterView()?.dids)
    expect(puller.heldCharter()!.digest).to.equal(holder.heldCharter()!.digest)
    clock = Math.max(...wires.map((w) => w.reg.at)) + MATURITY
    expect(puller.inForce()).to.equal(true)
    expect(puller.seats()).to.deep.equal(holder.seats())
    // pulled again: the charter held, in force, is not fetched again
    await puller.pullFrom('holder')
    expect(calls.filter((m) => m === 'arbiters.charter')).to.have.length(4)

    // offered apart (as a node that takes a heavy charter offers it): the receiver fetches it from the offerer
    const offered = committeeOf(n, { now, maturityMs: MATURITY, rpc: rpcTo({ holder }, 'offered') })
    const offer = arbiterRpcHandlers(() => offered)['arbiters.offer']
    await offer({ regs: [], charterApart: holder.heldCharter()!.digest }, { peerId: 'holder' } as unknown as RpcContext)
    const deadline = Date.now() + 10_000
    while (offered.charterView() === undefined && Date.now() < deadline) await new Promise((resolve) => setImmediate(resolve))
    expect(offered.charterView()?.dids).to.deep.equal(holder.charterView()?.dids)
  })

  it('a charter fetched apart with one registration altered is refused: whether the digest named is the real one or that of the altered charter', async () => {
    const clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    const altered = wires.map((w, i) => i === 2 ? { ...w, reg: { ...w.reg, at: w.reg.at - 1 } } : w)
    const real = charterDigest(wires)
    for (const [what, digest, why] of [['the real digest', real, /does not match its digest/], ['the altered charter\'s own digest', charterDigest(altered), /signature does not verify/]] as const) {
      // a peer listing a charter apart and answering its registrations with one of them altered
      const rpc = {
        call: async (_p: string, method: string, req: { digest: string, i: number }): Promise<ArbiterList | CharterPart> =>
          method === 'arbiters.list' ? { regs: [], charterApart: digest } : { digest: req.digest, reg: altered[req.i]! }
      } as unknown as RpcClient<never>
      const puller = committeeOf(n, { now, rpc })
      await puller.pullFrom('liar')
      expect(puller.charterView(), what).to.equal(undefined)
      expect(await puller.receiveCharterApart(digest, 'liar2'), what).to.match(why)
      expect(puller.charterView(), what).to.equal(undefined)
    }
  })

  it('a charter listed apart that counts later than the one held (neither in force) is fetched once, not on every pull', async () => {
    let clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    // a fifth seat, registered later: a charter of it and three of the four counts later
    clock += 1000
    const did = n.quorumDids[4]!
    const q = n.nodeOf(did)
    const d = q.dids.get(did)!
    const [t] = await n.mint(q, d.did, 1)
    const pk = await peerKey()
    const own = committeeOf(n, { selfPeer: pk.peer, sign: pk.sign, now })
    const tok = (await q.ledger.tokensById([t!]))[0]!
    const reg = await own.register(d.quorum, [{ token: t!, block: tok.latestBlockId }], await buildBundle(q.ledger, [t!], { levels: 0 }))
    const fifth = own.list().find((w) => w.reg.at === reg.at && w.reg.did === reg.did)!
    const holder = committeeOf(n, { now, maturityMs: MATURITY, charterInlineBytes: 1 })
    expect(await holder.receiveCharter([wires[1]!, wires[2]!, wires[3]!, fifth], 'p')).to.equal(undefined)
    const calls: string[] = []
    const puller = committeeOf(n, { now, maturityMs: MATURITY, rpc: rpcTo({ holder }, 'puller', calls) })
    await puller.take({ regs: [], charter: wires }, 'old')
    const held = puller.heldCharter()!.digest
    expect(held).to.not.equal(holder.heldCharter()!.digest)
    for (let i = 0; i < 3; i++) await puller.pullFrom('holder')
    expect(calls.filter((m) => m === 'arbiters.charter'), 'fetched once').to.have.length(4)
    expect(puller.heldCharter()!.digest, 'the earlier charter kept').to.equal(held)
  })

  it('a first page of an earlier version, the charter whole on it, is still taken; a charter light enough is still listed whole', async () => {
    const clock = 1_000_000_000
    const now = (): number => clock
    const { wires, last } = await fourSeats(now)
    const n = last.ctx.net
    const puller = committeeOf(n, { now })
    await puller.take({ regs: [], charter: wires }, 'old')
    expect(puller.charterView()?.dids).to.deep.equal(wires.map((w) => w.reg.did))
    expect(puller.inForce()).to.equal(true)
    const page = puller.listAnswer()
    expect(wireBytes(page.charter)).to.be.at.most(CHARTER_INLINE_BYTES)
    expect(page.charter?.map((w) => w.reg.did)).to.deep.equal(wires.map((w) => w.reg.did))
    expect(page.charterApart).to.equal(undefined)
  })
})
