import { expect } from 'chai'
import { AncestryMissing, ledgerAncestry, validateBundleToken, type ValidatedState } from '../../../src/consensus/bundle.js'
import type { DeliverRequest, PrepareRequest } from '../../../src/consensus/messages.js'
import { decodeBlockEnvelope, formatBlockId } from '../../../src/tokenchain/block.js'
import type { SignatureVerifier } from '../../../src/tokenchain/validate.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { waitFor } from '../../helpers/wait.js'
import { SimNet, type SimNode } from './harness.js'

/** a ledger that holds no record */
const EMPTY_LEDGER = { record: async () => undefined, recordsByKey: async (_c: string, keys: readonly string[]) => keys.map(() => undefined) }

/** Every PREPARE each quorum node is sent: which of `ids` its bundle carries a chain for. */
function watchPrepares (quorums: SimNode[]): Map<SimNode, Array<{ txid: string, chains: string[] }>> {
  const seen = new Map<SimNode, Array<{ txid: string, chains: string[] }>>()
  for (const q of quorums) {
    seen.set(q, [])
    const prepare = q.quorum.prepare.bind(q.quorum)
    q.quorum.prepare = async (r: PrepareRequest) => {
      seen.get(q)!.push({ txid: r.txid, chains: Object.keys(r.bundle.chains) })
      return await prepare(r)
    }
  }
  return seen
}

