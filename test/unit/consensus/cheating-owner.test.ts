import { expect } from 'chai'
import { createBlock, decodeBlockEnvelope, type Block, encodeBlockEnvelope, formatBlockId, nextTokenEntry, setSignature } from '../../../src/tokenchain/block.js'
import { TransactionType } from '../../../src/tokenchain/types.js'
import { GENESIS_ANCHOR } from '../../../src/tokenchain/validate.js'
import { tokenStateHash } from '../../../src/tokenchain/token-id.js'
import { checkerKey, networkCheckers, spentStatesOf } from '../../../src/consensus/quorum-checkers.js'
import { burntAncestors } from '../../../src/consensus/burn-claims.js'
import { splitToken } from '../../../src/consensus/part-split.js'
import type { ConsensusTransport, DeliverRequest, PrepareRequest, SignRequest } from '../../../src/consensus/messages.js'
import type { StateClaims } from '../../../src/consensus/ports.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { readOutgoing } from '../../../src/consensus/records.js'
import { DoubleSpends, forkProof, type DoubleSpendSink } from '../../../src/consensus/double-spends.js'
import type { ConsensusEvent } from '../../../src/consensus/observe.js'
import { silentLogger } from '../../../src/util/logger.js'
import { CertificateEvidence } from '../../../src/consensus/certificate-evidence.js'
import { SimNet, balance, twoQuorumSets, type SimDid, type SimNode } from './harness.js'
import { holdSealAndDelivery, launderToOwnNode, walletOnTwoNodes, releasedAfterSigning, releasedEverywhere } from './owner-tricks.js'

/**
 * An owner who cheats: he holds the wallet's keys on two nodes (X and Y), writes blocks honest code
 * never writes, and sends requests honest senders never send. Each case spends one token twice,
 * one spend after the other (no race needed); at most one may ever be paid.
 */
