import { expect } from 'chai'
import { ClaimTable, MAX_CLAIMANTS, claimResult, claimThreshold, tallyState, type ClaimAnswer } from '../../../src/consensus/claims.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { SimNet, balance, memoryClaimStore, twoQuorumSets, type SimDid, type SimNode } from './harness.js'

const TX1 = '1'.repeat(64)
const TX2 = '2'.repeat(64)
const S1 = 'QmS1'
const S2 = 'QmS2'

describe('consensus: claims of spent states (arbiter table, thresholds)', () => {
  it('the threshold leaves two conflicting claims at least two shared arbiters (one liar is not enough), and tolerates a third of the arbiters down', () => {
    for (let n = 2; n <= 60; n++) {
      const q = claimThreshold(n)
      // honest grants are disjoint between two conflicting claims; a liar grants both
      expect(2 * q - n, `n=${n}`).to.be.at.least(2)
      expect(n - q, `n=${n}`).to.equal(Math.floor((n - 1) / 3))
    }
    expect(claimThreshold(1)).to.equal(1)
    expect(claimThreshold(20)).to.equal(14)
  })

  it('an arbiter grants the first claim of a state, refuses another transaction, grants the same one again', async () => {
    const t = new ClaimTable(memoryClaimStore(), { now: () => 1 })
    expect(await t.claim(TX1, [S1, S2], { peer: 'p1', quorum: 'q1' })).to.deep.equal([{ granted: true }, { granted: true }])
    expect(await t.claim(TX2, [S2], { peer: 'p2', quorum: 'q2' })).to.deep.equal([{ granted: false, holder: TX1 }])
    expect(await t.claim(TX1, [S2], { peer: 'p3', quorum: 'q3' })).to.deep.equal([{ granted: true }])
    // a spent marker of another transaction refuses, naming its spender
    expect(await t.claim(TX2, ['QmS3'], { peer: 'p2', quorum: 'q2' }, [TX1])).to.deep.equal([{ granted: false, holder: TX1, spent: true }])
  })

  it('a claim ends when every claimant released it, or stays for good once its transaction committed', async () => {
    const store = memoryClaimStore()
    let now = 1000
    const t = new ClaimTable(store, { now: () => now })
    await t.claim(TX1, [S1], { peer: 'p1', quorum: 'q1', nonce: 'n1' })
    await t.claim(TX1, [S1], { peer: 'p2', quorum: 'q2', nonce: 'n2' })
    expect(await t.release(TX1, [S1], 'q1', 'n1')).to.equal(0)
    expect(await t.claim(TX2, [S1], { peer: 'x', quorum: 'x' })).to.deep.equal([{ granted: false, holder: TX1 }])
    // a release by a quorum that never claimed, or of another claim's nonce, changes nothing
    expect(await t.release(TX1, [S1], 'stranger', 'n2')).to.equal(0)
    expect(await t.release(TX1, [S1], 'q2', 'n1')).to.equal(0)
    expect(await t.release(TX1, [S1], 'q2', 'n2')).to.equal(1)
    expect(await t.claim(TX2, [S1], { peer: 'x', quorum: 'x', nonce: 'nx' })).to.deep.equal([{ granted: true }])
    // stale claims are listed for the sweep; a committed one is not, and is never freed
    now += 60_000
    expect((await t.stale(30_000)).map((s) => s.stateHash)).to.deep.equal([S1])
    await t.settle(S1, TX2, 'committed')
    // kept for good, the record holds its transaction only (an arbiter keeps one for every state spent)
    expect(store.map.get(S1)).to.deep.equal({ txid: TX2, claimants: [], at: 1000, committed: true })
    expect(await t.stale(0)).to.deep.equal([])
    expect(await t.release(TX2, [S1], 'x', 'nx')).to.equal(0)
    await t.settle(S1, TX2, 'released')
    expect(await t.claim(TX1, [S1], { peer: 'p1', quorum: 'q1' })).to.deep.equal([{ granted: false, holder: TX2, spent: true }])
    // an outcome of another transaction than the one holding the claim changes nothing
    await t.claim(TX1, [S2], { peer: 'p1', quorum: 'q1' })
    await t.settle(S2, TX2, 'released')
    expect(store.map.get(S2)?.txid).to.equal(TX1)
    // its transaction's marker (signed by one of its quorums, as the sweep checks): kept for good as its
    await t.superseded(S2, TX1)
    expect(store.map.get(S2)).to.deep.include({ txid: TX1, claimants: [], committed: true })
    expect(await t.claim(TX2, [S2], { peer: 'x', quorum: 'x', nonce: 'nx' })).to.deep.equal([{ granted: false, holder: TX1, spent: true }])
  })

  it('more claimants of one transaction than a record keeps are granted (a burnt ancestor re-claimed by a chain of payments), and the full record is never freed by releases', async () => {
    const store = memoryClaimStore()
    const t = new ClaimTable(store, { now: () => 1 })
    for (let i = 0; i < MAX_CLAIMANTS + 4; i++) {
      expect(await t.claim(TX1, [S1], { peer: `p${i}`, quorum: `q${i}`, nonce: `n${i}` })).to.deep.equal([{ granted: true }], `claimant ${i + 1}`)
    }
    expect(store.map.get(S1)?.claimants).to.have.length(MAX_CLAIMANTS)
    expect(store.map.get(S1)?.full).to.equal(true)
    // every written claimant releases: a claimant the record does not name may have signed, so the state stays held
    for (let i = 0; i < MAX_CLAIMANTS; i++) await t.release(TX1, [S1], `q${i}`, `n${i}`)
    expect(await t.claim(TX2, [S1], { peer: 'x', quorum: 'x', nonce: 'nx' })).to.deep.equal([{ granted: false, holder: TX1 }])
    await t.settle(S1, TX1, 'released')
    expect(await t.claim(TX2, [S1], { peer: 'x', quorum: 'x', nonce: 'nx' })).to.deep.equal([{ granted: false, holder: TX1 }])
    // it is kept for good, as any claim is, once its transaction committed
    await t.settle(S1, TX1, new Map())
    await t.superseded(S1, TX1)
    expect(store.map.get(S1)).to.deep.include({ txid: TX1, committed: true })
  })

  it('a seal needs the consents of `needed` distinct claimant quorums of the transaction it is for; it then stands for good: no release, outcome or spent marker of it ends it', async () => {
    const t = new ClaimTable(memoryClaimStore(), { now: () => 1 })
    for (const i of [1, 2, 3]) await t.claim(TX1, [S1], { peer: `p${i}`, quorum: `q${i}`, nonce: `n${i}` })
    // a claimant of another transaction (a burnt ancestor claimed via TX2) gives no consent for TX1
    await t.claim(TX1, [S1], { peer: 'p9', quorum: 'q9', nonce: 'n9', tx: TX2 })
    expect((await t.seal([{ stateHash: S1, holder: TX1, forTx: TX1 }], new Set(['n1', 'n2', 'n9']), 3))[0]).to.deep.include({ sealed: false, holder: TX1 })
    expect(await t.seal([{ stateHash: S1, holder: TX1, forTx: TX1 }], new Set(['n1', 'n2', 'n3']), 3)).to.deep.equal([{ sealed: true }])
    expect(await t.release(TX1, [S1], 'q1', 'n1')).to.equal(0)
    await t.settle(S1, TX1, 'released')
    await t.superseded(S1, TX1)
    expect((await t.records([S1]))[0]).to.deep.include({ txid: TX1, committed: true })
    expect(await t.claim(TX2, [S1], { peer: 'x', quorum: 'x', nonce: 'nx' })).to.deep.equal([{ granted: false, holder: TX1, spent: true }])
    // a state held by another transaction, or held by none, is not sealed
    expect((await t.seal([{ stateHash: S1, holder: TX2, forTx: TX2 }], new Set(['nx']), 1))[0]).to.deep.include({ sealed: false, holder: TX1 })
    expect((await t.seal([{ stateHash: S2, holder: TX1, forTx: TX1 }], new Set(['n1', 'n2', 'n3']), 3))[0]!.sealed).to.equal(false)
    expect((await t.records([S2]))[0]).to.equal(undefined)
  })

  it('tallies a state over its arbiters: silent and foreign answers do not count; the cause is named', () => {
    const yes: ClaimAnswer = { granted: true }
    const no: ClaimAnswer = { granted: false, holder: TX2 }
    const arbiters = ['a', 'b', 'c', 'd', 'e', 'f', 'g']
    const enough = tallyState(S1, arbiters, new Map([['a', yes], ['b', yes], ['c', yes], ['d', yes], ['e', yes], ['x', yes]]))
    expect(enough).to.include({ arbiters: 7, needed: 5, grants: 5, silent: 2 })
    expect(claimResult([enough]).granted).to.equal(true)
    const split = tallyState(S1, arbiters, new Map<string, ClaimAnswer>([['a', yes], ['b', yes], ['c', yes], ['d', yes], ['e', no], ['f', no], ['g', no]]))
    const r = claimResult([enough, split])
    expect(r.granted).to.equal(false)
    if (!r.granted) { expect(r.code).to.equal('STATE_CLAIMED'); expect(r.holder).to.equal(TX2); expect(r.reason).to.match(/STATE_CLAIMED/) }
    const cut = claimResult([tallyState(S1, arbiters, new Map([['a', yes], ['b', yes], ['c', yes], ['d', yes]]))])
    expect(cut.granted === false && cut.code).to.equal('CLAIM_UNREACHABLE')
    const spent = claimResult([tallyState(S1, arbiters, new Map<string, ClaimAnswer>([['a', { granted: false, holder: TX1, spent: true }]]))])
    expect(spent.granted === false && spent.code).to.equal('STATE_SPENT')
  })
})

