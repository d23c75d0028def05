import { expect } from 'chai'
import { decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import type { ConsensusTransport, DeliverRequest } from '../../../src/consensus/messages.js'
import type { OutgoingRecord } from '../../../src/consensus/records.js'
import { SimNet, balance } from './harness.js'

/** Docs: protocol.md, "Receiver acceptance". */
describe('consensus: the receiver accepts a block by its signers\' pledges, not by its own quorum list', function () {
  this.timeout(60_000)

  it('a receiver whose quorum list names none of the signers takes the tokens, and spends them at once through its own list', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 2)
    // the receiver's own quorum set: five other quorums (this used to refuse the delivery)
    const set2: string[] = []
    for (let i = 0; i < 5; i++) {
      const q = net.addNode(`r${i}`)
      const d = await net.addDid(q)
      await net.mint(q, d.did, 3)
      set2.push(d.did)
    }
    net.quorumDids.push(...set2)
    b.quorumList = set2
    a.quorumList = net.quorumDids.slice(0, 7)
    const r = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 500, memo: '', quorums: a.quorumList }, alice.owner)
    expect(r.delivered).to.equal(true)
    expect(await balance(b, bob.did)).to.equal(500)
    const back = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 250, memo: '', quorums: set2 }, bob.owner)
    expect(back.delivered).to.equal(true)
    expect(await balance(b, bob.did)).to.equal(250)
    expect(await balance(a, alice.did)).to.equal(2000 - 500 + 250)
  })

  it('refuses a delivery whose pledge evidence is missing, forged or too small, whatever else verifies', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    b.quorumList = []
    let captured: DeliverRequest | undefined
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    t.transport = { ...base, deliver: async (r) => { captured = structuredClone(r); throw new Error('receiver unreachable') } }
    const r = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(r.delivered).to.equal(false)
    const req = captured!
    expect(req.pledges, 'the sender delivers the signers\' pledge chains').to.not.equal(undefined)
    const refuse = async (mutate: (d: DeliverRequest) => void, why: RegExp): Promise<void> => {
      const d = structuredClone(req)
      mutate(d)
      let err: Error | undefined
      await b.receiver.deliver(d).catch((e: Error) => { err = e })
      expect(err?.message, 'refused').to.match(why)
      expect(await balance(b, bob.did)).to.equal(0)
    }
    await refuse((d) => { delete d.pledges }, /no pledge evidence was delivered/)
    // a signer's pledged chain replaced by another quorum's: the owner does not match the signer
    await refuse((d) => {
      const [x, y] = Object.keys(d.pledges!.chains)
      d.pledges!.chains[x!] = d.pledges!.chains[y!]!
    }, /pledge/)
    // a chain cut short of the pledged block, or a block altered: it does not validate or does not end where the pledge says
    await refuse((d) => { for (const id of Object.keys(d.pledges!.chains)) d.pledges!.chains[id] = [] }, /pledged token/)
    // with the receiver's own list naming every signer, evidence is not needed from an older sender
    b.quorumList = [...net.quorumDids]
    const d = structuredClone(req)
    delete d.pledges
    expect((await b.receiver.deliver(d)).accepted).to.equal(true)
    expect(await balance(b, bob.did)).to.equal(1000)
  })

  it('a payer\'s delivery that carries chains of tokens it does not transfer (a token the receiver holds, a part\'s sibling content) leaves what the receiver stores of them as it was: its own tokens stay spendable', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const [mine] = await net.mint(b, bob.did, 1)
    await net.mint(a, alice.did, 1)
    const before = (await b.ledger.chain(mine!)).map((x) => Buffer.from(x).toString('hex'))
    const contentBefore = b.ledger.tokens.get(mine!)!.content
    // alice pays bob, her delivery naming bob's own token with a block of hers, and another content for it
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    t.transport = {
      ...base,
      deliver: async (r: DeliverRequest) => {
        const other = Object.keys(r.bundle.chains)[0]!
        return await base.deliver({ ...r, bundle: { ...r.bundle, chains: { ...r.bundle.chains, [mine!]: [r.bundle.chains[other]![0]!] }, contents: { ...r.bundle.contents, [mine!]: 'not the content of that token' } } })
      }
    }
    const paid = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(paid.delivered).to.equal(true)
    expect((await b.ledger.chain(mine!)).map((x) => Buffer.from(x).toString('hex')), 'the receiver\'s own token\'s chain was overwritten').to.deep.equal(before)
    expect(b.ledger.tokens.get(mine!)!.content).to.equal(contentBefore)
    expect(b.ledger.recs.get('cs-contents')?.get(mine!), 'a content the payer made up was stored').to.not.equal('not the content of that token')
    // and bob spends his own token
    const again = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, bob.owner)
    expect(again.delivered).to.equal(true)
  })

  it('a token whose state the receiver\'s node validated before (as a quorum) arrives with blocks before that state that are not its own: refused, never stored as its chain', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    const [id] = await net.mint(a, alice.did, 1)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, bob.owner)
    // dave's wallet is on a quorum node that validated the token's state on the way
    const q = quorums.find((x) => x.ledger.recs.get('cs-validated')?.has(id!) === true)!
    expect(q, 'no quorum node validated the token').to.not.equal(undefined)
    const dave = await net.addDid(q)
    const real = (await a.ledger.chain(id!))[0]!
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    // the payer swaps the genesis for a block of another chain (only what follows the known state is checked)
    const [other] = await net.mint(a, alice.did, 1)
    const forged = (await a.ledger.chain(other!))[0]!
    t.transport = { ...base, deliver: async (r: DeliverRequest) => await base.deliver({ ...r, bundle: { ...r.bundle, chains: { ...r.bundle.chains, [id!]: [forged, ...r.bundle.chains[id!]!.slice(1)] } } }) }
    await a.sender.transfer({ sender: alice.did, receiver: dave.did, amountMilli: 1000, memo: '', quorums: net.quorumDids, selfTokens: undefined }, alice.owner).catch(() => undefined)
    const stored = await q.ledger.chain(id!)
    if (stored[0] !== undefined) expect(Buffer.from(stored[0]).toString('hex'), 'a block not of the token\'s chain was stored as its genesis').to.equal(Buffer.from(real).toString('hex'))
  })

  it('strict rule (trustOwnQuorumList): a sender learns it from the probe and aborts before any quorum signs', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    b.strictReceiver = true
    b.quorumList = net.quorumDids.slice(0, 4)
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    let signs = 0
    t.transport = { ...base, sign: async (r) => { signs++; return await base.sign(r) } }
    let err: Error | undefined
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner).catch((e: Error) => { err = e })
    expect(err?.message).to.match(/accepts only quorums of its own list/)
    expect(signs, 'no quorum was asked to sign').to.equal(0)
    expect(await balance(a, alice.did)).to.equal(1000)
    const recs: OutgoingRecord[] = []
    for await (const [, r] of a.ledger.records<OutgoingRecord>('cs-outgoing')) recs.push(r)
    expect(recs.map((r) => r.state)).to.deep.equal(['ABORTED'])
    // a list that shares five quorums with the sender's: the signers are chosen among them
    b.quorumList = net.quorumDids.slice(2, 7)
    const ok = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(ok.delivered).to.equal(true)
    expect(ok.quorums.every((q) => b.quorumList.includes(q))).to.equal(true)
    expect(await balance(b, bob.did)).to.equal(1000)
  })
})

