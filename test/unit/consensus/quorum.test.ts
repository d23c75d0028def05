import { expect } from 'chai'
import { createBlock, decodeBlockEnvelope, encodeBlockEnvelope, parseBlockId, setSignature } from '../../../src/tokenchain/block.js'
import type { PledgeRecord } from '../../../src/consensus/records.js'
import { SimNet, chainSourceOf, type SimNode } from './harness.js'
import { waitFor } from '../../helpers/wait.js'

type Source = ReturnType<typeof chainSourceOf>

/** A source that serves `blocks` for every token, whatever is asked (a lying announcer). */
const serving = (blocks: Uint8Array[]): Source => ({ chain: async function * () { yield blocks } })

describe('consensus: a pledge is released only when a valid block moves the backed token on', function () {
  this.timeout(60_000)

  /** alice → bob 1000; a quorum holding the pledge, the pledge and the one state it backs */
  async function pledged (): Promise<{ net: SimNet, a: SimNode, b: SimNode, q: SimNode, p: PledgeRecord, state: string, tokenId: string, alice: Awaited<ReturnType<typeof SimNet.standard>>['alice'], bob: Awaited<ReturnType<typeof SimNet.standard>>['bob'] }> {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, alice.owner)
    const q = await waitFor(() => net.nodes.slice(0, 7).find((n) => (n.ledger.recs.get('cs-pledges')?.size ?? 0) > 0), { timeoutMs: 5_000, what: 'a committed pledge' })
    const [p] = [...q.ledger.recs.get('cs-pledges')!.values()] as PledgeRecord[]
    const state = p!.newBlockIds[0]!
    return { net, a, b, q, p: p!, state, tokenId: state.slice(0, state.indexOf('@')), alice, bob }
  }

  /** bob sends the 1000 on to alice; settles once every signer finalized (stored the block) */
  async function moveOn (net: SimNet, b: SimNode, alice: { did: string }, bob: Awaited<ReturnType<typeof SimNet.standard>>['bob']): Promise<{ txid: string }> {
    const onward = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 1000, memo: '', quorums: net.quorumDids }, bob.owner)
    const finalized = (): number => net.nodes.slice(0, 7).filter((n) => [...(n.ledger.recs.get('cs-pledges')?.values() ?? [])].some((x) => (x as PledgeRecord).txid === onward.txid)).length
    await waitFor(() => finalized() === 5, { timeoutMs: 5_000, what: 'the onward transfer committed at its signers' })
    return onward
  }

  const holds = async (q: SimNode, p: PledgeRecord): Promise<boolean> => {
    const rec = await q.ledger.record<PledgeRecord>('cs-pledges', `${p.quorumDid}/${p.txid}`)
    const tokens = await Promise.all(p.tokens.map(async (id) => await q.ledger.token(id)))
    return rec !== undefined && tokens.every((t) => t?.status === 'Pledged' && t.txid === p.txid)
  }

  it('a forged announcement (the right state, no block or an invalid one) releases nothing', async () => {
    const { b, q, p, state, tokenId, alice, bob } = await pledged()
    // no block anywhere: neither on the quorum nor from the announcer
    await q.quorum.tokensMovedOn([state])
    await q.quorum.tokensMovedOn([state], serving([]))
    await q.quorum.tokensMovedOn([state], { chain: async function * () { throw new Error('announcer unreachable') } })
    expect(await holds(q, p)).to.equal(true)

    // a block that claims to spend the state, built from the backed block: the owner's signature
    // on it, the old quorum signatures copied (they were made over another block)
    const n = parseBlockId(state.slice(state.indexOf('@') + 1)).number
    const backed = decodeBlockEnvelope((await b.ledger.chain(tokenId))[n]!)
    const entry = backed.content.transInfo.tokens[tokenId]!
    let forged = createBlock({
      ...backed.content,
      owner: alice.did,
      transInfo: { ...backed.content.transInfo, sender: bob.did, receiver: alice.did, tokens: { [tokenId]: { ...entry, blockNumber: String(n + 1), previousBlockId: state.slice(state.indexOf('@') + 1) } } }
    }, { ...backed.signatures })
    forged = setSignature(forged, bob.did, await bob.owner.pvtSign(forged.hash))
    await q.quorum.tokensMovedOn([state], serving([encodeBlockEnvelope(backed), encodeBlockEnvelope(forged)]))
    expect(await holds(q, p), 'a block without valid quorum signatures').to.equal(true)
  })

  it('a genuine spend releases; the same block with one quorum signature tampered with does not', async () => {
    const { net, b, q, p, state, tokenId, alice, bob } = await pledged()
    await moveOn(net, b, alice, bob)
    const n = parseBlockId(state.slice(state.indexOf('@') + 1)).number
    // the quorum holds the chain only up to the backed state (it did not sign the onward transfer): the block must come from the announcer
    q.ledger.blocks.set(tokenId, (q.ledger.blocks.get(tokenId) ?? []).slice(0, n + 1))
    const chain = await b.ledger.chain(tokenId)
    const spend = decodeBlockEnvelope(chain[n + 1]!)
    const [victim] = Object.keys(spend.signatures).filter((d) => d !== bob.did)
    const tampered = setSignature(spend, victim!, spend.signatures[Object.keys(spend.signatures).find((d) => d !== victim)!]!)
    await q.quorum.tokensMovedOn([state], serving([chain[n]!, encodeBlockEnvelope(tampered)]))
    expect(await holds(q, p), 'one quorum signature does not verify').to.equal(true)
    // the genuine block from a source that omits the backed block: the quorum's own copy of it counts
    await q.quorum.tokensMovedOn(['QmSomethingElse@1-00', state], chainSourceOf(b))
    expect(await holds(q, p)).to.equal(false)
    expect(await q.ledger.record('cs-pledges', `${p.quorumDid}/${p.txid}`)).to.equal(undefined)
    for (const id of p.tokens) expect((await q.ledger.token(id))?.status).to.equal('Free')
  })

  it('a quorum that holds the spending block itself releases without asking the announcer', async () => {
    const { net, b, alice, bob, p, state } = await pledged()
    // every quorum that signed the onward transfer stored its block; those holding the first pledge release it without a source
    const onward = await moveOn(net, b, alice, bob)
    const holders = net.nodes.slice(0, 7).filter((n) => n.ledger.recs.get('cs-pledges')?.has(`${[...n.dids.keys()][0]!}/${p.txid}`) === true)
    const signers = holders.filter((n) => [...(n.ledger.recs.get('cs-pledges')?.values() ?? [])].some((x) => (x as PledgeRecord).txid === onward.txid))
    expect(signers.length, 'at least 3 of the 5 first pledgers signed the onward transfer (5 of 7)').to.be.at.least(3)
    for (const n of signers) {
      await n.quorum.tokensMovedOn([state])
      expect(n.ledger.recs.get('cs-pledges')?.has(`${[...n.dids.keys()][0]!}/${p.txid}`)).to.equal(false)
    }
  })
})
