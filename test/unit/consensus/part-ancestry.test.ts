import { expect } from 'chai'
import { SimNet, balance, type SimNode } from './harness.js'
import type { ChainBundle, PrepareReply, PrepareRequest } from '../../../src/consensus/messages.js'
import { MAX_BUNDLE_BLOCKS } from '../../../src/consensus/bundle.js'

/** Ancestors of a part token as the ledger records them (parent links up to a whole token). */
async function ancestry (n: SimNode, tokenId: string): Promise<number> {
  let depth = 0
  for (let t = await n.ledger.token(tokenId); t?.parentId !== undefined; t = await n.ledger.token(t.parentId)) depth++
  return depth
}

describe('consensus: part-token ancestry (no depth limit in normal use, ancestors validated once)', function () {
  this.timeout(300_000)
  let net: SimNet
  let std: Awaited<ReturnType<typeof SimNet.standard>>
  const prepared: Array<{ quorum: string, chains: number, reply: PrepareReply }> = []
  const delivered: Array<{ receiver: string, chains: number }> = []

  before(async () => {
    std = await SimNet.standard(4)
    net = std.net
    await net.mint(std.a, std.alice.did, 2)
    // every PREPARE and delivery of alice's node, with the size of its bundle
    const t = std.a.sender as unknown as { transport: { prepare: (r: PrepareRequest) => Promise<PrepareReply>, deliver: (r: { receiver: string, bundle: ChainBundle }) => Promise<unknown> } }
    const base = { ...t.transport }
    t.transport = {
      ...t.transport,
      prepare: async (r) => { const reply = await base.prepare(r); prepared.push({ quorum: r.quorumDid, chains: Object.keys(r.bundle.chains).length, reply }); return reply },
      deliver: async (r) => { delivered.push({ receiver: r.receiver, chains: Object.keys(r.bundle.chains).length }); return await base.deliver(r) }
    }
  })

  it('70 payments of 0.001 RBT in a row all succeed (the 65th used to fail: ancestry deeper than 64)', async () => {
    const { a, alice, bob, b } = std
    let last = ''
    for (let i = 1; i <= 70; i++) {
      prepared.length = 0
      delivered.length = 0
      const r = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1, memo: `p${i}`, quorums: net.quorumDids }, alice.owner)
      expect(r.delivered, `payment ${i}`).to.equal(true)
      last = r.txid
    }
    expect(last).to.not.equal('')
    expect(await balance(a, alice.did)).to.equal(2000 - 70)
    expect(await balance(b, bob.did)).to.equal(70)
    // the remainder has grown one ancestor per payment
    const parts = (await a.ledger.tokensOf(alice.did, 'Free')).filter((t) => t.parentId !== undefined)
    expect(parts).to.have.length(1)
    expect(await ancestry(a, parts[0].tokenId)).to.equal(70)
    // the last payment: the receiver had validated every older ancestor, so it was sent the part
    // and its parent only, once; the quorums remembered theirs too
    expect(delivered).to.deep.equal([{ receiver: bob.did, chains: 2 }])
    const first = prepared.filter((p, i) => prepared.findIndex((q) => q.quorum === p.quorum) === i)
    expect(first.every((p) => p.chains === 2)).to.equal(true)
    const remembered = std.quorums.map((q) => q.ledger.recs.get('cs-ancestors')?.size ?? 0)
    expect(Math.max(...remembered)).to.be.greaterThan(60)
    expect(b.ledger.recs.get('cs-ancestors')?.size ?? 0).to.be.greaterThan(60)
  })

  it('a receiver on another quorum set accepts a deep part (asking for the ancestors it lacks) and spends it through its own quorums', async () => {
    const { a, alice } = std
    const set2: string[] = []
    for (let i = 0; i < 5; i++) {
      const q = net.addNode(`s${i}`)
      const d = await net.addDid(q)
      await net.mint(q, d.did, 3)
      set2.push(d.did)
    }
    net.quorumDids.push(...set2)
    const c = net.addNode('C')
    const carol = await net.addDid(c)
    c.quorumList = set2
    delivered.length = 0
    const r = await a.sender.transfer({ sender: alice.did, receiver: carol.did, amountMilli: 1, memo: 'deep', quorums: net.quorumDids.slice(0, 7) }, alice.owner)
    expect(r.delivered).to.equal(true)
    expect(await balance(c, carol.did)).to.equal(1)
    // first the part and its parent; then with the next levels of ancestry; then with all the
    // older ancestors the new receiver lacked
    expect(delivered.map((d) => d.chains)).to.have.length(3)
    expect(delivered[0].chains).to.equal(2)
    expect(delivered[1].chains).to.be.within(3, 12)
    expect(delivered[2].chains).to.be.greaterThan(70)
    const [mine] = await c.ledger.tokensOf(carol.did, 'Free')
    expect(await c.ledger.chain(mine.parentId!)).to.not.have.length(0)
    // carol spends it through quorums that never saw its ancestry
    const back = await c.sender.transfer({ sender: carol.did, receiver: alice.did, amountMilli: 1, memo: 'back', quorums: set2 }, carol.owner)
    expect(back.delivered).to.equal(true)
    expect(await balance(c, carol.did)).to.equal(0)
  })

  it('a validator from before the missing-ancestors answer (it refuses "no chain supplied") is sent every ancestor once', async () => {
    const { a, alice } = std
    const d = net.addNode('D')
    const dave = await net.addDid(d)
    // old-style answers: a quorum's no and a receiver's refusal name no missing ancestors
    const t = a.sender as unknown as { transport: { prepare: (r: PrepareRequest) => Promise<PrepareReply>, deliver: (r: { bundle: ChainBundle }) => Promise<{ accepted: boolean, missing?: string[] }> } }
    const base = { ...t.transport }
    const seen: number[] = []
    let oldPrepares = 0
    t.transport.prepare = async (r) => {
      const reply = await base.prepare(r)
      if (reply.vote === 'no' && reply.missing !== undefined) { oldPrepares++; return { vote: 'no', quorumDid: reply.quorumDid, reason: `token ${reply.missing[0]!}: no chain supplied` } }
      return reply
    }
    t.transport.deliver = async (r) => {
      seen.push(Object.keys(r.bundle.chains).length)
      const reply = await base.deliver(r)
      if (reply.accepted === false) throw new Error(`chain of token x is invalid: token ${reply.missing![0]!}: no chain supplied`)
      return reply
    }
    try {
      // a fresh quorum set so the quorums lack the ancestry too
      const set3: string[] = []
      for (let i = 0; i < 5; i++) {
        const q = net.addNode(`u${i}`)
        const qd = await net.addDid(q)
        await net.mint(q, qd.did, 3)
        set3.push(qd.did)
      }
      net.quorumDids.push(...set3)
      const r = await a.sender.transfer({ sender: alice.did, receiver: dave.did, amountMilli: 1, memo: 'old peers', quorums: set3 }, alice.owner)
      expect(r.delivered).to.equal(true)
      expect(await balance(d, dave.did)).to.equal(1)
      expect(oldPrepares).to.be.greaterThan(0)
      expect(seen).to.have.length(2)
      expect(seen[0]).to.equal(2)
      expect(seen[1]).to.be.greaterThan(70)
    } finally {
      t.transport.prepare = base.prepare
      t.transport.deliver = base.deliver
    }
  })

  it('refuses a hostile bundle past the guard with a plain no, and goes on serving', async () => {
    const { a, alice, bob } = std
    let captured: PrepareRequest | undefined
    const asked = new Set<string>()
    const t = a.sender as unknown as { transport: { prepare: (r: PrepareRequest) => Promise<PrepareReply> } }
    const base = t.transport.prepare
    t.transport.prepare = async (r) => { captured ??= structuredClone(r); asked.add(r.quorumDid); return await base(r) }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1, memo: 'capture', quorums: net.quorumDids.slice(0, 7) }, alice.owner)
    t.transport.prepare = base
    expect(captured).to.not.equal(undefined)
    // a quorum that holds no vote for the transaction (a vote it gave would simply be answered again)
    const other = net.quorumDids.slice(0, 7).find((d) => !asked.has(d))!
    const quorum = net.nodeOf(other).quorum
    captured!.quorumDid = other
    const tooMany = structuredClone(captured!)
    tooMany.bundle.chains.junk = Array.from({ length: MAX_BUNDLE_BLOCKS + 1 }, () => new Uint8Array(1))
    const r1 = await quorum.prepare(tooMany)
    expect(r1.vote).to.equal('no')
    expect((r1 as { reason: string }).reason).to.match(/bundle carries \d+ blocks, more than the 250000 accepted/)
    const tooBig = structuredClone(captured!)
    tooBig.bundle.contents.junk = 'x'.repeat(48 * 1024 * 1024 + 1)
    const r2 = await quorum.prepare(tooBig)
    expect(r2.vote).to.equal('no')
    expect((r2 as { reason: string }).reason).to.match(/bundle carries \d+ bytes/)
    const next = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1, memo: 'after', quorums: net.quorumDids.slice(0, 7) }, alice.owner)
    expect(next.delivered).to.equal(true)
  })

  it('everything left goes at once: the untouched whole token and the deep rest, as they are', async () => {
    const { a, alice, b, bob } = std
    const left = await balance(a, alice.did)
    const bobHad = await balance(b, bob.did)
    const all = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: left, memo: 'the rest', quorums: net.quorumDids.slice(0, 7) }, alice.owner)
    expect(all.delivered).to.equal(true)
    expect(await balance(a, alice.did)).to.equal(0)
    expect(await balance(b, bob.did)).to.equal(bobHad + left)
  })
})
