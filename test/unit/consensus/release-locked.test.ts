import { expect } from 'chai'
import type { OutgoingRecord, VoteRecord } from '../../../src/consensus/records.js'
import type { TokenState } from '../../../src/consensus/ports.js'
import { releaseLockedTokens } from '../../../src/consensus/release-locked.js'
import { SimNet, balance, type SimNode } from './harness.js'

/** Every Locked token of a node's DIDs (what the node gathers from its owner index). */
async function lockedOf (n: SimNode): Promise<TokenState[]> {
  const out: TokenState[] = []
  for (const did of n.dids.keys()) out.push(...await n.ledger.tokensOf(did, 'Locked'))
  return out
}

async function release (n: SimNode, minAgeMs = 60_000): Promise<Awaited<ReturnType<typeof releaseLockedTokens>>> {
  return await releaseLockedTokens({ sender: n.sender, quorum: n.quorum, locked: await lockedOf(n), minAgeMs })
}

/** Value of every token the DIDs own that is not Transferred/Burnt, counted at the owner's node. */
async function owned (net: SimNet, dids: string[]): Promise<number> {
  let sum = 0
  for (const did of dids) {
    const n = net.nodes.find((x) => x.dids.has(did))!
    for (const t of await n.ledger.tokensOf(did)) if (t.status === 'Free' || t.status === 'Locked' || t.status === 'Pledged') sum += t.valueMilli
  }
  return sum
}

const outgoing = (n: SimNode): OutgoingRecord[] => [...(n.ledger.recs.get('cs-outgoing')?.values() ?? [])] as OutgoingRecord[]