describe('consensus: a decided transfer whose receiver is down', function () {
  this.timeout(60_000)

  it('reports delivered: false, keeps the tokens locked at the sender (its copy of the new block written already), retries with backoff, and delivers once the receiver is back', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    a.fault = (step) => { if (step === 'committing') b.down = true }
    const t = a.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    let deliveries = 0
    t.transport = { ...base, deliver: async (r) => { deliveries++; return await base.deliver(r) } }
    const r = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    a.fault = undefined
    expect(r.delivered).to.equal(false)
    expect((await a.sender.record(r.txid))?.state).to.equal('COMMITTING')
    expect(await balance(a, alice.did)).to.equal(0)
    expect(await balance(b, bob.did)).to.equal(0)
    const locked = await a.ledger.tokensOf(alice.did, 'Locked')
    expect(locked.map((t) => t.txid)).to.deep.equal([r.txid])
    expect(decodeBlockEnvelope((await a.ledger.chain(locked[0].tokenId)).at(-1)!).content.transInfo.tid).to.equal(r.txid)
    // recovery passes every "second": tries at 0, 1, 3, 7 s (waits 1, 2, 4 s), not on every pass
    deliveries = 0
    for (let s = 0; s < 8; s++) { await a.sender.recover(); net.now += 1000 }
    expect(deliveries).to.equal(4)
    b.down = false
    for (let s = 0; s < 10 && (await a.sender.record(r.txid))?.state !== 'COMMITTED'; s++) { net.now += 1000; await a.sender.recover() }
    expect((await a.sender.record(r.txid))?.state).to.equal('COMMITTED')
    expect(await balance(b, bob.did)).to.equal(1000)
    expect(await balance(a, alice.did)).to.equal(0)
  })
})