describe('consensus: one wallet on two nodes racing one token through two disjoint quorum sets (claims)', function () {
  this.timeout(120_000)

  const network = async (): ReturnType<typeof twoQuorumSets> => await twoQuorumSets(true)

  /** A fresh wallet with one token, on X and (restored) on Y. */
  async function wallet (net: SimNet, x: SimNode, y: SimNode): Promise<SimDid> {
    const alice = await net.addDid(x)
    y.dids.set(alice.did, alice)
    for (const id of await net.mint(x, alice.did, 1)) {
      y.ledger.tokens.set(id, { ...x.ledger.tokens.get(id)! })
      y.ledger.blocks.set(id, [...x.ledger.blocks.get(id)!])
    }
    return alice
  }

  async function race (n: Awaited<ReturnType<typeof network>>, alice: SimDid): Promise<Array<PromiseSettledResult<unknown>>> {
    const { x, y, set1, set2, bob, carol } = n
    return await Promise.allSettled([
      x.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'x', quorums: set1 }, alice.owner),
      (async () => {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 10))
        return await y.sender.transfer({ sender: alice.did, receiver: carol.did, amountMilli: 1000, memo: 'y', quorums: set2 }, alice.owner)
      })()
    ])
  }

  it('at most one of the two spends is signed, in every race; a refused spend names STATE_CLAIMED or the spend that won, and its tokens are Free again', async () => {
    const n = await network()
    let paidTwice = 0
    let won = 0
    for (let i = 0; i < 6; i++) {
      const alice = await wallet(n.net, n.x, n.y)
      const results = await race(n, alice)
      const ok = results.filter((r) => r.status === 'fulfilled').length
      if (ok === 2) paidTwice++
      won += ok
      for (const r of results) {
        if (r.status === 'rejected') {
          const e = r.reason as RbtError
          expect(e).to.be.instanceOf(RbtError)
          expect([ErrorCode.STATE_CLAIMED, ErrorCode.CONSENSUS_FAILED], e.message).to.include(e.code)
          expect(e.message).to.match(/STATE_CLAIMED|spent by|held by transaction|exhausted/)
        }
      }
      const bobGot = await balance(n.bobNode, n.bob.did)
      const carolGot = await balance(n.carolNode, n.carol.did)
      expect(bobGot + carolGot, `race ${i}: the token reached ${bobGot} + ${carolGot}`).to.be.at.most(1000 * (i + 1))
      // the loser's copy is Free again (a retry later learns it was spent)
      if (ok < 2) {
        const lockedX = await n.x.ledger.tokensOf(alice.did, 'Locked')
        const lockedY = await n.y.ledger.tokensOf(alice.did, 'Locked')
        expect(lockedX.length + lockedY.length).to.equal(0)
      }
    }
    expect(paidTwice).to.equal(0)
    expect(won, 'most races have a winner').to.be.at.least(3)
  })

  it('one arbiter granting every claim still lets at most one of the two spends be signed', async () => {
    const n = await network()
    // a quorum of neither set lies, and so does the receiver's node: grants everything asked
    n.net.nodes.find((m) => m.name === 'B')!.liar = true
    let paidTwice = 0
    let liarGrantedBoth = 0
    for (let i = 0; i < 6; i++) {
      const alice = await wallet(n.net, n.x, n.y)
      n.net.claimLog.length = 0
      const results = await race(n, alice)
      if (results.every((r) => r.status === 'fulfilled')) paidTwice++
      const liarTx = new Set(n.net.claimLog.filter((c) => c.arbiter === 'B' && c.granted).map((c) => c.txid))
      if (liarTx.size >= 2) liarGrantedBoth++
    }
    expect(paidTwice).to.equal(0)
    expect(liarGrantedBoth, 'the liar granted both spends of a race').to.be.at.least(1)
  })

  it('two copies splitting the same token in two different ways: the burnt token is claimed too, so at most one of the two payments is signed; a later payment with the winner\'s other part goes through', async () => {
    const n = await network()
    let paidTwice = 0
    for (let i = 0; i < 3; i++) {
      const alice = await wallet(n.net, n.x, n.y)
      const bobBefore = await balance(n.bobNode, n.bob.did)
      const carolBefore = await balance(n.carolNode, n.carol.did)
      const results = await Promise.allSettled([
        n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x', quorums: n.set1 }, alice.owner),
        n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 300, memo: 'y', quorums: n.set2 }, alice.owner)
      ])
      if (results.every((r) => r.status === 'fulfilled')) paidTwice++
      const paid = (await balance(n.bobNode, n.bob.did) - bobBefore) + (await balance(n.carolNode, n.carol.did) - carolBefore)
      expect(paid, `race ${i}`).to.be.at.most(500)
      // the winner's other part is its owner's to spend
      const winner = results[0].status === 'fulfilled' ? n.x : results[1].status === 'fulfilled' ? n.y : undefined
      if (winner !== undefined) {
        const left = await balance(winner, alice.did)
        const again = await winner.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: left, memo: 'rest', quorums: winner === n.x ? n.set1 : n.set2 }, alice.owner)
        expect(again.delivered).to.equal(true)
      }
    }
    expect(paidTwice).to.equal(0)
    expect(n.net.burnClaims.length, 'burnt ancestors were claimed').to.be.greaterThan(0)
  })

  it('a partition with neither side holding more than two thirds of the arbiters: both sides refuse (CLAIM_UNREACHABLE), nothing is signed, the tokens stay', async () => {
    const n = await network()
    const alice = await wallet(n.net, n.x, n.y)
    const side1 = new Set(['q0', 'q1', 'q2', 'q3', 'q4', 'X', 'B'])
    n.net.cut = (a, b) => side1.has(a) !== side1.has(b)
    const results = await race(n, alice)
    for (const r of results) {
      expect(r.status).to.equal('rejected')
      expect((r as PromiseRejectedResult).reason.code).to.equal(ErrorCode.CLAIM_UNREACHABLE)
    }
    expect(await balance(n.x, alice.did)).to.equal(1000)
    expect(await balance(n.y, alice.did)).to.equal(1000)
    // healed: one spend goes through
    n.net.cut = () => false
    const r = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'healed', quorums: n.set1 }, alice.owner)
    expect(r.delivered).to.equal(true)
  })

  it('a sender that restarts in SIGNING while the network is cut claims again for its signers once the network is whole (the same claims, granted again), and the transfer finishes', async () => {
    const n = await network()
    const alice = await wallet(n.net, n.x, n.y)
    const t = n.x.sender as unknown as { transport: import('../../../src/consensus/messages.js').ConsensusTransport }
    const base = t.transport
    let cutOnce = true
    t.transport = {
      ...base,
      sign: async (r) => {
        if (cutOnce) {
          cutOnce = false
          // the network is cut (X, set 1 and bob's node alone) and the first signatures are lost
          const side = new Set(['q0', 'q1', 'q2', 'q3', 'q4', 'X', 'B'])
          n.net.cut = (a, b) => side.has(a) !== side.has(b)
          throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'cut')
        }
        return await base.sign(r)
      }
    }
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(first?.code, first?.message).to.equal(ErrorCode.SIGNING_PENDING)
    n.net.cut = () => false
    // a restarted sender knows no grant: it claims again with the votes it kept
    n.x.restartSender()
    await n.x.sender.recover()
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
  })

  it('the loser of a claim held by a spend in flight gets STATE_CLAIMED naming the winner; the claim ends with the winner\'s outcome', async () => {
    const n = await network()
    const alice = await wallet(n.net, n.x, n.y)
    // X's spend holds its claim (its checker claimed at PREPARE) and waits before its signatures
    let go: () => void = () => {}
    const gate = new Promise<void>((resolve) => { go = resolve })
    let prepared: () => void = () => {}
    const held = new Promise<void>((resolve) => { prepared = resolve })
    const t = n.x.sender as unknown as { transport: import('../../../src/consensus/messages.js').ConsensusTransport }
    const base = t.transport
    t.transport = { ...base, sign: async (r) => { prepared(); await gate; return await base.sign(r) } }
    const first = n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    await held
    const txX = (await n.x.sender.openTransfers())[0]!.txid
    const second = await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(second?.code).to.equal(ErrorCode.STATE_CLAIMED)
    expect(second?.message).to.include(txX)
    expect(second?.details).to.deep.equal({ claimedBy: txX })
    expect(await balance(n.y, alice.did), 'the loser\'s token is Free again').to.equal(1000)
    go()
    expect((await first).delivered).to.equal(true)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
  })
})

describe('claims: the holder a tally reports', () => {
  it('is another transaction: a refusal naming the claiming transaction itself (its quorums released here first) does not hide the real holder', () => {
    const own = 'aa'.repeat(32)
    const other = 'bb'.repeat(32)
    const t = tallyState('s', ['a', 'b', 'c'], new Map<string, ClaimAnswer>([['a', { granted: false, holder: own }], ['b', { granted: false, holder: other }], ['c', { granted: true }]]), own)
    expect(t.holder).to.equal(other)
    expect(t.grants).to.equal(1)
    const alone = tallyState('s', ['a', 'c'], new Map<string, ClaimAnswer>([['a', { granted: false, holder: own }], ['c', { granted: true }]]), own)
    expect(alone.holder, 'no other transaction named').to.equal(undefined)
  })
})