describe('consensus: a cheating owner spends one state twice (owner-only blocks, claims on every path)', function () {
  this.timeout(120_000)

  const network = twoQuorumSets

  const wallet = walletOnTwoNodes

  /** The owner appends an owner-only "11" block to his copy of the token on `node` (no quorum involved). */
  async function appendOwnerOnly (node: SimNode, alice: SimDid, id: string): Promise<void> {
    const chain = node.ledger.blocks.get(id)!
    const prev = decodeBlockEnvelope(chain[chain.length - 1]!)
    let b = createBlock({ transactionType: TransactionType.CONTRACT_COMMITTED, owner: alice.did, transInfo: { tokens: { [id]: nextTokenEntry(prev, id) } }, childTokens: [] })
    b = setSignature(b, alice.did, await alice.owner.pvtSign(b.hash))
    chain.push(encodeBlockEnvelope(b))
    node.ledger.tokens.get(id)!.latestBlockId = formatBlockId(chain.length - 1, b.hash)
  }

  for (const claims of [true, false]) {
    const how = claims ? 'claims' : 'spent markers'
    it(`case 2 (${how}): "… → bob" and "… → 11 (owner only) → carol" spend the same state: the second is refused`, async () => {
      const n = await network(claims)
      const { alice, id } = await wallet(n.net, n.x, n.y)
      await appendOwnerOnly(n.y, alice, id)
      const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
      expect(first.delivered).to.equal(true)
      const second = await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: unknown) => e as Error)
      expect(second, 'the second spend was paid').to.be.instanceOf(Error)
      expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
      expect(await balance(n.carolNode, n.carol.did)).to.equal(0)
    })
  }

  it('a token spent at its genesis is claimed at its genesis anchor, showing its genesis block, whose owner is the sender', async () => {
    const n = await network(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    const r = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(r.delivered).to.equal(true)
    const anchor = tokenStateHash(id, GENESIS_ANCHOR)
    const shown = n.net.claimPaths.map((p) => p?.[anchor]).filter((p) => p !== undefined)
    expect(shown.length, 'claims that showed the genesis').to.be.greaterThan(0)
    for (const p of shown) expect(decodeBlockEnvelope(p[0]!).content.owner).to.equal(alice.did)
  })

  it('an honest spend of a token whose tip is an owner-only block claims its last quorum-signed state, showing the arbiters the blocks to the tip, and is paid', async () => {
    const n = await network(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    await appendOwnerOnly(n.x, alice, id)
    const r = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(r.delivered).to.equal(true)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
  })

  it('case 2 (splits): a burn after an owner-only block claims the same burnt state as a burn without it', async () => {
    const n = await network(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    await appendOwnerOnly(n.y, alice, id)
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    const second = await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 300, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: unknown) => e as Error)
    expect(second, 'the second split was paid').to.be.instanceOf(Error)
    expect(await balance(n.carolNode, n.carol.did)).to.equal(0)
    // the burnt state both walks name is the genesis state of the token, whatever the owner appended
    const genesisState = tokenStateHash(id, GENESIS_ANCHOR)
    expect(n.net.burnClaims.map((b) => b.stateHash)).to.include(genesisState)
    const yChain = n.y.ledger.blocks.get(id)!
    const part = decodeBlockEnvelope(yChain[yChain.length - 1]!).content.childTokens[0]!
    const burns = await burntAncestors([[part, formatBlockId(0, decodeBlockEnvelope(n.y.ledger.blocks.get(part)![0]!).hash)]], async (t) => n.y.ledger.blocks.get(t))
    expect(burns.map((b) => b.stateHash)).to.deep.equal([genesisState])
    // the winner's other part is still its owner's to spend
    const again = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'rest', quorums: n.set1 }, alice.owner)
    expect(again.delivered).to.equal(true)
  })

  for (const own of [false, true]) {
  it(`two splits of one token: a bundle that names the burnt parent with an empty chain, sent to nodes that remember the other burn, skips the burnt ancestor at the ${own ? 'receiver (the five signers the owner\'s)' : 'quorums and at the receiver'}: one paid`, async () => {
    const n = await network(true)
    if (own) for (const d of n.set2) n.net.nodeOf(d).signsAnything = true
    const { alice, id } = await wallet(n.net, n.x, n.y)
    // carol's wallet lives on a node that also runs one of set 2's quorums (a small network: every node a quorum)
    const carol = await n.net.addDid(n.net.nodeOf(n.set2[0]!))
    const carolNode = n.net.nodeOf(carol.did)
    // X splits the token one way and pays bob half: the state before the burn is sealed to X's burn
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    // Y splits it another way; the honest spend is refused (the state is sealed to X's burn), but
    // set 2's quorums validated Y's burn on the way and remember the parent as burnt into Y's parts
    const honest = await n.y.sender.transfer({ sender: alice.did, receiver: carol.did, amountMilli: 300, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: Error) => e.message)
    expect(honest, 'the honest second split was paid').to.be.a('string')
    // Y again, its bundles naming the burnt parent with an empty chain (the remembered ancestor is not read from the bundle)
    const t = n.y.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    const strip = <R extends { bundle: { chains: Record<string, Uint8Array[]> } }>(r: R): R => ({ ...r, bundle: { ...r.bundle, chains: { ...r.bundle.chains, ...(r.bundle.chains[id] !== undefined ? { [id]: [] } : {}) } } })
    t.transport = { ...base, prepare: async (r) => await base.prepare(strip(r)), deliver: async (r) => await base.deliver(strip(r)) }
    // and his sender claims and seals the part's own state only, as the quorums' votes name it
    const port = (n.y.sender as unknown as { ctx: { claims: { port: StateClaims } } }).ctx.claims.port
    const claimFor = port.claimFor.bind(port)
    const sealFor = port.sealFor!.bind(port)
    port.claimFor = async (txid, claimants, hashes, _burns, contract, paths) => await claimFor(txid, claimants, hashes, [], contract, paths)
    port.sealFor = async (txid, items, consents, peers) => await sealFor(txid, items.filter((it) => it.holder === txid), consents, peers)
    await n.y.sender.transfer({ sender: alice.did, receiver: carol.did, amountMilli: 300, memo: 'y2', quorums: n.set2 }, alice.owner).catch(() => undefined)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(500)
    expect(await balance(carolNode, carol.did), 'one state burnt two ways and both parts paid').to.equal(0)
  })
  }

  // every party walks burnt ancestors to the top of the line (it once stopped at 64 levels)
  it('two splits of one token, the second 65 burns deep (each part burnt again at its genesis, no quorum involved): the walk of burnt ancestors reaches the state burnt twice: one paid', async () => {
    const n = await network(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    // on Y the owner burns the token into 999 + 1 milli, the 999 part into 998 + 1, and so on, 65 times
    let cur = id
    for (let i = 0; i < 65; i++) {
      const t = n.y.ledger.tokens.get(cur)!
      const chain = n.y.ledger.blocks.get(cur)!
      const res = await splitToken(t, chain[chain.length - 1]!, t.valueMilli - 1, alice.owner, n.net.now)
      await n.y.ledger.commit((w) => {
        w.putToken(res.parent)
        w.putBlock(cur, res.burnBlock.number, res.burnBlock.envelope)
        for (const p of res.parts) { w.putToken(p.token); w.putBlock(p.token.tokenId, 0, p.genesis) }
      })
      cur = res.parts[0]!.token.tokenId
    }
    expect(n.y.ledger.tokens.get(cur)!.valueMilli).to.equal(935)
    // the deepest part paid through honest quorums, to an honest receiver
    await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 935, memo: 'y', quorums: n.set2 }, alice.owner).catch(() => undefined)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(500)
    expect(await balance(n.carolNode, n.carol.did), 'one state burnt two ways and both paid').to.equal(0)
  })

  it('case 4: a checker that claims only at SIGN (PREPAREs sent without `asked`) claims the burnt ancestors too: two splits of one token, one paid', async () => {
    const n = await network(true)
    // the cheating sender's PREPAREs name no expected signers: no checker claims at PREPARE
    for (const q of n.net.nodes) {
      const prepare = q.quorum.prepare.bind(q.quorum)
      q.quorum.prepare = async (r: PrepareRequest) => { const { asked: _asked, ...rest } = r; return await prepare(rest) }
    }
    const { alice } = await wallet(n.net, n.x, n.y)
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    expect(n.net.burnClaims.length, 'the burnt ancestor was claimed at SIGN').to.be.greaterThan(0)
    const second = await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 300, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: unknown) => e as Error)
    expect(second, 'the second split was paid').to.be.instanceOf(Error)
    expect(await balance(n.carolNode, n.carol.did)).to.equal(0)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(500)
  })

  it('a part kept by a split, its genesis block written twice (another comment): the two spends of one part are one state, at most one is paid', async () => {
    const n = await network(true)
    const alice = await n.net.addDid(n.x)
    n.y.dids.set(alice.did, alice)
    await n.net.mint(n.x, alice.did, 1)
    // a payment of half the token: X keeps the other part, at its genesis state
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    // Y: a copy of X's wallet as it is now
    for (const [k, v] of n.x.ledger.tokens) n.y.ledger.tokens.set(k, { ...v })
    for (const [k, v] of n.x.ledger.blocks) n.y.ledger.blocks.set(k, [...v])
    for (const [k, v] of n.x.ledger.recs) n.y.ledger.recs.set(k, new Map([...v].map(([a, b]) => [a, structuredClone(b)])))
    const kept = [...n.y.ledger.tokens.entries()].find(([, t]) => t.owner === alice.did && t.status === 'Free')
    expect(kept, 'the kept part').to.not.equal(undefined)
    const partId = kept![0]
    // on Y, the owner signs another genesis of the same part: same token, same parent, another comment
    const g = decodeBlockEnvelope(n.y.ledger.blocks.get(partId)![0]!)
    let g2 = createBlock({ ...g.content, transInfo: { ...g.content.transInfo, comment: 'the same part, born again' } })
    g2 = setSignature(g2, alice.did, await alice.owner.pvtSign(g2.hash))
    n.y.ledger.blocks.set(partId, [encodeBlockEnvelope(g2)])
    n.y.ledger.tokens.get(partId)!.latestBlockId = formatBlockId(0, g2.hash)
    const [x, y] = await Promise.all([
      n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 500, memo: 'x2', quorums: n.set1 }, alice.owner).then(() => true, () => false),
      n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 500, memo: 'y', quorums: n.set2 }, alice.owner).then(() => true, () => false)
    ])
    const paid = (await balance(n.bobNode, n.bob.did)) - 500 + (await balance(n.carolNode, n.carol.did))
    expect(paid, `one part paid twice (X ${String(x)}, Y ${String(y)})`).to.be.at.most(500)
  })

  it('an owner\'s own quorum, ranked first as the designated checker of both spends, and his own nodes claiming nothing: each honest signer signs only with grants of its own claim, and at most one spend is paid', async () => {
    const n = await network(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    // the state both spends name; in each set, the quorum ranked first for it is the owner's (he
    // grinds a quorum DID until it ranks first among the five he lists: one in five does), and his
    // two nodes run changed code: as senders they claim nothing and say every claim holds
    const state = `${id}@${formatBlockId(0, decodeBlockEnvelope(n.x.ledger.blocks.get(id)![0]!).hash)}`
    for (const set of [n.set1, n.set2]) n.net.nodeOf(networkCheckers(checkerKey([state]), set, 1)[0]!).claimsNothing = true
    n.x.claimsNothing = true
    n.y.claimsNothing = true
    // both spends at once: each copy signs before the other commits (the owner holds his
    // transfers back as long as he likes: markers are published only after the commit)
    const [first, second] = await Promise.all([
      n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).then(() => true, () => false),
      n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).then(() => true, () => false)
    ])
    const paid = (await balance(n.bobNode, n.bob.did)) + (await balance(n.carolNode, n.carol.did))
    expect(paid, `honest quorums signed both spends of the state (first ${String(first)}, second ${String(second)})`).to.be.at.most(1000)
    // and with no claim made at all, neither is signed
    expect(paid).to.equal(0)
  })

  it('grants of another quorum\'s claim, or forged ones, do not let a signer sign: it checks the grants name its own quorum and come from the arbiters', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    // X's sender hands every signer the grants of the first signer's claim only, and a forged copy for the others
    const t = n.x.sender as unknown as { transport: import('../../../src/consensus/messages.js').ConsensusTransport }
    const base = t.transport
    let firstQuorum: string | undefined
    let firstGrants: import('../../../src/consensus/claim-proofs.js').PeerGrant[] | undefined
    const refused: string[] = []
    t.transport = {
      ...base,
      sign: async (r) => {
        firstQuorum ??= r.quorumDid
        firstGrants ??= r.grants
        const grants = r.quorumDid === firstQuorum ? r.grants : (firstGrants ?? []).map((g, i) => i % 2 === 0 ? g : { ...g, quorum: r.quorumDid })
        try { return await base.sign({ ...r, grants }) } catch (e) { refused.push(r.quorumDid); throw e }
      }
    }
    const res = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).then(() => true, () => false)
    expect(res).to.equal(false)
    expect(refused.length).to.be.at.least(4)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(0)
  })

  it('an owner who runs all five signers of a spend and a sender that claims nothing: the receiver checks the certificate itself and refuses the block', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    for (const d of n.set1) n.net.nodeOf(d).signsAnything = true
    n.x.claimsNothing = true
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).then(() => undefined, (e: unknown) => e as Error)
    expect(await balance(n.bobNode, n.bob.did), `bob took a block with no certificate (${first?.message ?? 'delivered'})`).to.equal(0)
    // the other copy spends the same state through honest quorums: paid at most once in all
    await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).catch(() => undefined)
    expect((await balance(n.bobNode, n.bob.did)) + (await balance(n.carolNode, n.carol.did))).to.be.at.most(1000)
  })

  // an arbiter checks that a claimed state's block names the sender as owner, not that the block
  // that made the state was certified: the receiver asks the arbiters of the states the earlier
  // blocks spent (docs/security.md, "Laundering")
  it('case 8, laundering: the owner pays bob, then spends the same state again to a DID of his own through his own five signers and his own receiver, then pays carol from that DID through honest quorums: carol is not paid', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    const first = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    // the owner's node M, whose receiver checks no certificate, hosts his DID mallory; his own five sign the second spend
    const { m, mallory } = await launderToOwnNode(n, alice)
    expect(await balance(m, mallory.did)).to.equal(1000)
    // everyone honest again: mallory pays carol through honest quorums, with honest code
    await m.sender.transfer({ sender: mallory.did, receiver: n.carol.did, amountMilli: 1000, memo: 'm', quorums: n.set2 }, mallory.owner).catch(() => undefined)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
    expect(await balance(n.carolNode, n.carol.did), 'one state paid to bob, and through mallory to carol').to.equal(0)
  })

  it('case 6, a stranger\'s spent marker: a marker of an honest owner\'s state signed by a DID of the stranger\'s own (for a transaction that never was) does not stop the owner\'s spend; the arbiters\' records do', async () => {
    const n = await network(true)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    const stranger = await n.net.addDid(n.carolNode)
    const state = tokenStateHash(id, n.x.ledger.tokens.get(id)!.latestBlockId)
    n.net.markers.set(state, { txid: 'f'.repeat(64), blockId: `1-${'e'.repeat(64)}`, quorum: stranger.did })
    const paid = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(paid.delivered).to.equal(true)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
    // and the state, now spent, is refused to the owner's other copy by the arbiters alone
    n.net.markers.clear()
    const again = await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: unknown) => e as Error)
    expect(again?.message).to.match(/double spent|held by|exhausted/)
    expect(await balance(n.carolNode, n.carol.did)).to.equal(0)
  })

  /** The owner's transfer on `node` held back at SIGN (every request kept, none sent): the PREPAREs and SIGNs it would have sent, by quorum. */
  async function heldAtSign (node: SimNode, run: () => Promise<unknown>): Promise<{ preps: Map<string, PrepareRequest>, signs: Map<string, SignRequest> }> {
    const t = node.sender as unknown as { transport: ConsensusTransport }
    const base = t.transport
    const preps = new Map<string, PrepareRequest>()
    const signs = new Map<string, SignRequest>()
    t.transport = {
      ...base,
      prepare: async (r) => { preps.set(r.quorumDid, structuredClone(r)); return await base.prepare(r) },
      sign: async (r) => { signs.set(r.quorumDid, structuredClone(r)); throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'held back by the owner') }
    }
    await run().catch(() => undefined)
    t.transport = base
    return { preps, signs }
  }


  it('grants of a claim its quorum released (the owner aborted the vote, then spent the state elsewhere) do not let that quorum sign when asked to vote on the same transaction again', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    // T1 through set1, claimed for the five and held back at SIGN: the owner keeps each quorum's grants
    const { preps, signs } = await heldAtSign(n.x, async () => await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner))
    expect(signs.size).to.equal(5)
    const txid = [...signs.values()][0]!.txid
    const hashes = [...new Set([...signs.values()].flatMap((r) => (r.grants ?? []).flatMap((g) => g.states)))]
    // the owner aborts T1's votes: each honest quorum releases its claim, signed
    for (const d of n.set1) await n.net.nodeOf(d).quorum.abort({ txid, quorumDid: d, reason: 'the owner aborts' })
    await releasedEverywhere(n.net, txid, hashes)
    // T2 spends the state through set2 (honest): claimed, signed, its delivery held back
    const ty = n.y.sender as unknown as { transport: ConsensusTransport }
    const by = ty.transport
    let t2: DeliverRequest | undefined
    ty.transport = { ...by, deliver: async (r) => { t2 = structuredClone(r); throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'held back by the owner') } }
    await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).catch(() => undefined)
    expect(t2, 'T2 was not signed').to.not.equal(undefined)
    // T1 asked again at set1 (new votes, new claims nobody made), then SIGN with the old grants
    const votes = []
    for (const d of n.set1) {
      const v = await n.net.nodeOf(d).quorum.prepare(structuredClone(preps.get(d)!))
      expect(v.vote).to.equal('yes')
      votes.push(v)
    }
    // the owner builds T1's block from the new votes (his sender's own code) and shows each quorum its old grants
    const rec = (await readOutgoing(n.x.ledger, txid))!
    const build = (n.x.sender as unknown as { signRound: { buildBlock: (r: unknown, c: Uint8Array, v: unknown[]) => Promise<Block> } }).signRound
    const block = encodeBlockEnvelope(await build.buildBlock(rec, preps.get(n.set1[0]!)!.contract, votes))
    const outcomes = await Promise.all(n.set1.map(async (d) => await n.net.nodeOf(d).quorum.sign({ ...structuredClone(signs.get(d)!), block }).then(() => 'signed', (e: RbtError) => `${e.code}: ${e.message}`)))
    expect(outcomes.filter((o) => o === 'signed'), `honest quorums signed T1 while T2 holds the state (${outcomes.join(', ')})`).to.deep.equal([])
    for (const o of outcomes) expect(o).to.match(/^CLAIM_UNREACHABLE/)
  })

  // a grant proves the arbiter granted the claim once, not that the claim still holds: when the five
  // signers are the owner's, he releases their claims (his quorums' signatures) after the grants
  // came back. The seal closes it: a receiver takes only states sealed to the block's transaction,
  // and an arbiter seals only the claim it holds, for good.
  it('an owner who runs all five signers releases their claims once granted, spends the state through honest quorums, then seals and delivers the first block: paid at most once', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    for (const d of n.set1) n.net.nodeOf(d).signsAnything = true
    // T1 through the owner's own five, claimed for them (real grants); his sender holds the seal and the delivery back
    const owner = holdSealAndDelivery(n.x)
    await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).catch(() => undefined)
    // his quorums release their claims (he holds their keys): the arbiters free the state
    const { t1, held } = await releasedAfterSigning(n.net, n.set1, owner)
    // T2 through honest quorums, paid; then T1 sealed with the five consents and delivered with what it got
    await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).catch(() => undefined)
    const late = await owner.realSeal(...held)
    expect(late.granted, 'a state sealed to T2 was sealed to T1 as well').to.equal(false)
    const refused = await n.bobNode.receiver.deliver({ ...structuredClone(t1), seals: late.seals }).then(() => undefined, (e: Error) => e.message)
    expect(refused, 'the receiver took a block whose states are sealed to another transaction').to.match(/certificate does not hold/)
    expect(await balance(n.carolNode, n.carol.did)).to.equal(1000)
    const paid = (await balance(n.bobNode, n.bob.did)) + (await balance(n.carolNode, n.carol.did))
    expect(paid, 'one state paid to bob and to carol').to.be.at.most(1000)
  })

  it('a seal is final: once the owner\'s five sealed T1, his quorums\' releases free nothing and the second spend is refused', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    for (const d of n.set1) n.net.nodeOf(d).signsAnything = true
    const tx = n.x.sender as unknown as { transport: ConsensusTransport }
    const bx = tx.transport
    let t1: DeliverRequest | undefined
    tx.transport = { ...bx, deliver: async (r) => { t1 = structuredClone(r); throw new RbtError(ErrorCode.PEER_UNREACHABLE, 'held back by the owner') } }
    await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).catch(() => undefined)
    expect(t1?.seals?.length ?? 0, 'T1 was not sealed').to.be.greaterThan(0)
    const hashes = [...new Set(t1!.seals!.flatMap((g) => g.states))]
    for (const a of n.net.nodes) {
      for (const r of await a.claims.records(hashes)) expect(r?.committed, 'a sealed record is not committed').to.equal(true)
      for (const q of n.set1) for (const c of (await a.claims.records(hashes)).flatMap((r) => r?.claimants ?? [])) if (c.nonce !== undefined) await a.claims.release(t1!.txid, hashes, q, c.nonce)
      for (const r of await a.claims.records(hashes)) expect(r?.txid, 'a release freed a sealed state').to.equal(t1!.txid)
    }
    const second = await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: Error) => e.message)
    expect(second, 'the second spend went through').to.be.a('string')
    await n.bobNode.receiver.deliver(structuredClone(t1!))
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
    expect(await balance(n.carolNode, n.carol.did)).to.equal(0)
  })

  it('case 7, more than f lying arbiters: one state sealed to two transactions is paid twice, and bob\'s receiver, shown both, keeps the two certificates and distrusts exactly the arbiters that sealed both', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    const events: ConsensusEvent[] = []
    const evidence = new CertificateEvidence({
      ledger: n.bobNode.ledger, log: silentLogger, clock: n.net.clock, observe: (e) => { events.push(e) },
      check: async (g) => g.seal === true
        ? (g.sig === n.net.sealSig(g.peer, g.txid, g.states) ? 'final' : undefined)
        : (g.quorum !== undefined && g.nonce !== undefined && g.forTx !== undefined && g.sig === n.net.grantSig(g.peer, { txid: g.txid, quorum: g.quorum, nonce: g.nonce, forTx: g.forTx, states: g.states }) ? 'valid' : undefined)
    })
    n.bobNode.certificates = evidence
    // the ten quorum nodes lie as arbiters (grant and seal everything): 10 of 14, q = 10; the markers never reach the other side
    const liars = n.net.nodes.filter((a) => a.name.startsWith('q'))
    for (const a of liars) a.liar = true
    n.net.markers.set = function () { return this }
    const t1 = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    const t2 = await n.y.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner)
    expect([t1.delivered, t2.delivered], 'beyond f lying arbiters both spends are paid').to.deep.equal([true, true])
    await evidence.settled()
    const kept = (await new DoubleSpends({ ledger: n.bobNode.ledger, log: silentLogger, clock: n.net.clock }).list()).filter((p) => p.kind === 'certificates')
    expect(kept, 'bob\'s receiver kept no evidence of the two certificates').to.have.length(1)
    expect([...kept[0]!.spenders].sort()).to.deep.equal([t1.txid, t2.txid].sort())
    expect(kept[0]!.seenBy).to.equal('receiver')
    const names = liars.map((a) => a.name).sort()
    expect(kept[0]!.grantedTwice).to.deep.equal(names)
    expect(kept[0]!.distrusted).to.deep.equal(names)
    expect(n.net.nodes.filter((a) => evidence.distrusted(a.name)).map((a) => a.name).sort(), 'an honest arbiter was distrusted').to.deep.equal(names)
    expect(events).to.deep.include({ kind: 'double-spend', seenBy: 'receiver', evidence: 'certificates' })
    expect(events.filter((e) => e.kind === 'arbiter-distrusted')).to.have.length(names.length)
  })

  it('a sender whose grants were pushed out of memory by other transfers in flight before its decision still delivers a certificate, and the receiver is paid', async () => {
    const n = await network(true)
    const { alice } = await wallet(n.net, n.x, n.y)
    // the grants are kept for 64 transactions in flight: 64 others claimed between the signatures and the decision
    const sender = n.x.sender as unknown as { transport: ConsensusTransport, ctx: { claims: { forget: (txid: string) => void } } }
    const base = sender.transport
    sender.transport = { ...base, sign: async (r) => { const reply = await base.sign(r); sender.ctx.claims.forget(r.txid); return reply } }
    const r = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner).then((x) => x.delivered, (e: Error) => e.message)
    expect(r).to.equal(true)
    expect(await balance(n.bobNode, n.bob.did)).to.equal(1000)
  })

  it('case 3: the designated checker depends on the states spent and the signers only, not on the memo', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const [id] = await net.mint(a, alice.did, 1)
    const genesis = formatBlockId(0, decodeBlockEnvelope(a.ledger.blocks.get(id)![0]!).hash)
    const states = [`${id}@${genesis}`]
    const five = net.quorumDids.slice(0, 5)
    const checker = networkCheckers(checkerKey(states), five, 1)
    // the order the sender lists them in changes nothing
    expect(networkCheckers(checkerKey(states), [...five].reverse(), 1)).to.deep.equal(checker)
    const res = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'ground memo 1234', quorums: net.quorumDids }, alice.owner)
    const chain = await b.ledger.chain(id)
    const block = decodeBlockEnvelope(chain[chain.length - 1]!)
    expect(spentStatesOf(block.content.transInfo.tokens)).to.deep.equal(states)
    const signers = (block.content.quorumSignatures ?? []).map((c) => c.did)
    expect(Object.keys(block.signatures).sort()).to.deep.equal([...signers].sort())
    // whatever the transaction id (the memo), the checker of these signers is the same
    expect(networkCheckers(checkerKey(states), signers, 1)).to.deep.equal(networkCheckers(checkerKey(spentStatesOf(block.content.transInfo.tokens)), [...signers].reverse(), 1))
    expect(res.txid).to.be.a('string')
  })

  it('case 7: a double spend that got through (markers lost, no claims) is flagged by the receiver and the quorums that see both blocks, with the proof kept', async () => {
    const n = await network(false)
    // every node keeps what it sees, counts it and says it
    const events: Array<{ node: string, e: ConsensusEvent }> = []
    const seen = new Map<string, DoubleSpends>()
    for (const node of n.net.nodes) {
      const ds = new DoubleSpends({ ledger: node.ledger, log: silentLogger, clock: n.net.clock, observe: (e) => { events.push({ node: node.name, e }) } })
      seen.set(node.name, ds)
      ;(node.receiver as unknown as { opts: { doubleSpends?: DoubleSpendSink } }).opts.doubleSpends = ds
      ;(node.quorum as unknown as { opts: { doubleSpends?: DoubleSpendSink } }).opts.doubleSpends = ds
    }
    const { alice, id } = await wallet(n.net, n.x, n.y)
    // the markers never reach the other side (a cut longer than any deadline)
    n.net.markers.set = function () { return this }
    await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    await n.y.sender.transfer({ sender: alice.did, receiver: n.carol.did, amountMilli: 1000, memo: 'y', quorums: n.set2 }, alice.owner)
    // carol pays bob with it: bob's node holds the other spend of the same state, and so do set 1's quorums
    await n.carolNode.sender.transfer({ sender: n.carol.did, receiver: n.bob.did, amountMilli: 1000, memo: 'z', quorums: n.set1 }, n.carol.owner).catch(() => undefined)
    const waitFor = async (what: () => Promise<boolean>): Promise<void> => {
      const end = Date.now() + 10_000
      while (!await what()) { if (Date.now() > end) throw new Error('deadline'); await new Promise((resolve) => setTimeout(resolve, 20)) }
    }
    await waitFor(async () => (await seen.get('B')!.list()).length > 0)
    const [proof] = await seen.get('B')!.list()
    const genesis = formatBlockId(0, decodeBlockEnvelope(n.x.ledger.blocks.get(id)![0]!).hash)
    expect(proof!.tokenId).to.equal(id)
    // a state at its genesis is named by GENESIS_ANCHOR, whatever block 0 the chains hold
    expect(proof!.state).to.equal(`${id}@${GENESIS_ANCHOR}`)
    expect(proof!.kind).to.equal('blocks')
    expect(proof!.seenBy).to.equal('receiver')
    // the proof is the two blocks themselves: each spends the state, each validly signed by its quorums
    const blocks = proof!.blocks!.map((b) => decodeBlockEnvelope(new Uint8Array(Buffer.from(b, 'base64'))))
    expect(blocks.map((b) => b.content.transInfo.tokens[id]!.previousBlockId)).to.deep.equal([genesis, genesis])
    expect(new Set(blocks.map((b) => b.content.owner))).to.deep.equal(new Set([n.bob.did, n.carol.did]))
    expect([...proof!.spenders].sort()).to.deep.equal(blocks.map((b) => b.content.transInfo.tid!).sort())
    expect(events.some((x) => x.node === 'B' && x.e.kind === 'double-spend' && x.e.seenBy === 'receiver')).to.equal(true)
    // the quorums of set 1 that signed bob's block saw carol's chain in the PREPARE
    await waitFor(async () => (await Promise.all(n.set1.map(async (d) => (await seen.get(n.net.nodeOf(d).name)!.list()).length))).some((c) => c > 0))
  })

  it('case 7: forkProof finds two spends of one state past an owner-only block, and nothing in a chain that extends another', async () => {
    const n = await network(false)
    const { alice, id } = await wallet(n.net, n.x, n.y)
    await appendOwnerOnly(n.y, alice, id)
    await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums: n.set1 }, alice.owner)
    n.net.markers.clear()
    const xChain = await n.bobNode.ledger.chain(id)
    const yBefore = await n.y.ledger.chain(id)
    expect(forkProof(id, xChain, yBefore, 'sync'), 'an owner-only block alone spends nothing').to.equal(undefined)
    expect(forkProof(id, xChain.slice(0, 1), xChain, 'sync'), 'a chain extending another').to.equal(undefined)
    // the spend after the owner-only block: refused now (the same state), so build it as a block would be
    const fake = [...yBefore, xChain[1]!]
    const p = forkProof(id, xChain, fake, 'sync')
    expect(p?.state).to.equal(`${id}@${GENESIS_ANCHOR}`)
  })
})