describe('consensus: release-all-locked-tokens, decided by the two-phase records', function () {
  this.timeout(60_000)

  it('a PREPARING transfer left by a crash is aborted properly (tokens Free, quorums told ABORT, their pledges freed); sums stay exact', async () => {
    const { net, a, bob, alice, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const before = await owned(net, [alice.did, ...net.quorumDids])
    // the process "dies" after the votes: the abort of the failing run never reaches the disk
    a.fault = (s) => { if (s === 'voted') { a.ledger.failNextCommit = true; throw new Error('crash') } }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1500, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    expect(outgoing(a)[0].state).to.equal('PREPARING')
    const lockedIds = (await lockedOf(a)).map((t) => t.tokenId).sort()
    expect(lockedIds).to.have.length(2)
    const pledgesLocked = (await Promise.all(quorums.map(lockedOf))).flat()
    expect(pledgesLocked.length).to.be.greaterThan(0)

    // too recent: kept, and nothing changes
    const early = await release(a)
    expect(early.released).to.have.length(0)
    expect(early.kept).to.have.length(2)
    expect(early.kept[0].record_state).to.equal('PREPARING')
    expect(early.kept[0].reason).to.match(/released only after/)

    net.now += 61_000
    const r = await release(a)
    expect(r.kept).to.have.length(0)
    expect(r.released.map((x) => x.token).sort()).to.deep.equal(lockedIds)
    expect(r.released.every((x) => x.record_state === 'PREPARING')).to.equal(true)
    expect(outgoing(a)[0].state).to.equal('ABORTED')
    expect(await balance(a, alice.did)).to.equal(2000)
    const txid = outgoing(a)[0].txid
    expect(net.aborts.filter((x) => x.txid === txid).length).to.be.greaterThan(0)
    // the quorums released their reservation and pledge on the ABORT
    for (const q of quorums) {
      expect(await lockedOf(q)).to.have.length(0)
      for (const v of [...(q.ledger.recs.get('cs-votes')?.values() ?? [])] as VoteRecord[]) expect(v.state).to.equal('RELEASED')
    }
    expect(await owned(net, [alice.did, ...net.quorumDids])).to.equal(before)
    // a second run finds nothing
    expect(await release(a)).to.deep.equal({ released: [], kept: [] })
  })

  it('a transfer being prepared by this process is never released, however old', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    let during: Awaited<ReturnType<typeof release>> | undefined
    net.beforePrepare = async () => { net.now += 600_000; during = await release(a, 1000) }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(during!.released).to.have.length(0)
    expect(during!.kept).to.have.length(1)
    expect(during!.kept[0].reason).to.match(/in flight/)
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('SIGNING and COMMITTING transfers keep their tokens (they are, or may become, the receiver\'s); recovery then finishes them', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const before = await owned(net, [alice.did, bob.did])
    // one transfer stuck in SIGNING (too few signers)
    for (const q of quorums.slice(0, 3)) q.failSign = true
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    for (const q of quorums) q.failSign = false
    // one decided (COMMITTING) whose delivery never happened
    a.fault = (s) => { if (s === 'committing') throw new Error('crash after the decision') }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    expect(outgoing(a).map((o) => o.state).sort()).to.deep.equal(['COMMITTING', 'SIGNING'])
    net.now += 3_600_000
    const r = await release(a, 0)
    expect(r.released).to.have.length(0)
    expect(r.kept.map((k) => k.record_state).sort()).to.deep.equal(['COMMITTING', 'SIGNING'])
    expect(r.kept.find((k) => k.record_state === 'SIGNING')!.reason).to.match(/may have signed/)
    expect(r.kept.find((k) => k.record_state === 'COMMITTING')!.reason).to.match(/receiver/)
    expect(await lockedOf(a)).to.have.length(2)
    expect(await balance(a, alice.did)).to.equal(0)
    await a.sender.recover()
    await a.sender.recover()
    expect(await balance(b, bob.did)).to.equal(2000)
    expect(await owned(net, [alice.did, bob.did])).to.equal(before)
  })

  it('a Locked token no record explains, and a pledge Locked by a released vote, become Free; an open vote keeps its pledge', async () => {
    const { net, quorums } = await SimNet.standard()
    const q = quorums[0]
    const qDid = net.quorumDids[0]
    const [orphan, released, open] = (await q.ledger.tokensOf(qDid)).map((t) => t.tokenId)
    const lock = async (id: string, txid: string): Promise<void> => {
      const t = (await q.ledger.token(id))!
      await q.ledger.commit((w) => { w.putToken({ ...t, status: 'Locked', txid }) })
    }
    const vote = (txid: string, state: VoteRecord['state']): VoteRecord => ({
      txid, quorumDid: qDid, state, sender: 'x', receiver: 'y', senderPeer: 'A', amountMilli: 1000, states: [], pledge: [], pledgeMilli: 0,
      credit: { did: qDid, hash: txid, signType: '0', signature: '', privSignature: '' }, createdAt: net.now, updatedAt: net.now
    })
    await lock(orphan, 'a'.repeat(64))
    await lock(released, 'b'.repeat(64))
    await lock(open, 'c'.repeat(64))
    await q.ledger.commit((w) => {
      w.putRecord('cs-votes', `${qDid}/${'b'.repeat(64)}`, vote('b'.repeat(64), 'RELEASED'))
      w.putRecord('cs-votes', `${qDid}/${'c'.repeat(64)}`, vote('c'.repeat(64), 'RESERVED'))
    })
    const r = await release(q)
    expect(r.released.map((x) => x.token).sort()).to.deep.equal([orphan, released].sort())
    expect(r.released.find((x) => x.token === orphan)!.reason).to.match(/no record/)
    expect(r.released.find((x) => x.token === released)!.reason).to.match(/released vote/)
    expect(r.kept.map((x) => x.token)).to.deep.equal([open])
    expect(r.kept[0].reason).to.match(/open vote \(RESERVED\)/)
    expect((await q.ledger.token(orphan))!.status).to.equal('Free')
    expect((await q.ledger.token(released))!.status).to.equal('Free')
    expect((await q.ledger.token(open))!.status).to.equal('Locked')
    expect(await balance(q, qDid)).to.equal(2000)
  })

  it('the operator\'s release and the periodic recovery abort a stranded transfer once between them', async () => {
    const { net, a, bob, alice } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    a.fault = (s) => { if (s === 'voted') { a.ledger.failNextCommit = true; throw new Error('crash') } }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    const rec = outgoing(a)[0]
    expect(rec.state).to.equal('PREPARING')
    net.now += 61_000
    const [, r] = await Promise.all([a.sender.recover({ staleMs: 60_000 }), release(a)])
    expect(outgoing(a)[0].state).to.equal('ABORTED')
    expect(await balance(a, alice.did)).to.equal(2000)
    // one abort: each asked quorum told once
    expect(net.aborts.filter((x) => x.txid === rec.txid)).to.have.length(rec.asked.length)
    expect(r.released.length + r.kept.length).to.equal(2)
  })
})
