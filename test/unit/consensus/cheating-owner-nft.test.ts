import { expect } from 'chai'
import { decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import { nftTokenId, tokenStateHash } from '../../../src/tokenchain/token-id.js'
import { GENESIS_ANCHOR } from '../../../src/tokenchain/validate.js'
import { NFT_TOKEN_TYPE } from '../../../src/consensus/nft.js'
import { lockNft, type LockContext } from '../../../src/consensus/transfer-lock.js'
import { readOutgoing, unb64, type OutgoingRecord } from '../../../src/consensus/records.js'
import type { ChainBundle } from '../../../src/consensus/types.js'
import { contractBytes } from '../../../src/consensus/sender-context.js'
import { twoQuorumSets, type SimDid, type SimNode } from './harness.js'
import { holdSealAndDelivery, releasedAfterSigning } from './owner-tricks.js'

const ARTIFACT = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'

/**
 * The cheating owner of docs/security.md with an NFT: he holds the wallet's keys on two nodes (X
 * and Y), runs changed code on his own nodes and quorums, and moves one NFT state to two owners.
 * A receiver takes an NFT only when the state its block spends is sealed to that block's
 * transaction, as for RBT and FTs (docs/protocol.md, "Seals").
 */
describe('consensus: a cheating owner moves one NFT state twice', function () {
  this.timeout(120_000)

  /** Marks the NFT as created by `d` on `node` (what `createnft` stores before the deploy). */
  async function created (node: SimNode, d: SimDid): Promise<string> {
    const nftId = nftTokenId(d.did, ARTIFACT)
    await node.ledger.commit((w) => { w.putToken({ tokenId: nftId, tokenType: NFT_TOKEN_TYPE, valueMilli: 0, owner: d.did, status: 'Generated', latestBlockId: '', updatedAt: 1 }) })
    return nftId
  }

  /** A wallet on X and (restored) on Y holding one NFT, deployed through honest quorums. */
  async function nftWallet (n: Awaited<ReturnType<typeof twoQuorumSets>>): Promise<{ alice: SimDid, nftId: string }> {
    const alice = await n.net.addDid(n.x)
    n.y.dids.set(alice.did, alice)
    const nftId = await created(n.x, alice)
    const r = await n.x.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId, valueMilli: 1000, data: 'v1', artifactHash: ARTIFACT }, memo: 'deploy', quorums: n.set2 }, alice.owner)
    expect(r.delivered).to.equal(true)
    copyNft(n.x, n.y, nftId)
    return { alice, nftId }
  }

  function copyNft (from: SimNode, to: SimNode, nftId: string): void {
    to.ledger.tokens.set(nftId, { ...from.ledger.tokens.get(nftId)! })
    to.ledger.blocks.set(nftId, [...from.ledger.blocks.get(nftId)!])
  }

  async function owns (node: SimNode, did: string, nftId: string): Promise<boolean> {
    const t = await node.ledger.token(nftId)
    return t?.owner === did && t.status === 'Free'
  }


  for (const executedBefore of [false, true]) {
    it(`an owner who runs all five signers of an NFT transfer${executedBefore ? ' (the NFT executed once before)' : ''} releases their claims once granted, moves the NFT through honest quorums, then seals and delivers the first block: the receiver refuses it`, async () => {
      const n = await twoQuorumSets(true)
      const { alice, nftId } = await nftWallet(n)
      if (executedBefore) {
        await n.x.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'v2' }, memo: 'exec', quorums: n.set2 }, alice.owner)
        copyNft(n.x, n.y, nftId)
      }
      for (const d of n.set1) n.net.nodeOf(d).signsAnything = true
      // T1 through the owner's own five, claimed for them (real grants); his sender holds the seal and the delivery back
      const owner = holdSealAndDelivery(n.x)
      await n.x.sender.nft({ initiator: alice.did, receiver: n.bob.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to bob' }, memo: 'x', quorums: n.set1 }, alice.owner).catch(() => undefined)
      // his quorums release their claims (he holds their keys): the arbiters free the state
      const { t1, held } = await releasedAfterSigning(n.net, n.set1, owner)
      // T2 through honest quorums: carol gets the NFT
      const t2 = await n.y.sender.nft({ initiator: alice.did, receiver: n.carol.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to carol' }, memo: 'y', quorums: n.set2 }, alice.owner)
      expect(t2.delivered).to.equal(true)
      expect(await owns(n.carolNode, n.carol.did, nftId)).to.equal(true)
      // T1 sealed late with the five consents (refused: the state is sealed to T2) and delivered with what it got
      const late = await owner.realSeal(...held)
      expect(late.granted, 'a state sealed to T2 was sealed to T1 as well').to.equal(false)
      const refused = await n.bobNode.receiver.deliver({ ...structuredClone(t1), seals: late.seals }).then(() => undefined, (e: Error) => e.message)
      expect(refused, 'the receiver took an NFT whose state is sealed to another transaction').to.match(/certificate does not hold/)
      expect(await owns(n.bobNode, n.bob.did, nftId), 'bob holds the NFT carol holds').to.equal(false)
      // and without any seal at all
      const bare = await n.bobNode.receiver.deliver({ ...structuredClone(t1), seals: [] }).then(() => undefined, (e: Error) => e.message)
      expect(bare).to.match(/certificate does not hold/)
      expect(await owns(n.bobNode, n.bob.did, nftId)).to.equal(false)
    })
  }

  it('an owner who runs all five signers of an NFT transfer and a sender that claims nothing: the receiver checks the certificate itself and refuses the block', async () => {
    const n = await twoQuorumSets(true)
    const { alice, nftId } = await nftWallet(n)
    for (const d of n.set1) n.net.nodeOf(d).signsAnything = true
    n.x.claimsNothing = true
    const first = await n.x.sender.nft({ initiator: alice.did, receiver: n.bob.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to bob' }, memo: 'x', quorums: n.set1 }, alice.owner).then(() => undefined, (e: Error) => e)
    expect(await owns(n.bobNode, n.bob.did, nftId), `bob took an NFT block with no certificate (${first?.message ?? 'delivered'})`).to.equal(false)
    // the other copy moves the same state through honest quorums: one owner in all
    await n.y.sender.nft({ initiator: alice.did, receiver: n.carol.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to carol' }, memo: 'y', quorums: n.set2 }, alice.owner).catch(() => undefined)
    expect(await owns(n.carolNode, n.carol.did, nftId)).to.equal(true)
  })

  it('an NFT whose deploy block the owner wrote twice (his own five signers, no claim): the two transfers spend one state, its genesis anchor, and only one is taken', async () => {
    const n = await twoQuorumSets(true)
    const { alice, nftId } = await nftWallet(n)
    // on Y, a second deploy of the same NFT id (another memo: another block 0), signed by the owner's
    // five with no claim made (his sender claims nothing, his quorums check no grant and look no
    // spent marker up)
    n.y.ledger.tokens.delete(nftId)
    n.y.ledger.blocks.delete(nftId)
    await created(n.y, alice)
    for (const d of n.set1) n.net.nodeOf(d).signsAnything = true
    n.y.claimsNothing = true
    const opts = n.set1.map((d) => (n.net.nodeOf(d).quorum as unknown as { opts: { markers?: unknown } }).opts)
    const markers = opts.map((o) => o.markers)
    for (const o of opts) o.markers = undefined
    await n.y.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId, valueMilli: 1000, data: 'v1', artifactHash: ARTIFACT }, memo: 'deploy again', quorums: n.set1 }, alice.owner)
    opts.forEach((o, i) => { o.markers = markers[i] })
    const [gx, gy] = [n.x, n.y].map((node) => decodeBlockEnvelope(node.ledger.blocks.get(nftId)![0]!).hash)
    expect(gx, 'the two deploy blocks').to.not.equal(gy)
    for (const d of n.set1) n.net.nodeOf(d).signsAnything = false
    n.y.claimsNothing = false
    // each copy moved through honest quorums, one after the other
    const first = await n.x.sender.nft({ initiator: alice.did, receiver: n.bob.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to bob' }, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(first.delivered).to.equal(true)
    const second = await n.y.sender.nft({ initiator: alice.did, receiver: n.carol.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to carol' }, memo: 'y', quorums: n.set2 }, alice.owner).then(() => undefined, (e: Error) => e)
    expect(second, 'the second transfer of the NFT went through').to.be.instanceOf(Error)
    expect(await owns(n.bobNode, n.bob.did, nftId)).to.equal(true)
    expect(await owns(n.carolNode, n.carol.did, nftId), 'one NFT held by bob and by carol').to.equal(false)
    // both were claimed at the NFT's genesis anchor
    const anchor = tokenStateHash(nftId, GENESIS_ANCHOR)
    expect(n.net.claimPaths.some((p) => p?.[anchor] !== undefined), 'no claim named the genesis anchor').to.equal(true)
  })

  // a deploy spends no state and is never delivered: no seal to check, the chain rules refuse it (a guard, not a fix)
  it('an NFT deployed straight to another receiver (the owner\'s sender and his five quorums run changed code) is refused by that receiver, claims on or off', async () => {
    for (const claims of [true, false]) {
      const n = await twoQuorumSets(claims)
      const alice = await n.net.addDid(n.x)
      const nftId = await created(n.x, alice)
      // his quorums vote for a deploy to bob (honest ones refuse: an NFT is deployed to its deployer) and check no grant
      for (const d of n.set1) {
        const q = n.net.nodeOf(d)
        q.signsAnything = true
        ;(q.quorum as unknown as { validateNft: () => Promise<unknown> }).validateNft = async () => ({ valueMilli: 1000, state: `${nftId}@` })
      }
      n.x.claimsNothing = true
      // his sender skips its own check of the receiver and locks the deploy to bob; the quorums sign
      const s = n.x.sender as unknown as { lockAndDrive: (lock: () => Promise<unknown>, locked: string, progress: (m: string) => void) => Promise<unknown>, lockContext: LockContext, ctx: { evidenceOf: (r: OutgoingRecord) => Promise<ChainBundle | undefined> } }
      const input = { initiator: alice.did, receiver: n.bob.did, op: { op: 'deploy' as const, nftId, valueMilli: 1000, data: 'v1', artifactHash: ARTIFACT }, memo: 'deploy to bob', quorums: n.set1 }
      let txid: string | undefined
      await s.lockAndDrive(async () => { const rec = await lockNft(s.lockContext, input, alice.owner); txid = rec.txid; return rec }, 'NFT locked', () => {}).catch(() => undefined)
      const rec = (await readOutgoing(n.x.ledger, txid!))!
      expect(rec.block, `claims ${String(claims)}: the deploy was not signed`).to.be.a('string')
      // and delivers the signed deploy to bob himself, with his quorums' pledge evidence
      const block = unb64(rec.block!)
      const pledges = await s.ctx.evidenceOf(rec)
      expect(pledges, 'the pledge evidence').to.not.equal(undefined)
      const refused = await n.bobNode.receiver.deliver({ txid: rec.txid, receiver: n.bob.did, contract: contractBytes(rec), block, bundle: { chains: { [nftId]: [block] }, contents: {} }, pledges, memo: rec.memo, epoch: rec.epoch, seals: [] })
        .then(() => undefined, (e: Error) => e.message)
      expect(refused, `claims ${String(claims)}: bob took a deploy`).to.match(/the deployer must own the new chain/)
      expect(await n.bobNode.ledger.token(nftId)).to.equal(undefined)
    }
  })

  it('an honest NFT transfer with claims on: claimed, sealed, delivered and taken; the new owner moves it on', async () => {
    const n = await twoQuorumSets(true)
    const { alice, nftId } = await nftWallet(n)
    const r = await n.x.sender.nft({ initiator: alice.did, receiver: n.bob.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to bob' }, memo: 'x', quorums: n.set1 }, alice.owner)
    expect(r.delivered).to.equal(true)
    expect(await owns(n.bobNode, n.bob.did, nftId)).to.equal(true)
    const r2 = await n.bobNode.sender.nft({ initiator: n.bob.did, receiver: n.carol.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'to carol' }, memo: 'z', quorums: n.set2 }, n.bob.owner)
    expect(r2.delivered).to.equal(true)
    expect(await owns(n.carolNode, n.carol.did, nftId)).to.equal(true)
  })
})
