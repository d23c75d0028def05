import { expect } from 'chai'
import { validateChain } from '../../../src/tokenchain/validate.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { pledgeIndexKeys, putOutgoing, unb64, type OutgoingRecord, type PledgeRecord, type VoteRecord } from '../../../src/consensus/records.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import type { ChainBundle, ConsensusTransport } from '../../../src/consensus/messages.js'
import { SimNet, balance, chainSourceOf, type SimNode } from './harness.js'
import { TransferSender } from '../../../src/consensus/sender.js'
import { EvidenceStore } from '../../../src/consensus/evidence-store.js'
import { decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import { decodeContract } from '../../../src/tokenchain/contract.js'
import { markerPublishers, networkCheckers, NETWORK_CHECKERS } from '../../../src/consensus/quorum.js'
import { checkerKey, spentStatesOf } from '../../../src/consensus/quorum-checkers.js'
import { MIN_QUORUM_SIGNATURES as MIN_SIGNERS } from '../../../src/consensus/quorum-selection.js'
import { waitFor } from '../../helpers/wait.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'

async function totalOwned (net: SimNet, dids: string[]): Promise<number> {
  // every token counted once, at the node where its owner lives
  let sum = 0
  for (const did of dids) {
    const n = net.nodes.find((x) => x.dids.has(did))!
    for (const t of await n.ledger.tokensOf(did)) if (t.status === 'Free' || t.status === 'Locked') sum += t.valueMilli
  }
  return sum
}


/** Range reads of a quorum's holdings made while one of its PREPAREs runs, by quorum name (kept up to date). */
/**
 * The node stopped and started again over its store: the disk works again, the store replays what
 * it holds (a failed write it finds included), and what the process kept in memory is gone.
 */
function restartSender (n: SimNode): void {
  n.ledger.refuseCommit = undefined
  n.ledger.refuseRead = undefined
  n.ledger.reopen()
  n.sender = new TransferSender((n.sender as unknown as { opts: ConstructorParameters<typeof TransferSender>[0] }).opts)
}

function holdingsReadsDuringPrepare (nodes: readonly SimNode[]): Map<string, number> {
  const reads = new Map<string, number>()
  for (const q of nodes) {
    const ledger = q.ledger as unknown as { holdings: (...x: unknown[]) => Promise<unknown> }
    const holdings = ledger.holdings.bind(ledger)
    let preparing = 0
    ledger.holdings = async (...x) => { if (preparing > 0) reads.set(q.name, (reads.get(q.name) ?? 0) + 1); return await holdings(...x) }
    const prepare = q.quorum.prepare.bind(q.quorum)
    q.quorum.prepare = async (r) => { preparing++; try { return await prepare(r) } finally { preparing-- } }
  }
  return reads
}

describe('consensus: RBT transfer protocol (simulated nodes, real signatures)', function () {
  this.timeout(60_000)

  it('moves whole and part amounts; balances exact; chains valid at the receiver', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const q = net.quorumDids
    const send = async (from: SimNode, s: typeof alice, to: typeof bob, milli: number): Promise<string> =>
      (await from.sender.transfer({ sender: s.did, receiver: to.did, amountMilli: milli, memo: 'x', quorums: q }, s.owner)).txid
    await send(a, alice, bob, 500)
    expect(await balance(a, alice.did)).to.equal(1500)
    expect(await balance(b, bob.did)).to.equal(500)
    await send(a, alice, bob, 1499)
    expect(await balance(a, alice.did)).to.equal(1)
    expect(await balance(b, bob.did)).to.equal(1999)
    for (let i = 0; i < 4; i++) await send(b, bob, alice, 250)
    expect(await balance(a, alice.did)).to.equal(1001)
    expect(await balance(b, bob.did)).to.equal(999)
    await send(a, alice, bob, 1000)
    expect(await balance(a, alice.did)).to.equal(1)
    expect(await balance(b, bob.did)).to.equal(1999)
    const verifier = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    for (const t of await b.ledger.tokensOf(bob.did, 'Free')) {
      const res = await validateChain(await b.ledger.chain(t.tokenId), { tokenId: t.tokenId, verifier, tokenContent: t.content })
      expect(res.tip.owner).to.equal(bob.did)
    }
    // pledges exist on the quorums and are released after the pledge period
    const pledged = (await Promise.all(net.nodes.slice(0, 7).map(async (n) => (await n.quorum.pledgeSummary()).length))).reduce((x, y) => x + y, 0)
    expect(pledged).to.be.greaterThan(0)
    net.now += 120_000
    for (const n of net.nodes.slice(0, 7)) await n.quorum.sweep()
    for (const n of net.nodes.slice(0, 7)) expect(await n.quorum.pledgeSummary()).to.have.length(0)
  })

  it('fails cleanly with 3 of 7 quorums down and succeeds with 2 down', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    quorums[0].down = quorums[1].down = quorums[2].down = true
    try {
      await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
      expect.fail('should fail')
    } catch (e) { expect((e as Error).message).to.match(/consensus failed: [0-4] of 7 quorums agreed, 5 needed/) }
    expect(await balance(a, alice.did)).to.equal(2000)
    for (const n of quorums.slice(3)) for (const t of await n.ledger.tokensOf([...n.dids.keys()][0])) expect(t.status).to.be.oneOf(['Free', 'Burnt'])
    quorums[2].down = false
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('asks only the five quorums it needs; a signer that fails at SIGN is replaced by a quorum not asked before', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const asked = async (txid: string): Promise<string[]> => {
      const out: string[] = []
      for (const [i, n] of quorums.entries()) if (await n.ledger.record('cs-votes', `${net.quorumDids[i]}/${txid}`) !== undefined) out.push(net.quorumDids[i])
      return out
    }
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await asked(first.txid)).to.have.length(5)
    // the quorums of the list never asked are not sent an ABORT either (they hold nothing)
    await a.sender.notifyQuorums(first.txid)
    expect(net.aborts.filter((x) => x.txid === first.txid)).to.deep.equal([])
    // the second transfer: the second quorum to vote yes then refuses to sign
    let reserved = 0
    for (const q of quorums) q.fault = (step) => { if (step === 'quorum-reserved' && ++reserved === 2) q.failSign = true }
    const second = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await asked(second.txid)).to.have.length(6)
    await a.sender.notifyQuorums(second.txid)
    // only the quorum that voted and was then replaced is told to drop its vote
    expect([...new Set(net.aborts.filter((x) => x.txid === second.txid).map((x) => x.quorumDid))]).to.deep.equal(quorums.filter((q) => q.failSign).map((q) => net.quorumDids[quorums.indexOf(q)]))
    expect(await balance(b, bob.did)).to.equal(2000)
    const [token] = (await b.ledger.tokensOf(bob.did, 'Free')).filter((t) => t.txid === second.txid)
    const chain = await b.ledger.chain(token.tokenId)
    const signers = Object.keys(decodeBlockEnvelope(chain[chain.length - 1]).signatures).filter((d) => d !== alice.did)
    expect(signers).to.have.length(5)
    expect(signers.some((d) => quorums[net.quorumDids.indexOf(d)].failSign)).to.equal(false)
  })

  it('refuses insufficient balance and unknown receivers; nothing stays locked', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    for (const [to, milli, re] of [[bob.did, 1001, /insufficient balance/], ['bafybmi' + 'z'.repeat(52), 10, /unknown DID/]] as const) {
      try {
        await a.sender.transfer({ sender: alice.did, receiver: to, amountMilli: milli, memo: '', quorums: net.quorumDids }, alice.owner)
        expect.fail('should fail')
      } catch (e) { expect((e as Error).message).to.match(re) }
    }
    expect(await balance(a, alice.did)).to.equal(1000)
  })

  it('probes the receiver alongside the prepare round and waits for it before the decision', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    const events: string[] = []
    let answer: (ok: boolean) => void = () => {}
    t.transport = {
      ...base,
      // the probe answers only once a quorum has been asked: a sender that waited for it first never finishes
      probeReceiver: async (did) => { await new Promise<boolean>((resolve) => { answer = resolve }).then((ok) => { events.push('probe'); if (!ok) throw new RbtError(ErrorCode.PEER_UNREACHABLE, `receiver ${did} is down`) }); return {} },
      prepare: async (r) => { events.push('prepare'); answer(true); return await base.prepare(r) },
      sign: async (r) => { events.push('sign'); return await base.sign(r) }
    }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(events[0]).to.equal('prepare')
    expect(events.indexOf('probe')).to.be.lessThan(events.indexOf('sign'))
    expect(await balance(b, bob.did)).to.equal(1000)
    // an unreachable receiver found during the prepare round: aborted, tokens Free, never signed
    events.length = 0
    t.transport = { ...t.transport, prepare: async (r) => { events.push('prepare'); answer(false); return await base.prepare(r) } }
    try {
      await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
      expect.fail('should fail')
    } catch (e) { expect((e as Error).message).to.match(/is down/) }
    expect(events).to.not.include('sign')
    expect(await balance(a, alice.did)).to.equal(1000)
    expect(net.aborts.length).to.be.greaterThan(0)
    const states: string[] = []
    for await (const [, r] of a.ledger.records<OutgoingRecord>('cs-outgoing')) states.push(r.state)
    expect(states.filter((x) => x === 'ABORTED')).to.have.length(1)
  })

  it('double spend from a copied wallet: exactly one of two concurrent transfers wins', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const copy = net.addNode('A-copy', a.ledger.clone())
    copy.dids.set(alice.did, alice)
    // both hold alice; route alice's outcome queries per node name
    const results = await Promise.allSettled([
      a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'one', quorums: net.quorumDids }, alice.owner),
      copy.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'two', quorums: net.quorumDids }, alice.owner)
    ])
    const ok = results.filter((r) => r.status === 'fulfilled')
    expect(ok, JSON.stringify(results.map((r) => r.status === 'rejected' ? String(r.reason) : 'ok'))).to.have.length(1)
    expect(await balance(b, bob.did)).to.equal(1000)
    // a later attempt from the losing copy is refused too (the state is spent)
    const loser = results[0].status === 'rejected' ? a : copy
    try {
      await loser.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'again', quorums: net.quorumDids }, alice.owner)
      expect.fail('should fail')
    } catch (e) { expect((e as Error).message).to.match(/consensus failed/) }
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('asks the anchor and the next four quorums at once (the four waited for the anchor\'s answer before)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    let inFlight = 0
    let most = 0
    const asked: string[] = []
    t.transport = {
      ...base,
      prepare: async (r) => {
        asked.push(r.quorumDid)
        most = Math.max(most, ++inFlight)
        try { return await base.prepare(r) } finally { inFlight-- }
      }
    }
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 300, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(most).to.equal(MIN_SIGNERS)
    expect(asked).to.have.length(MIN_SIGNERS)
    expect(res.quorums).to.have.length(MIN_SIGNERS)
    expect(await balance(b, bob.did)).to.equal(300)
  })

  it('two copies racing: the one the anchor holds the state for wins, asking again the quorums the other held meanwhile', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const copy = net.addNode('A-copy', a.ledger.clone())
    copy.dids.set(alice.did, alice)
    // the copy reaches the four quorums after the anchor first, the original reaches the anchor first
    let anchorTaken: () => void = () => {}
    const anchorDone = new Promise<void>((resolve) => { anchorTaken = resolve })
    let othersHeld: () => void = () => {}
    const copyHeld = new Promise<void>((resolve) => { othersHeld = resolve; setTimeout(resolve, 5000) })
    let copyAnswered = 0
    const gate = (n: SimNode, original: boolean): void => {
      const t = n.sender as unknown as { transport: ConsensusTransport }
      const base = t.transport
      t.transport = {
        ...base,
        prepare: async (r) => {
          const isAnchor = r.quorumDid === r.asked?.[0]
          if (original) {
            if (!isAnchor) await copyHeld
            const reply = await base.prepare(r)
            if (isAnchor) anchorTaken()
            return reply
          }
          if (isAnchor) await anchorDone
          const reply = await base.prepare(r)
          if (!isAnchor && ++copyAnswered === MIN_SIGNERS - 1) othersHeld()
          return reply
        }
      }
    }
    gate(a, true)
    gate(copy, false)
    const results = await Promise.allSettled([
      a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'one', quorums: net.quorumDids }, alice.owner),
      copy.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'two', quorums: net.quorumDids }, alice.owner)
    ])
    expect(copyAnswered, 'the copy held the four quorums after the anchor').to.equal(MIN_SIGNERS - 1)
    expect(results[0].status, results[0].status === 'rejected' ? String(results[0].reason) : '').to.equal('fulfilled')
    expect(results[1].status).to.equal('rejected')
    expect(String((results[1] as PromiseRejectedResult).reason)).to.match(/held by transaction/)
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('two transfers of the same tokens from one node: one wins, the other finds no free tokens', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const results = await Promise.allSettled([0, 1].map(async () => await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)))
    expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1)
    expect(await balance(b, bob.did)).to.equal(1000)
    expect(await balance(a, alice.did)).to.equal(0)
  })

  it('the pledge evidence stays named in the transfer\'s record until the delivery, then leaves it (it was rewritten at every later step)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const seen: Array<{ state: string, evidence: boolean }> = []
    a.fault = (s) => {
      if (s !== 'committing' && s !== 'committed') return
      for (const r of a.ledger.recs.get('cs-outgoing')?.values() ?? []) seen.push({ state: (r as OutgoingRecord).state, evidence: (r as OutgoingRecord).evidence !== undefined })
    }
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    a.fault = undefined
    expect(seen).to.deep.equal([{ state: 'COMMITTING', evidence: true }, { state: 'COMMITTED', evidence: false }])
    await waitFor(async () => ((await a.ledger.record<OutgoingRecord>('cs-outgoing', res.txid))?.notified.length ?? 0) >= res.quorums.length, { what: 'every quorum told' })
    expect((await a.ledger.record<OutgoingRecord>('cs-outgoing', res.txid))?.evidence).to.equal(undefined)
    expect(await balance(b, bob.did)).to.equal(500)
  })

  it('the signed block is written once per payment, beside the record, not again at COMMITTED and when the quorums are told', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const values: string[] = []
    const commit = a.ledger.commit.bind(a.ledger)
    a.ledger.commit = async (build) => await commit((w) => build({ ...w, putRecord: (c, k, v) => { values.push(JSON.stringify(v)); w.putRecord(c, k, v) } }))
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    await waitFor(async () => ((await a.sender.record(res.txid))?.notified.length ?? 0) >= res.quorums.length, { what: 'every quorum told' })
    const block = (await a.sender.record(res.txid))!.block!
    expect(values.filter((v) => v.includes(block)), 'records carrying the signed block').to.have.length(1)
    expect((await a.sender.outcome(res.txid)).block, 'the outcome a quorum asks for still carries it').to.deep.equal(unb64(block))
    expect(await balance(b, bob.did)).to.equal(500)
  })

  it('a payment\'s record is written once per step: who answered the PREPAREs goes with the SIGNING record, not in a PREPARING record of its own', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const states: string[] = []
    const commit = a.ledger.commit.bind(a.ledger)
    a.ledger.commit = async (build) => await commit((w) => build({ ...w, putRecord: (c, k, v) => { if (c === 'cs-outgoing') states.push((v as OutgoingRecord).state); w.putRecord(c, k, v) } }))
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    await waitFor(async () => ((await a.sender.record(res.txid))?.notified.length ?? 0) >= res.quorums.length, { what: 'every quorum told' })
    expect(states).to.deep.equal(['PREPARING', 'SIGNING', 'COMMITTING', 'COMMITTED', 'COMMITTED'])
    const rec = (await a.sender.record(res.txid))!
    expect(rec.contacted).to.have.length.of.at.least(5)
    expect(rec.yes).to.have.length.of.at.least(5)
    expect(await balance(b, bob.did)).to.equal(500)
  })

  it('the signers\' pledge evidence is written by block, once: later payments through the same quorums write only the blocks not stored yet', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    const delivered: number[] = []
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    // the evidence each delivery carries (its blocks in base64 and its contents, as a record held it before)
    const size = (p: ChainBundle | undefined): number => Object.values(p?.chains ?? {}).flat().reduce((n, x) => n + Buffer.from(x).toString('base64').length, 0) + Object.values(p?.contents ?? {}).reduce((n, x) => n + x.length, 0)
    t.transport = { ...base, deliver: async (r) => { delivered.push(size(r.pledges)); return await base.deliver(r) } }
    let written = 0
    let evidence = 0
    const commit = a.ledger.commit.bind(a.ledger)
    a.ledger.commit = async (build) => await commit((w) => build({
      ...w,
      putRecord: (c, k, v) => {
        const n = k.length + JSON.stringify(v).length
        if (c.startsWith('cs-')) written += n
        if (c === 'cs-evidence') evidence += n
        w.putRecord(c, k, v)
      }
    }))
    const perPayment: Array<{ written: number, evidence: number }> = []
    for (let i = 0; i < 4; i++) {
      written = 0
      evidence = 0
      const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 100, memo: '', quorums: net.quorumDids }, alice.owner)
      await waitFor(async () => ((await a.sender.record(res.txid))?.notified.length ?? 0) >= res.quorums.length, { what: 'every quorum told' })
      perPayment.push({ written, evidence })
    }
    expect(await balance(b, bob.did)).to.equal(400)
    // every payment delivers its whole evidence; a later one writes less than it in all of the
    // sender's records together (the record at COMMITTING alone carried all of it), and of the
    // evidence's own blocks only the few that changed
    const said = `sender's record bytes ${JSON.stringify(perPayment)}, evidence delivered ${delivered.join(', ')}`
    expect(delivered.every((n) => n > 0)).to.equal(true)
    expect(perPayment[3].written, said).to.be.below(delivered[3])
    expect(perPayment[3].evidence, said).to.be.below(delivered[3] / 4)
  })

  it('a sender restarted after the decision delivers the pledge evidence read back from its store (a receiver without a quorum list needs it)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    expect(b.quorumList).to.deep.equal([])
    a.fault = (s) => { if (s === 'committing') throw new Error('crash at committing') }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    a.restartSender()
    const [rec] = await a.sender.openTransfers()
    expect(rec?.state).to.equal('COMMITTING')
    expect(a.ledger.recs.get('cs-evidence')?.size ?? 0, 'evidence blocks stored').to.be.above(0)
    await a.sender.recover()
    expect((await a.sender.record(rec!.txid))?.state).to.equal('COMMITTED')
    expect(await balance(b, bob.did)).to.equal(500)
    expect(await balance(a, alice.did)).to.equal(500)
  })

  it('the sender writes the new block while the delivery runs; its tokens turn Transferred and the record COMMITTED once the receiver took them', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    const during: string[] = []
    // the receiver answers only once the sender stored the new block (it waited for the answer before)
    t.transport = {
      ...base,
      deliver: async (r) => {
        const locked = await a.ledger.tokensOf(alice.did, 'Locked')
        await waitFor(async () => decodeBlockEnvelope((await a.ledger.chain(locked[0].tokenId)).at(-1)!).content.transInfo.tid === r.txid, { what: 'the sender\'s copy of the new block', timeoutMs: 5000 })
        during.push((await a.ledger.record<OutgoingRecord>('cs-outgoing', r.txid))!.state, ...(await a.ledger.tokensOf(alice.did, 'Locked')).map((x) => x.status))
        return await base.deliver(r)
      }
    }
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 400, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(res.delivered).to.equal(true)
    expect(during).to.deep.equal(['COMMITTING', 'Locked'])
    expect((await a.sender.record(res.txid))?.state).to.equal('COMMITTED')
    expect(await balance(a, alice.did)).to.equal(600)
    expect(await balance(b, bob.did)).to.equal(400)
    const spent = (await a.ledger.tokensOf(bob.did)).filter((x) => x.txid === res.txid)
    expect(spent.map((x) => x.status)).to.deep.equal(['Transferred'])
    expect(decodeBlockEnvelope((await a.ledger.chain(spent[0].tokenId)).at(-1)!).content.transInfo.tid).to.equal(res.txid)
  })

  it('a receiver on the sender\'s own node keeps the tokens it took (its token records are written after its delivery, not over it)', async () => {
    const { net, a, alice } = await SimNet.standard()
    const carol = await net.addDid(a)
    await net.mint(a, alice.did, 1)
    const res = await a.sender.transfer({ sender: alice.did, receiver: carol.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(res.delivered).to.equal(true)
    expect(await balance(a, carol.did)).to.equal(1000)
    expect(await balance(a, alice.did)).to.equal(0)
    expect((await a.sender.record(res.txid))?.state).to.equal('COMMITTED')
  })

  it('the contract is written once, beside the transfer\'s record, not again at every step; a record with the contract inside (older nodes) still reads', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const writes = { contract: 0, record: 0 }
    const commit = a.ledger.commit.bind(a.ledger)
    a.ledger.commit = async (build) => await commit((w) => build({
      ...w,
      putRecord: (c, k, v) => {
        if (c === 'cs-outgoing-contract') writes.contract++
        if (c === 'cs-outgoing') { writes.record++; expect((v as OutgoingRecord).contract, 'the record is stored without its contract').to.equal(undefined) }
        w.putRecord(c, k, v)
      }
    }))
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    await waitFor(async () => ((await a.sender.record(res.txid))?.notified.length ?? 0) >= res.quorums.length, { what: 'every quorum told' })
    expect(writes.contract).to.equal(1)
    expect(writes.record).to.be.at.least(5)
    const rec = (await a.sender.record(res.txid))!
    expect(decodeContract(unb64(rec.contract)).transactionId).to.equal(res.txid)
    expect(await balance(b, bob.did)).to.equal(500)
    // a record written before the contract was kept apart carries it inline; written again, its contract goes beside it
    a.ledger.commit = commit
    const { contractApart: _apart, ...old } = { ...rec, txid: 'old', contract: 'inline' }
    await a.ledger.commit((w) => { w.putRecord('cs-outgoing', 'old', old) })
    const legacy = (await a.sender.record('old'))!
    expect(legacy.contract).to.equal('inline')
    await a.ledger.commit((w) => { putOutgoing(w, { ...legacy, notified: [] }) })
    expect((await a.ledger.record<OutgoingRecord>('cs-outgoing', 'old'))?.contract, 'stored apart now').to.equal(undefined)
    expect((await a.sender.record('old'))?.contract, 'and not lost').to.equal('inline')
  })

  it('a decided transfer whose record an older node wrote (evidence and block inline) is delivered after the upgrade, and its block put beside the record', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    a.fault = (s) => { if (s === 'committing') throw new Error('crash at committing') }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    // the record as an older node kept it: the evidence as base64 chains and the block inside it
    const [rec] = await a.sender.openTransfers()
    const evidence = (await new EvidenceStore(a.ledger).bundle(rec!.evidence!))!
    const { evidence: _ref, blockApart: _apart, contract: _contract, ...older } = rec!
    const pledges = { chains: Object.fromEntries(Object.entries(evidence.chains).map(([id, c]) => [id, c.map((x) => Buffer.from(x).toString('base64'))])), contents: evidence.contents }
    await a.ledger.commit((w) => { w.putRecord('cs-outgoing', rec!.txid, { ...older, pledges, contractApart: true }); w.delRecord('cs-outgoing-block', rec!.txid) })
    a.ledger.recs.delete('cs-evidence')
    a.restartSender()
    await a.sender.recover()
    const after = (await a.sender.record(rec!.txid))!
    expect(after.state).to.equal('COMMITTED')
    expect(after.block).to.equal(rec!.block)
    expect((await a.ledger.record<OutgoingRecord>('cs-outgoing', rec!.txid))?.blockApart).to.equal(true)
    expect(await balance(b, bob.did)).to.equal(500)
  })

  it('a transfer\'s record is written without its votes once the block is signed, and settled without its pledge evidence (they served the sign round and the delivery); the block stays', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const stored: OutgoingRecord[] = []
    const commit = a.ledger.commit.bind(a.ledger)
    a.ledger.commit = async (build) => await commit((w) => build({
      ...w,
      putRecord: (c, k, v) => { if (c === 'cs-outgoing') stored.push(structuredClone(v as OutgoingRecord)); w.putRecord(c, k, v) }
    }))
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    await waitFor(async () => ((await a.sender.record(res.txid))?.notified.length ?? 0) >= res.quorums.length, { what: 'every quorum told' })
    expect(stored.some((r) => r.state === 'SIGNING' && (r.votes?.length ?? 0) > 0), 'the votes are kept while the block is signed').to.equal(true)
    expect(stored.filter((r) => r.state === 'COMMITTING' || r.state === 'COMMITTED').every((r) => r.votes === undefined), 'and written no more once it is').to.equal(true)
    expect(stored.some((r) => r.state === 'COMMITTING' && r.evidence !== undefined), 'the evidence is kept for the delivery').to.equal(true)
    const last = (await a.ledger.record<OutgoingRecord>('cs-outgoing', res.txid))!
    expect(last.state).to.equal('COMMITTED')
    expect(last.votes).to.equal(undefined)
    expect(last.evidence).to.equal(undefined)
    expect(last.blockApart).to.equal(true)
    expect((await a.sender.record(res.txid))?.block).to.be.a('string')
    expect((await a.sender.outcome(res.txid)).block).to.be.instanceOf(Uint8Array)
  })

  for (const step of ['locked', 'voted', 'signing', 'committing', 'delivered', 'committed']) {
    it(`sender crash at "${step}": recovery leaves every token owned exactly once`, async () => {
      const { net, a, b, alice, bob, quorums } = await SimNet.standard()
      await net.mint(a, alice.did, 2)
      const before = await totalOwned(net, [alice.did, bob.did])
      a.fault = (s) => { if (s === step) throw new Error(`crash at ${s}`) }
      await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1500, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
      a.fault = undefined
      // "restart": recovery on the sender, then the quorums' sweep
      await a.sender.recover()
      net.now += 5000
      for (const q of quorums) await q.quorum.sweep()
      await a.sender.recover()
      expect(await totalOwned(net, [alice.did, bob.did])).to.equal(before)
      const out = [...(a.ledger.recs.get('cs-outgoing')?.values() ?? [])] as OutgoingRecord[]
      expect(out).to.have.length(1)
      const bobHas = await balance(b, bob.did)
      if (out[0].state === 'COMMITTED') expect(bobHas).to.equal(1500)
      else { expect(out[0].state).to.equal('ABORTED'); expect(bobHas).to.equal(0) }
      // no quorum keeps a reservation
      for (const q of quorums) for (const v of [...(q.ledger.recs.get('cs-votes')?.values() ?? [])] as VoteRecord[]) expect(v.state).to.be.oneOf(['COMMITTED', 'RELEASED'])
    })
  }

  it('a signer that fails after voting is replaced by another yes-voter; the transfer completes', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    for (const q of quorums) q.failSign = false
    // make the first two ranked quorums fail at the sign round only
    const failing = quorums.slice(0, 2)
    for (const q of failing) q.failSign = true
    const r = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(r.delivered).to.equal(true)
    expect(await balance(b, bob.did)).to.equal(1000)
    for (const q of failing) expect(r.quorums).to.not.include([...q.dids.keys()][0])
  })

  it('with too few signers the transfer stays SIGNING (tokens locked), and recovery finishes it later', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    for (const q of quorums.slice(0, 3)) q.failSign = true
    try {
      await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
      expect.fail('should not complete yet')
    } catch (e) {
      expect((e as Error).message).to.match(/retried automatically/)
      // not a refusal: a code of its own, and the transaction to follow (it was CONSENSUS_FAILED,
      // the code of a clean refusal, so a client could not tell this answer from one)
      expect((e as RbtError).code).to.equal(ErrorCode.SIGNING_PENDING)
      const txid = ((e as RbtError).details as { transactionID: string }).transactionID
      const out = [...(a.ledger.recs.get('cs-outgoing')?.values() ?? [])] as OutgoingRecord[]
      expect(out.map((o) => o.txid)).to.deep.equal([txid])
    }
    expect((await a.ledger.tokensOf(alice.did))[0].status).to.equal('Locked')
    for (const q of quorums) q.failSign = false
    await a.sender.recover()
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  // once the quorums have signed, the transfer completes whatever happens: a write of the sender's
  // own that fails then (a full disk) is no refusal (it was answered with the storage error, so a
  // client saw "refused" for a transfer that ended committed)
  for (const [step, state, code] of [['recording the decision', 'COMMITTING', ErrorCode.SIGNING_PENDING], ['recording the commit', 'COMMITTED', ErrorCode.DELIVERY_PENDING]] as const) {
    it(`a full disk at the sender while ${step} answers ${code} naming the transaction, and recovery finishes it`, async () => {
      const { net, a, b, alice, bob } = await SimNet.standard()
      await net.mint(a, alice.did, 2)
      const refused = a.ledger.refuseOutgoing(state)
      const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
      expect(refused.count).to.equal(1)
      expect(err?.code).to.equal(code)
      expect(err?.message).to.match(/retried|background/)
      const txid = (err?.details as { transactionID: string }).transactionID
      expect(txid).to.be.a('string')
      a.ledger.refuseCommit = undefined
      await a.sender.recover()
      expect(await balance(b, bob.did)).to.equal(1000)
      expect(await balance(a, alice.did)).to.equal(1000)
      expect(((await a.ledger.record<OutgoingRecord>('cs-outgoing', txid)))?.state).to.equal('COMMITTED')
      expect((await a.ledger.tokensOf(alice.did)).filter((t) => t.status === 'Locked')).to.deep.equal([])
    })
  }

  // the SIGNING write failing on a full disk: refused, and it must end aborted whether the failed
  // write landed or not (it landed, and recovery finished a transfer answered as refused)
  for (const landed of [false, true]) {
    it(`a full disk at the sender while recording SIGNING: refused, and recovery aborts it (the failed write ${landed ? 'landed' : 'did not land'})`, async () => {
      const { net, a, b, alice, bob, quorums } = await SimNet.standard()
      await net.mint(a, alice.did, 1)
      a.ledger.refuseOutgoing('SIGNING', landed)
      const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
      expect(err?.code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
      a.ledger.refuseCommit = undefined
      await a.sender.recover()
      const out = [...(a.ledger.recs.get('cs-outgoing')?.values() ?? [])] as OutgoingRecord[]
      expect(out.map((o) => o.state)).to.deep.equal(['ABORTED'])
      expect(await balance(a, alice.did)).to.equal(1000)
      expect(await balance(b, bob.did)).to.equal(0)
      // no quorum signed, and every vote is released
      for (const q of quorums) for (const v of (q.ledger.recs.get('cs-votes')?.values() ?? []) as Iterable<VoteRecord>) expect(v.state).to.equal('RELEASED')
    })
  }

  it('a full disk at the sender while recording SIGNING, the write landing and the node stopping before its recovery: the answer named the transaction (not a refusal), and the restarted node completes it', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    a.ledger.refuseOutgoing('SIGNING', true)
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(err?.code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
    const txid = [...(a.ledger.recs.get('cs-outgoing')?.keys() ?? [])][0]
    expect((err?.details as { transactionID?: string } | undefined)?.transactionID, 'the answer names the transaction').to.equal(txid)
    expect(err?.message).to.match(/may still have landed/)
    // a new process over the same ledger: the in-memory mark is gone, the SIGNING record is not
    restartSender(a)
    await a.sender.recover()
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('a full disk at the sender that stays full after a failed SIGNING write the store finds on reopen: the abort cannot be written either, and the answer still names the transaction (it was a bare storage refusal, and the restarted node completed it)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    // the SIGNING write fails, and the store finds it when it reopens; every later write of the
    // transfer (the abort) fails
    a.ledger.refuseCommit = (recs) => {
      const out = recs.find((r) => r.collection === 'cs-outgoing')?.value as OutgoingRecord | undefined
      if (out === undefined) return false
      if (out.state === 'SIGNING') return 'on-reopen'
      return out.state === 'ABORTED'
    }
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    const txid = [...(a.ledger.recs.get('cs-outgoing')?.keys() ?? [])][0]
    expect(err?.code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
    expect((err?.details as { transactionID?: string } | undefined)?.transactionID, 'the answer names the transaction').to.equal(txid)
    expect(err?.message).to.match(/may still have landed/)
    // killed before it could write again: the restarted node's store holds the SIGNING record
    restartSender(a)
    await a.sender.recover()
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('a SIGNING write that fails (found on reopen) and then a read that fails too: the answer still names the transaction, not the read\'s storage error', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    let failed = false
    a.ledger.refuseCommit = (recs) => {
      const out = recs.find((r) => r.collection === 'cs-outgoing')?.value as OutgoingRecord | undefined
      if (out?.state !== 'SIGNING') return false
      failed = true
      return 'on-reopen'
    }
    // once the write failed, the store cannot be read either
    a.ledger.refuseRead = (c) => failed && c === 'cs-outgoing'
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(err?.code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
    expect((err?.details as { transactionID?: string } | undefined)?.transactionID, 'the answer names the transaction').to.be.a('string')
    expect(err?.message).to.match(/may still have landed/)
    restartSender(a)
    await a.sender.recover()
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('a full disk while the sign round records a replacement signer\'s vote (after SIGNING is durable): the answer names the transaction, since recovery completes it', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    // no quorum answers SIGN yet: the sign round recruits the two not asked and records their votes
    for (const q of quorums) q.failSign = true
    let signingWrites = 0
    a.ledger.refuseCommit = (recs) => {
      const out = recs.find((r) => r.collection === 'cs-outgoing')?.value as OutgoingRecord | undefined
      if (out?.state !== 'SIGNING') return false
      // the first SIGNING write (the decision to ask for signatures) lands; the disk is full after it
      return ++signingWrites > 1
    }
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(signingWrites, 'the recruit\'s write was refused').to.equal(2)
    const out = [...(a.ledger.recs.get('cs-outgoing')?.values() ?? [])] as OutgoingRecord[]
    expect(out.map((o) => o.state)).to.deep.equal(['SIGNING'])
    a.ledger.refuseCommit = undefined
    for (const q of quorums) q.failSign = false
    await a.sender.recover()
    // the transfer ends committed...
    expect(await balance(b, bob.did)).to.equal(1000)
    // ...so its answer must not read as a refusal (CLI exit 1): it must name the transaction
    expect(err?.code, err?.message).to.not.equal(undefined)
    expect((err?.details as { transactionID?: string } | undefined)?.transactionID, `answered ${err?.code}: ${err?.message}`).to.equal(out[0].txid)
  })

  it('a refusal whose abort cannot be written (the disk full) answers the refusal, not the storage error; the tokens are freed once the disk is', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    // three quorums down: consensus fails, and the abort's write fails on the full disk
    for (const q of quorums.slice(0, 3)) q.down = true
    a.ledger.refuseOutgoing('ABORTED')
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(err?.code).to.equal(ErrorCode.CONSENSUS_FAILED)
    a.ledger.refuseCommit = undefined
    for (const q of quorums.slice(0, 3)) q.down = false
    await a.sender.recover()
    expect(await balance(a, alice.did)).to.equal(1000)
    expect(await balance(b, bob.did)).to.equal(0)
  })

  it('a full disk at the sender while locking, the failed write landing: refused, and the next recovery pass frees the tokens (they stayed Locked until a periodic full scan)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    await a.sender.recover()
    a.ledger.refuseOutgoing('PREPARING', true)
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(err?.code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
    a.ledger.refuseCommit = undefined
    expect((await a.ledger.tokensOf(alice.did))[0].status).to.equal('Locked')
    await a.sender.recover()
    expect(await balance(a, alice.did)).to.equal(1000)
    expect(await balance(b, bob.did)).to.equal(0)
  })

  it('a quorum answering a signature that does not verify is replaced before the decision, so the receiver takes a block that verifies', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    // every quorum signs: the sender takes the first five, so the first forges
    for (const q of quorums) q.forgeSign = false
    const r0 = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    const forger = quorums.find((q) => r0.quorums.includes([...q.dids.keys()][0]))!
    forger.forgeSign = true
    // (before: the forged signature went into the block, the receiver refused it, and the transfer
    // stayed delivery_pending for ever)
    const r = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(r.delivered).to.equal(true)
    expect(r.quorums).to.not.include([...forger.dids.keys()][0])
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('a block one role of a node verified is not verified again by another: the sender after signing, a quorum after FINALIZE', async () => {
    /** alice pays bob, bob pays back: the signatures alice's node checks for the payback */
    const payback = async (forget: boolean): Promise<number> => {
      const { net, a, b, alice, bob, quorums } = await SimNet.standard()
      await net.mint(a, alice.did, 1)
      const out = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
      const block = (await b.ledger.chain((await b.ledger.tokensOf(bob.did))[0].tokenId)).at(-1)!
      const key = sha3Hex(decodeBlockEnvelope(block).envelopeBytes)
      expect(a.verified.has(key)).to.equal(true)
      const signers = quorums.filter((q) => out.quorums.includes([...q.dids.keys()][0]))
      await waitFor(async () => signers.every((q) => q.verified.has(key)), { what: 'the signers to verify the finalized block' })
      // the memo alone: the state alice's node validated (and keeps in its ledger) is forgotten too
      a.ledger.recs.get('cs-validated')?.clear()
      if (forget) a.verified.clear()
      const before = a.verifications
      await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, bob.owner)
      expect(await balance(a, alice.did)).to.equal(1000)
      return a.verifications - before
    }
    // the first transfer's block (5 block signatures, 5 credits, the initiator's) is not checked again
    expect(await payback(true) - await payback(false)).to.equal(11)
  })

  it('a bare abort does not release a signed vote; the state stays held for other transactions', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    a.fault = (s) => { if (s === 'committing') throw new Error('crash after the decision') }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    const out = [...(a.ledger.recs.get('cs-outgoing')?.values() ?? [])] as OutgoingRecord[]
    const txid = out[0].txid
    // a dishonest abort to every quorum
    for (const q of quorums) await q.quorum.abort({ txid, quorumDid: [...q.dids.keys()][0], reason: 'forged' })
    const signed = quorums.flatMap((q) => [...(q.ledger.recs.get('cs-votes')?.values() ?? [])] as VoteRecord[]).filter((v) => v.state === 'SIGNED')
    expect(signed).to.have.length(5)
    await a.sender.recover()
    await a.sender.notifyQuorums(txid)
    expect(await balance(b, bob.did)).to.equal(1000)
    for (const q of quorums) for (const v of [...(q.ledger.recs.get('cs-votes')?.values() ?? [])] as VoteRecord[]) expect(v.state).to.be.oneOf(['COMMITTED', 'RELEASED'])
  })

  it('a quorum that missed the abort releases its pledge by asking the sender', async () => {
    const { net, a, bob, alice, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    quorums[4].down = quorums[5].down = quorums[6].down = true
    // these three will vote but be unreachable for abort: simulate by failing after votes
    a.fault = (s) => { if (s === 'voted') throw new RbtError('CONSENSUS_FAILED', 'stop') }
    quorums[4].down = quorums[5].down = quorums[6].down = false
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).catch(() => {})
    a.fault = undefined
    net.now += 5000
    for (const q of quorums) await q.quorum.sweep()
    for (const q of quorums) {
      const did = [...q.dids.keys()][0]
      for (const t of await q.ledger.tokensOf(did)) expect(t.status).to.be.oneOf(['Free', 'Burnt'])
    }
  })
})

describe('consensus: quorum pledges', function () {
  this.timeout(60_000)

  it('a split for a pledge cuts several parts of the share; the next transfer of that size splits nothing', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 3)
    const quorumTokens = async (): Promise<Array<{ status: string, valueMilli: number }>> => {
      const all = []
      for (const [i, n] of net.nodes.slice(0, 7).entries()) all.push(...await n.ledger.tokensOf(net.quorumDids[i]))
      return all
    }
    const burnt = async (): Promise<number> => (await quorumTokens()).filter((t) => t.status === 'Burnt').length
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const afterFirst = await burnt()
    expect(afterFirst).to.be.greaterThan(0)
    // a whole token split for a 0.2 share became five exact parts (1.000 = 5 × 0.200, no rest)
    const parts = (await quorumTokens()).filter((t) => t.valueMilli === 200)
    expect(parts.length).to.be.at.least(5 * afterFirst)
    // every further transfer of that size: a quorum that pledged before splits nothing again
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    let pledgers = 0
    for (const [i, n] of net.nodes.slice(0, 7).entries()) {
      let voted = false
      for await (const [k] of n.ledger.records('cs-votes')) if (k.startsWith(`${net.quorumDids[i]}/`)) voted = true
      if (voted) pledgers++
    }
    expect(await burnt()).to.equal(pledgers)
    expect(await balance(b, bob.did)).to.equal(3000)
  })

  it('two of the signers publish each spent state marker, the same two every signer computes', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    await waitFor(async () => net.published.length >= 2, { timeoutMs: 5_000, what: 'the markers' })
    const states = new Set(net.published.map((p) => p.stateHash))
    expect(states.size).to.equal(1)
    const [stateHash] = states
    expect(net.published).to.have.length(2)
    const signers = [...new Set(net.published.map((p) => p.quorum))]
    expect(signers).to.have.length(2)
    const [token] = await b.ledger.tokensOf(bob.did, 'Free')
    const chain = await b.ledger.chain(token.tokenId)
    const blockSigners = Object.keys(decodeBlockEnvelope(chain[chain.length - 1]).signatures).filter((d) => d !== alice.did)
    expect(blockSigners.length).to.be.at.least(5)
    expect([...signers].sort()).to.deep.equal(markerPublishers(stateHash, blockSigners).sort())
  })

  it('only the designated network checker looks the spent states up on the network; every signer computes the same one', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const [token] = await b.ledger.tokensOf(bob.did, 'Free')
    const chain = await b.ledger.chain(token.tokenId)
    const block = decodeBlockEnvelope(chain[chain.length - 1])
    const creditSigners = (block.content.quorumSignatures ?? []).map((c) => c.did)
    expect(creditSigners).to.have.length(5)
    const askers = new Set(net.lookups.map((l) => net.quorumDids[net.nodes.findIndex((n) => n.name === l.node)]))
    // The checker of the five quorums the sender expects to sign starts a lookup at PREPARE, and
    // the checker of the block (first-ranked among its signers) waits for one at SIGN. When the
    // signers are those five, both are the same quorum: one lookup in all.
    expect(NETWORK_CHECKERS).to.equal(1)
    const key = checkerKey(spentStatesOf(block.content.transInfo.tokens))
    const checkers = networkCheckers(key, creditSigners, NETWORK_CHECKERS)
    const expected = (await a.ledger.record<{ asked: string[] }>('cs-outgoing', res.txid))!.asked.slice(0, 5)
    const allowed = new Set([...networkCheckers(key, expected, NETWORK_CHECKERS), ...checkers])
    if ([...creditSigners].sort().join() === [...expected].sort().join()) expect(askers.size).to.equal(1)
    expect(allowed.size).to.be.at.most(2)
    for (const d of checkers) expect(askers.has(d), `checker ${d} asked the network`).to.equal(true)
    for (const d of askers) expect(allowed.has(d), `${d} is neither a prefetcher nor a checker`).to.equal(true)
  })

  it('a quorum keeps pieces of the last pledged share ready, so the next PREPARE of that size does not split while the sender waits', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 8)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const signers = first.quorums.map((d) => ({ did: d, q: quorums[net.quorumDids.indexOf(d)] }))
    // a split makes eight pieces; seven pledges later fewer than two would be left without refills
    for (let i = 0; i < 7; i++) {
      if (i > 0) await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: first.quorums }, alice.owner)
      await Promise.all(signers.map(async ({ q }) => { await q.quorum.refills() }))
      for (const { did, q } of signers) {
        const pieces = (await q.ledger.tokensOf(did, 'Free')).filter((t) => t.valueMilli === 200)
        expect(pieces.length, `${q.name} keeps 0.2 RBT pieces after transfer ${i + 1}`).to.be.at.least(2)
      }
    }
    expect(await balance(b, bob.did)).to.equal(7000)
    // value is neither created nor lost by the refills
    for (const [i, q] of quorums.entries()) {
      const did = net.quorumDids[i]
      const held = (await q.ledger.tokensOf(did)).filter((t) => t.owner === did && t.status !== 'Burnt')
      expect(held.reduce((s, t) => s + t.valueMilli, 0), q.name).to.equal(3000)
    }
  })

  it('a PREPARE pledges a piece of the share kept ready without reading the quorum\'s holdings again (its refill read them after the last vote)', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 4)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const signers = first.quorums.map((d) => quorums[net.quorumDids.indexOf(d)])
    await Promise.all(signers.map(async (q) => { await q.quorum.refills() }))
    const duringPrepare = holdingsReadsDuringPrepare(signers)
    const second = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: first.quorums }, alice.owner)
    expect(second.quorums.length).to.equal(MIN_SIGNERS)
    expect([...duringPrepare.entries()]).to.deep.equal([])
    expect(await balance(b, bob.did)).to.equal(2000)
    // a piece the hint names that is no longer Free (spent by the quorum's own DID, say) is passed over
    const q0 = signers[0]
    const did0 = net.quorumDids[quorums.indexOf(q0)]
    await Promise.all(signers.map(async (q) => { await q.quorum.refills() }))
    for (const t of (await q0.ledger.tokensOf(did0, 'Free')).filter((x) => x.valueMilli === 200)) {
      await q0.ledger.commit((w) => { w.putToken({ ...t, status: 'Transferred', owner: bob.did }) })
    }
    const third = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: first.quorums }, alice.owner)
    expect(third.quorums).to.include(did0)
    expect(await balance(b, bob.did)).to.equal(3000)
  })

  it('a new share is pledged with a piece up to twice its size instead of a split while the sender waits, and exact pieces are cut once the transaction is over', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 8)
    // share 200: each signer splits a whole token into five pieces of 0.2 RBT
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    await Promise.all(quorums.map(async (q) => { await q.quorum.refills() }))
    const tokensOf = async (did: string): Promise<number> => (await quorums[net.quorumDids.indexOf(did)]!.ledger.tokensOf(did)).length
    const before = new Map(await Promise.all(first.quorums.map(async (d) => [d, await tokensOf(d)] as const)))
    // share 180: no piece of 180, a piece of 200 is pledged whole
    const second = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 900, memo: '', quorums: first.quorums }, alice.owner)
    expect(await balance(b, bob.did)).to.equal(1900)
    const both = second.quorums.filter((d) => first.quorums.includes(d))
    expect(both.length).to.be.at.least(MIN_SIGNERS)
    for (const d of both) {
      const q = quorums[net.quorumDids.indexOf(d)]!
      const vote = await q.ledger.record<VoteRecord>('cs-votes', `${d}/${second.txid}`)
      expect(vote?.pledgeMilli, `${q.name} pledged a 0.2 piece`).to.equal(200)
      expect(vote?.pledge).to.have.length(1)
    }
    // the refills waited for the end of the transaction, then cut pieces of the new share
    await Promise.all(quorums.map(async (q) => { await q.quorum.refills() }))
    for (const d of both) {
      const q = quorums[net.quorumDids.indexOf(d)]!
      expect(await tokensOf(d), `${q.name} split once, after the vote`).to.be.greaterThan(before.get(d)!)
      expect((await q.ledger.tokensOf(d, 'Free')).filter((t) => t.valueMilli === 180).length, q.name).to.be.at.least(2)
    }
  })

  it('a share of a new size is chosen among what the refill read, without a range read while the sender waits; a choice no longer Free falls back to one', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 8)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const signers = first.quorums.map((d) => quorums[net.quorumDids.indexOf(d)]!)
    await Promise.all(quorums.map(async (q) => { await q.quorum.refills() }))
    const duringPrepare = holdingsReadsDuringPrepare(signers)
    // share 180: no piece of that size; a 0.2 piece from what the refill read is pledged whole
    const second = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 900, memo: '', quorums: first.quorums }, alice.owner)
    expect(second.quorums.filter((d) => first.quorums.includes(d)).length).to.be.at.least(MIN_SIGNERS)
    expect([...duringPrepare.entries()]).to.deep.equal([])
    for (const d of second.quorums) {
      const vote = await quorums[net.quorumDids.indexOf(d)]!.ledger.record<VoteRecord>('cs-votes', `${d}/${second.txid}`)
      expect(vote?.pledgeMilli).to.equal(200)
    }
    await Promise.all(quorums.map(async (q) => { await q.quorum.refills() }))
    // share 160 on a quorum whose every Free token moved on since its refill read them: it reads the index again
    const q0 = quorums[net.quorumDids.indexOf(second.quorums[0]!)]!
    const did0 = second.quorums[0]!
    const free = await q0.ledger.tokensOf(did0, 'Free')
    for (const t of free) await q0.ledger.commit((w) => { w.putToken({ ...t, status: 'Transferred', owner: bob.did }) })
    await net.mint(q0, did0, 1)
    const third = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 800, memo: '', quorums: second.quorums }, alice.owner)
    expect(third.quorums).to.include(did0)
    expect(duringPrepare.get(q0.name)).to.equal(1)
    expect(await balance(b, bob.did)).to.equal(2700)
  })

  it('sweeps and recovery read the index of open votes and transfers, never the whole history again (it was rescanned every 100 passes)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const q = net.nodes[0]
    // the first pass of a data dir builds the index once
    await q.quorum.sweep()
    await a.sender.recover()
    const votes = q.ledger.scans.get('cs-votes') ?? 0
    const outgoing = a.ledger.scans.get('cs-outgoing') ?? 0
    expect([votes, outgoing]).to.deep.equal([1, 1])
    for (let i = 0; i < 120; i++) { await q.quorum.sweep(); await a.sender.recover() }
    expect(q.ledger.scans.get('cs-votes') ?? 0).to.equal(votes)
    expect(a.ledger.scans.get('cs-outgoing') ?? 0).to.equal(outgoing)
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('a data dir from before the open indexes: the first pass finds its open vote and transfer by one full scan, and finishes them', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    for (const q of quorums.slice(0, 3)) q.failSign = true
    const err = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: unknown) => e as RbtError)
    expect(err?.code).to.equal(ErrorCode.SIGNING_PENDING)
    // as an older version left it: the records, no index, no marker
    for (const n of net.nodes) for (const c of ['cs-outgoing-open', 'cs-votes-open', 'cs-meta']) n.ledger.recs.delete(c)
    for (const q of quorums) q.failSign = false
    await a.sender.recover()
    expect(await balance(b, bob.did)).to.equal(1000)
    // settled once its quorums are told (in the background): then it leaves the index
    await waitFor(async () => (a.ledger.recs.get('cs-outgoing-open')?.size ?? 0) === 0, { what: 'the transfer to leave the open index' })
    expect(a.ledger.recs.get('cs-meta')?.has('cs-outgoing-open')).to.equal(true)
  })

  it('a spend releases the pledges backing the spent states and the sweep the due ones, through the pledge index (no scan of all pledges)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 3)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const pledgesOf = async (q: typeof net.nodes[number]): Promise<PledgeRecord[]> => {
      const out: PledgeRecord[] = []
      for await (const [, p] of q.ledger.records<PledgeRecord>('cs-pledges')) out.push(p)
      return out
    }
    await waitFor(async () => net.nodes.slice(0, 7).some((n) => (n.ledger.recs.get('cs-pledges')?.size ?? 0) === 2), { timeoutMs: 5_000, what: 'the committed pledges' })
    const q = net.nodes.slice(0, 7).find((n) => (n.ledger.recs.get('cs-pledges')?.size ?? 0) === 2)!
    const [first, second] = await pledgesOf(q)
    expect(second, 'a quorum that pledged for both transfers').to.not.equal(undefined)
    const pledged = async (p: PledgeRecord): Promise<string[]> => (await Promise.all(p.tokens.map(async (id) => await q.ledger.token(id)))).filter((t) => t?.status === 'Pledged' && t.txid === p.txid).map((t) => t!.tokenId)
    expect(await pledged(first!)).to.have.length.greaterThan(0)
    await q.quorum.tokensMovedOn(['QmNotAState@0-x'])
    // both tokens really move on (a release needs the spending block); only the first's states are announced
    const onward = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, bob.owner)
    await waitFor(() => net.nodes.slice(0, 7).filter((n) => [...(n.ledger.recs.get('cs-pledges')?.values() ?? [])].some((x) => (x as PledgeRecord).txid === onward.txid)).length === 5, { timeoutMs: 5_000, what: 'the onward transfer\'s pledges' })
    const scans = q.ledger.scans.get('cs-pledges') ?? 0
    await q.quorum.tokensMovedOn(first!.newBlockIds, chainSourceOf(b))
    expect(await pledged(first!)).to.deep.equal([])
    expect(await q.ledger.record('cs-pledges', `${first!.quorumDid}/${first!.txid}`)).to.equal(undefined)
    expect(await pledged(second!), 'the other pledge stays').to.have.length.greaterThan(0)
    net.now += 60_001
    await q.quorum.sweep()
    expect(await pledged(second!)).to.deep.equal([])
    expect(await pledgesOf(q)).to.deep.equal([])
    const index: string[] = []
    for await (const [k] of q.ledger.records('cs-pledge-index')) index.push(k)
    expect(index, 'only the version mark is left in the index').to.deep.equal(['v|1'])
    expect(q.ledger.scans.get('cs-pledges') ?? 0, 'pledges read by key only').to.equal(scans + 1)
  })

  it('a data dir with pledges from before the pledge index gets them indexed once, and they are released as before', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    await waitFor(async () => net.nodes.slice(0, 7).some((n) => (n.ledger.recs.get('cs-pledges')?.size ?? 0) > 0), { timeoutMs: 5_000, what: 'a committed pledge' })
    const q = net.nodes.slice(0, 7).find((n) => (n.ledger.recs.get('cs-pledges')?.size ?? 0) > 0)!
    const [p] = [...q.ledger.recs.get('cs-pledges')!.values()] as PledgeRecord[]
    // the token moves on (its own pledges may land on q too), then q is made to look like an older node: pledges without index entries
    const onward = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, bob.owner)
    const committedPledges = (): number => net.nodes.slice(0, 7).filter((n) => [...(n.ledger.recs.get('cs-pledges')?.values() ?? [])].some((x) => (x as PledgeRecord).txid === onward.txid)).length
    await waitFor(() => committedPledges() === 5, { timeoutMs: 5_000, what: 'the onward transfer\'s pledges' })
    q.ledger.recs.delete('cs-pledge-index')
    await q.quorum.tokensMovedOn(p!.newBlockIds, chainSourceOf(b))
    const left = [...(q.ledger.recs.get('cs-pledges')?.values() ?? [])] as PledgeRecord[]
    expect(left.map((x) => x.txid)).to.not.include(p!.txid)
    const index = [...q.ledger.recs.get('cs-pledge-index')!.entries()]
    expect(index.map(([k]) => k)).to.include('v|1')
    expect(index.filter(([k]) => k !== 'v|1').map(([k]) => k), 'the other pledges are indexed, the released one is not').to.have.members(left.flatMap(pledgeIndexKeys))
  })

  it('a slow password answer does not make the running transfer look stale to the periodic recovery', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    // the owner takes two minutes to answer the prompt
    const slow = { ...alice.owner, did: alice.did, signHash: async (h: string) => { net.now += 120_000; return await alice.owner.signHash(h) } }
    // the periodic recovery runs while the transfer is PREPARING
    const seen: string[] = []
    net.beforePrepare = async () => {
      await a.sender.recover({ staleMs: 60_000 })
      for await (const [, r] of a.ledger.records<OutgoingRecord>('cs-outgoing')) seen.push(r.state)
      seen.push(...(await a.ledger.tokensOf(alice.did)).map((t) => t.status))
    }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, slow)
    // still being prepared, tokens still locked: the recovery left it alone
    expect(seen).to.deep.equal(['PREPARING', 'Locked'])
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('choosing tokens reads only the chosen ones: the sender and the quorums read the same few records whatever their wallet size', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard(40)
    await net.mint(a, alice.did, 120)
    const readsPer = async (milli: number): Promise<number[]> => {
      const nodes = [a, ...quorums]
      for (const n of nodes) n.ledger.tokenReads = 0
      await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: milli, memo: '', quorums: net.quorumDids }, alice.owner)
      await Promise.all(quorums.map(async (q) => { await q.quorum.refills() }))
      return nodes.map((n) => n.ledger.tokenReads)
    }
    // a part amount (the sender and the quorums split), the same again (a part and pieces are left over), a new share (the quorums split again)
    for (const milli of [500, 500, 1000]) {
      const [sender, ...quorumReads] = await readsPer(milli)
      // before, a transfer read all 120 of the sender's token records (128 reads) and, at each asked quorum, its 40 twice (PREPARE and the refill)
      expect(sender, `sender, ${milli} milli-RBT`).to.be.at.most(10)
      // at most 6 for PREPARE and the refill, plus the pledge evidence a signer sends back: the pledged
      // part, its parent and the contents of the parent's parts (a split cuts at most 8 plus the rest)
      for (const [i, r] of quorumReads.entries()) expect(r, `${quorums[i]!.name}, ${milli} milli-RBT`).to.be.at.most(6 + 11)
    }
    expect(await balance(b, bob.did)).to.equal(2000)
  })
})