describe('consensus: validated token states (docs/protocol.md, "Validated states")', function () {
  this.timeout(60_000)

  it('a quorum that signed a token\'s last block is sent no chain for it; the others get the chain and validate it', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 3)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, alice.owner)
    const signers = quorums.filter((q) => first.quorums.includes([...q.dids.keys()][0]))
    const others = quorums.filter((q) => !signers.includes(q))
    expect(signers).to.have.length(5)
    const [tip] = first.blockId.split('-')
    // each signer learns the state the final block leads to once it has verified that block (after FINALIZE)
    await waitFor(async () => {
      for (const q of signers) for (const id of ids) if ((await q.ledger.record<ValidatedState>('cs-validated', id))?.blockNumber !== Number(tip)) return false
      return true
    }, { what: 'the signers to learn the new states' })
    const seen = watchPrepares(quorums)
    const before = new Map(quorums.map((q) => [q, q.verifications]))
    const out = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, bob.owner)
    expect(await a.ledger.chain(ids[0])).to.have.length(3)
    for (const q of quorums) {
      const calls = seen.get(q)!.filter((c) => c.txid === out.txid)
      if (calls.length === 0) continue
      if (signers.includes(q)) {
        expect(calls, q.name).to.have.length(1)
        expect(calls[0].chains, `${q.name} signed the last block`).to.deep.equal([])
      } else {
        expect(calls[0].chains, `${q.name} did not sign it`).to.include.members(ids)
      }
    }
    const askedSigners = signers.filter((q) => seen.get(q)!.some((c) => c.txid === out.txid))
    expect(askedSigners.length).to.be.greaterThan(0)
    const askedOthers = others.filter((q) => seen.get(q)!.some((c) => c.txid === out.txid))
    for (const q of askedOthers) expect(q.verifications - before.get(q)!, `${q.name} validates the chains`).to.be.greaterThan(3)
  })

  it('a quorum and the receiver read a transfer\'s token states at once, not one read per token', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard(14)
    const ids = await net.mint(a, alice.did, 30)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 30_000, memo: '', quorums: net.quorumDids }, alice.owner)
    const signers = quorums.filter((q) => first.quorums.includes([...q.dids.keys()][0]))
    const [tip] = first.blockId.split('-')
    await waitFor(async () => (await signers[0].ledger.record<ValidatedState>('cs-validated', ids[0]))?.blockNumber === Number(tip), { what: 'the signers to learn the new states' })
    for (const n of [a, ...quorums]) n.ledger.singleReads.clear()
    const back = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 30_000, memo: '', quorums: net.quorumDids }, bob.owner)
    expect(await a.ledger.chain(ids[29])).to.have.length(3)
    const perToken = (n: SimNode): number => (n.ledger.singleReads.get('cs-validated') ?? 0) + (n.ledger.singleReads.get('cs-states') ?? 0)
    for (const q of quorums.filter((q) => back.quorums.includes([...q.dids.keys()][0]))) expect(perToken(q), q.name).to.be.below(5)
    expect(perToken(a), 'the receiver').to.be.below(5)
  })

  it('a quorum that no longer knows a state says so and is sent the chain in the next round', async () => {
    const { net, a, b, alice, bob, quorums } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 2)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, alice.owner)
    const signers = quorums.filter((q) => first.quorums.includes([...q.dids.keys()][0]))
    // the states after FINALIZE (the vote already kept the state before the transfer)
    await waitFor(async () => {
      for (const q of signers) for (const id of ids) if ((await q.ledger.record<ValidatedState>('cs-validated', id))?.blockId !== first.blockId) return false
      return true
    }, { what: 'the signers to learn the new states' })
    // every signer forgets what it validated (a data dir restored from before, say)
    for (const q of signers) q.ledger.recs.get('cs-validated')?.clear()
    const seen = watchPrepares(quorums)
    const out = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, bob.owner)
    expect((await a.ledger.tokensOf(alice.did)).map((t) => t.tokenId)).to.include.members(ids)
    const asked = signers.filter((q) => seen.get(q)!.some((c) => c.txid === out.txid))
    expect(asked.length).to.be.greaterThan(0)
    for (const q of asked) {
      const calls = seen.get(q)!.filter((c) => c.txid === out.txid)
      expect(calls.map((c) => c.chains.length), q.name).to.deep.equal([0, 2])
    }
  })

  it('a receiver that held a token before checks only the blocks added since, even with its signature memo forgotten', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const back = async (forgetStates: boolean): Promise<number> => {
      a.verified.clear()
      if (forgetStates) a.ledger.recs.get('cs-validated')?.clear()
      const v0 = a.verifications
      await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, bob.owner)
      const n = a.verifications - v0
      await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
      return n
    }
    // the first payment's block (5 block signatures, 5 credits, the initiator's) and the genesis'
    // signature are not checked again when alice's node knows the state it validated
    const knowing = await back(false)
    const forgetting = await back(true)
    expect(forgetting - knowing).to.be.at.least(12)
  })

  it('a chain whose block at the known number is another one is validated whole; a bad block after the known state is refused', async () => {
    const { net, alice, id, bundle } = await SimNet.thereAndBack('a')
    const chain = bundle.chains[id]
    expect(chain).to.have.length(3)
    const plain = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    let checks = 0
    const verifier: SignatureVerifier = { verify: async (...x) => { checks++; return await plain.verify(...x) } }
    const g = decodeBlockEnvelope(chain[0])
    const state = (blockId: string): ValidatedState => ({ tokenId: id, blockId, blockNumber: 0, hash: blockId.split('-')[1], owner: alice.did, tokenType: g.content.transInfo.tokens[id].tokenType, burnt: false, value: 1 })
    const memoryWith = (s: ValidatedState): ReturnType<typeof ledgerAncestry> => {
      const m = ledgerAncestry(EMPTY_LEDGER)
      m.states.set(id, s)
      return m
    }
    // the genesis as the known state: only blocks 1 and 2 are checked
    await validateBundleToken(bundle, id, verifier, undefined, memoryWith(state(formatBlockId(0, g.hash))))
    const fromGenesis = checks
    checks = 0
    // a known state that is not the chain's block 0: the whole chain
    await validateBundleToken(bundle, id, verifier, undefined, memoryWith(state(formatBlockId(0, 'ab'.repeat(32)))))
    // (the genesis' own signature and its token content's)
    expect(checks).to.equal(fromGenesis + 2)
    // the known state, then a block whose signatures do not hold: refused
    const middle = decodeBlockEnvelope(chain[1]).hash
    const refusing: SignatureVerifier = { verify: async (did, msg, sig, role) => msg !== middle && await plain.verify(did, msg, sig, role) }
    try {
      await validateBundleToken(bundle, id, refusing, undefined, memoryWith(state(formatBlockId(0, g.hash))))
      expect.fail('a forged block after the known state must be refused')
    } catch (e) {
      expect((e as Error).message).to.match(/signature/)
    }
  })

  it('a token with neither a chain nor a known state is asked for; with a known state and no chain, the state is its tip', async () => {
    const { net, a, alice } = await SimNet.standard()
    const [id] = await net.mint(a, alice.did, 1)
    const plain = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    const empty = { chains: {}, contents: {} }
    try {
      await validateBundleToken(empty, id, plain, undefined, ledgerAncestry(EMPTY_LEDGER))
      expect.fail('no chain and nothing known')
    } catch (e) {
      expect(e).to.be.instanceOf(AncestryMissing)
      expect((e as AncestryMissing).missing).to.deep.equal([id])
    }
    const known: ValidatedState = { tokenId: id, blockId: formatBlockId(0, 'cd'.repeat(32)), blockNumber: 0, hash: 'cd'.repeat(32), owner: alice.did, tokenType: 1, burnt: false, value: 1 }
    const m = ledgerAncestry(EMPTY_LEDGER)
    m.states.set(id, known)
    expect((await validateBundleToken(empty, id, plain, undefined, m)).blockId).to.equal(known.blockId)
  })
})

