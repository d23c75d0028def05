import { expect } from 'chai'
import { decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import { nftTokenId } from '../../../src/tokenchain/token-id.js'
import { validateChain } from '../../../src/tokenchain/validate.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { NFT_TOKEN_TYPE, childLinkProblem, childNftId, type NftOp } from '../../../src/consensus/nft.js'
import type { SimDid, SimNode } from './harness.js'
import { SimNet } from './harness.js'

const ARTIFACT = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'

async function created (n: SimNode, d: SimDid, artifactHash = ARTIFACT): Promise<string> {
  const nftId = nftTokenId(d.did, artifactHash)
  await n.ledger.commit((w) => { w.putToken({ tokenId: nftId, tokenType: NFT_TOKEN_TYPE, valueMilli: 0, owner: d.did, status: 'Generated', latestBlockId: '', updatedAt: 1 }) })
  return nftId
}

describe('consensus: NFT deploy, execute and transfer (simulated nodes, real signatures)', function () {
  this.timeout(60_000)

  it('deploys ("09"), executes with data ("10", owner unchanged), transfers, and refuses the old owner', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const q = net.quorumDids
    const nftId = await created(a, alice)
    const deploy: NftOp = { op: 'deploy', nftId, valueMilli: 1000, data: 'v1', artifactHash: ARTIFACT }
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: deploy, memo: 'deploy', quorums: q }, alice.owner)
    let t = await a.ledger.token(nftId)
    expect(t?.status).to.equal('Free')
    expect(t?.owner).to.equal(alice.did)
    expect(await a.ledger.chain(nftId)).to.have.length(1)
    expect(decodeBlockEnvelope((await a.ledger.chain(nftId))[0]).content.transactionType).to.equal('09')

    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'v2' }, memo: 'exec', quorums: q }, alice.owner)
    const chain = await a.ledger.chain(nftId)
    expect(chain).to.have.length(2)
    const b1 = decodeBlockEnvelope(chain[1])
    expect(b1.content.transactionType).to.equal('10')
    expect(b1.content.nftData).to.equal('v2')
    expect(b1.content.owner).to.equal(alice.did)

    await a.sender.nft({ initiator: alice.did, receiver: bob.did, op: { op: 'execute', nftId, valueMilli: 2000, data: 'to bob' }, memo: 'give', quorums: q }, alice.owner)
    t = await a.ledger.token(nftId)
    expect(t?.status).to.equal('Transferred')
    const atB = await b.ledger.token(nftId)
    expect(atB?.owner).to.equal(bob.did)
    expect(atB?.status).to.equal('Free')
    expect(atB?.valueMilli).to.equal(2000)
    const verifier = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    const res = await validateChain(await b.ledger.chain(nftId), { tokenId: nftId, verifier })
    expect(res.tip.owner).to.equal(bob.did)
    expect(res.length).to.equal(3)

    // the old owner's node refuses locally
    try {
      await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'x' }, memo: '', quorums: q }, alice.owner)
      expect.fail('old owner executed')
    } catch (e) { expect((e as Error).message).to.match(/not the owner/) }
    // a forged local record does not fool the quorums: they validate the chain's owner
    await a.ledger.commit((w) => { w.putToken({ ...t!, status: 'Free', owner: alice.did }) })
    try {
      await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'execute', nftId, valueMilli: 1000, data: 'x' }, memo: '', quorums: q }, alice.owner)
      expect.fail('forged owner executed')
    } catch (e) { expect((e as Error).message).to.match(/consensus failed/) }
    // the new owner executes
    await b.sender.nft({ initiator: bob.did, receiver: bob.did, op: { op: 'execute', nftId, valueMilli: 2000, data: 'bob was here' }, memo: '', quorums: q }, bob.owner)
    expect(await b.ledger.chain(nftId)).to.have.length(4)
  })

  it('refuses a deploy by someone who did not create the NFT', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const nftId = await created(a, alice)
    const deploy: NftOp = { op: 'deploy', nftId, valueMilli: 500, data: '', artifactHash: ARTIFACT }
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: deploy, memo: '', quorums: net.quorumDids }, alice.owner)
    // bob claims alice's NFT id as his own: the id is not derived from his DID
    await b.ledger.commit((w) => { w.putToken({ tokenId: nftId, tokenType: NFT_TOKEN_TYPE, valueMilli: 0, owner: bob.did, status: 'Generated', latestBlockId: '', updatedAt: 1 }) })
    try {
      await b.sender.nft({ initiator: bob.did, receiver: bob.did, op: deploy, memo: '', quorums: net.quorumDids }, bob.owner)
      expect.fail('foreign deploy succeeded')
    } catch (e) { expect((e as Error).message).to.match(/consensus failed/) }
    expect((await b.ledger.token(nftId))?.status).to.equal('Generated')
  })

  it('two transfers of the same NFT at once: exactly one wins', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const carol = await net.addDid(b)
    const nftId = await created(a, alice)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId, valueMilli: 1000, data: '', artifactHash: ARTIFACT }, memo: '', quorums: net.quorumDids }, alice.owner)
    const go = async (to: string): Promise<boolean> => {
      try {
        await a.sender.nft({ initiator: alice.did, receiver: to, op: { op: 'execute', nftId, valueMilli: 1000, data: '' }, memo: '', quorums: net.quorumDids }, alice.owner)
        return true
      } catch { return false }
    }
    const results = await Promise.all([go(bob.did), go(carol.did)])
    expect(results.filter((x) => x)).to.have.length(1)
    const owner = (await b.ledger.token(nftId))?.owner
    expect([bob.did, carol.did]).to.include(owner)
  })

  it('mints a child NFT linked to its parent; a non-owner of the parent is refused', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const parent = await created(a, alice)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId: parent, valueMilli: 1000, data: '', artifactHash: ARTIFACT }, memo: '', quorums: net.quorumDids }, alice.owner)
    const child = childNftId(alice.did, parent, 'n1')
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId: child, valueMilli: 100, data: 'child', parentId: parent, nonce: 'n1' }, memo: '', quorums: net.quorumDids }, alice.owner)
    const g = decodeBlockEnvelope((await a.ledger.chain(child))[0])
    expect(g.content.genesis?.info[child]?.parentId).to.equal(parent)
    expect((await a.ledger.token(child))?.parentId).to.equal(parent)
    // bob copies the parent's chain and tries to mint a child of it
    await b.ledger.commit((w) => {
      w.putToken({ tokenId: parent, tokenType: NFT_TOKEN_TYPE, valueMilli: 1000, owner: bob.did, status: 'Free', latestBlockId: 'x', updatedAt: 1 })
    })
    for (const [i, env] of (await a.ledger.chain(parent)).entries()) await b.ledger.commit((w) => { w.putBlock(parent, i, env) })
    const forged = childNftId(bob.did, parent, 'n2')
    try {
      await b.sender.nft({ initiator: bob.did, receiver: bob.did, op: { op: 'deploy', nftId: forged, valueMilli: 100, data: '', parentId: parent, nonce: 'n2' }, memo: '', quorums: net.quorumDids }, bob.owner)
      expect.fail('forged parent accepted')
    } catch (e) { expect((e as Error).message).to.match(/consensus failed.*belongs to/) }
  })
  it('a child announced on the parent topic is checked, not trusted: genesis, named parent and a minter who owned the parent', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    const parent = await created(a, alice)
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId: parent, valueMilli: 1000, data: '', artifactHash: ARTIFACT }, memo: '', quorums: net.quorumDids }, alice.owner)
    const other = await created(a, alice, 'QmPChd2hVbrJ6bfo3WBcTW4iZnpHm8TEzWkLHmLpXhF68A')
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId: other, valueMilli: 1000, data: '', artifactHash: 'QmPChd2hVbrJ6bfo3WBcTW4iZnpHm8TEzWkLHmLpXhF68A' }, memo: '', quorums: net.quorumDids }, alice.owner)
    const child = childNftId(alice.did, parent, 'n1')
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'deploy', nftId: child, valueMilli: 100, data: 'child', parentId: parent, nonce: 'n1' }, memo: '', quorums: net.quorumDids }, alice.owner)
    const genesis = decodeBlockEnvelope((await a.ledger.chain(child))[0])
    const owners = new Set((await a.ledger.chain(parent)).map((b) => decodeBlockEnvelope(b).content.owner))
    expect(childLinkProblem(parent, child, genesis, owners)).to.equal(undefined)
    // announced on another NFT's topic: the genesis names a different parent
    expect(childLinkProblem(other, child, genesis, owners)).to.match(/names parent/)
    // a minter the checking node never saw owning the parent
    expect(childLinkProblem(parent, child, genesis, new Set([bob.did]))).to.match(/never owned the parent/)
    // a top-level NFT passed off as a child, or a chain passed off under another id
    expect(childLinkProblem(parent, other, decodeBlockEnvelope((await a.ledger.chain(other))[0]), owners)).to.match(/names parent \(none\)/)
    expect(childLinkProblem(parent, other, genesis, owners)).to.match(/not its genesis/)
    expect(childLinkProblem(parent, parent, genesis, owners)).to.match(/own child/)
    // an execution block is not a genesis
    await a.sender.nft({ initiator: alice.did, receiver: alice.did, op: { op: 'execute', nftId: child, valueMilli: 100, data: 'v2' }, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(childLinkProblem(parent, child, decodeBlockEnvelope((await a.ledger.chain(child))[1]), owners)).to.match(/does not start with a deploy/)
  })
})