/** Every delivery a node is sent: the tokens its bundle carries a chain for, and whether it was accepted. */
function watchDeliveries (n: SimNode): Array<{ txid: string, chains: string[], accepted?: boolean }> {
  const seen: Array<{ txid: string, chains: string[], accepted?: boolean }> = []
  const deliver = n.receiver.deliver.bind(n.receiver)
  n.receiver.deliver = async (r: DeliverRequest) => {
    const call: { txid: string, chains: string[], accepted?: boolean } = { txid: r.txid, chains: Object.keys(r.bundle.chains) }
    seen.push(call)
    const reply = await deliver(r)
    call.accepted = reply.accepted
    return reply
  }
  return seen
}

describe('consensus: tokens a receiver\'s node holds travel without their chains', function () {
  this.timeout(60_000)

  it('tokens coming back to the node that sent them are delivered without chains; the new block extends the chain it stores', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 3)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, alice.owner)
    const seen = watchDeliveries(a)
    const back = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, bob.owner)
    expect(seen.filter((d) => d.txid === back.txid)).to.deep.equal([{ txid: back.txid, chains: [], accepted: true }])
    const held = await a.ledger.tokensOf(alice.did, 'Free')
    expect(held.map((t) => t.tokenId).sort()).to.deep.equal([...ids].sort())
    for (const id of ids) {
      const chain = await a.ledger.chain(id)
      expect(chain).to.have.length(3)
      expect(decodeBlockEnvelope(chain[2]).hash).to.equal(back.blockId.split('-')[1])
      expect((await a.ledger.record<ValidatedState>('cs-validated', id))?.blockId).to.equal(back.blockId)
    }
    // and they can be spent again from there
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await b.ledger.tokensOf(bob.did, 'Free')).to.have.length(3)
  })

  it('a receiver that no longer holds what its node said names the tokens, and is sent their chains', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 2)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, alice.owner)
    // the node answers that it holds them, then forgets what it validated (a data dir restored from before)
    const holds = a.receiver.holds.bind(a.receiver)
    a.receiver.holds = async (did, states) => {
      const out = await holds(did, states)
      a.ledger.recs.get('cs-validated')?.clear()
      return out
    }
    const seen = watchDeliveries(a)
    const back = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 2000, memo: '', quorums: net.quorumDids }, bob.owner)
    const calls = seen.filter((d) => d.txid === back.txid)
    expect(calls.map((d) => [d.chains.length, d.accepted])).to.deep.equal([[0, false], [2, true]])
    expect((await a.ledger.tokensOf(alice.did, 'Free')).map((t) => t.tokenId).sort()).to.deep.equal([...ids].sort())
    expect(await a.ledger.chain(ids[0])).to.have.length(3)
  })

  it('a token a node does not hold is never taken without its chain', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const c = net.addNode('C')
    const carol = await net.addDid(c)
    const [id] = await net.mint(a, alice.did, 1)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    // carol's node never saw the token: asked, it says it does not hold it, and its delivery carries the chain
    expect(await c.receiver.holds(carol.did, [{ tokenId: id, blockId: first.blockId }])).to.deep.equal([])
    const seen = watchDeliveries(c)
    const out = await b.sender.transfer({ sender: bob.did, receiver: carol.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, bob.owner)
    expect(seen.filter((d) => d.txid === out.txid).map((d) => [d.chains, d.accepted])).to.deep.equal([[[id], true]])
    // a delivery without the chain to a node that does not hold the token takes nothing: it names the token
    const d = net.addNode('D')
    const dave = await net.addDid(d)
    const reply = await d.receiver.deliver({ txid: out.txid, receiver: dave.did, contract: new Uint8Array(), block: new Uint8Array(), bundle: { chains: {}, contents: {} }, memo: '', epoch: 0 }).catch((e: Error) => e)
    expect(reply).to.be.instanceOf(Error)
    expect(await d.ledger.tokensOf(dave.did)).to.deep.equal([])
  })
})

describe('consensus: a sender remembers only states whose block it verified', function () {
  this.timeout(60_000)

  it('when the check of the signed block did not complete, the new state is not kept as validated', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const [id] = await net.mint(a, alice.did, 1)
    // the sender's memo of verified envelopes keeps nothing: as if its check had been cut short
    a.verified.add = () => a.verified
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await b.ledger.record('cs-validated', id), 'the receiver validated the chain').to.not.equal(undefined)
    expect(await a.ledger.record('cs-validated', id)).to.equal(undefined)
  })
})
