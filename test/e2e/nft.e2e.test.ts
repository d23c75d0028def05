import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { RbtClient } from '../../src/client/rbt-client.js'
import { NodeProcess } from '../helpers/node-process.js'
import { FIXTURE_ENV, complete, createLiteDid, quorumNetwork, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'
import { waitFor } from '../helpers/wait.js'

interface Done { status: boolean, message: string, result: unknown }

/** `rbtZero`: the body also says `rbt: 0` (SPEC: "0 when no RBT is transferred") */
async function nftTx (client: RbtClient, initiator: string, owner: string, nft: { nftId: string, value: number, data?: string, parentNFTId?: string }, transfer = false, rbtZero = false): Promise<Done> {
  const first = await client.envelope('txInitiate', { body: { initiator, owner, tokens: { ...(rbtZero ? { rbt: 0 } : {}), nft: [nft], transferNftOwnership: transfer }, memo: 'nft e2e' } })
  if (!first.status) return first
  return await complete(client, first, USER_PASSWORD)
}

async function chainOf (client: RbtClient, id: string): Promise<Array<{ owner: string, data: string, transaction_type: string }>> {
  return (await client.call('nftChain', { params: { nft_id: id } })).result as never
}

describe('e2e: NFTs through 7 quorum nodes', function () {
  this.timeout(300_000)
  let net: QuorumNetwork
  let c: NodeProcess
  let nftId = ''
  const metadata = Buffer.from(JSON.stringify({ name: 'e2e picture', n: 1 }))
  const artifact = Buffer.from(Array.from({ length: 700_000 }, (_, i) => (i * 31) % 256))

  before(async () => {
    net = await quorumNetwork()
    c = await new NodeProcess({ n: 9, extraArgs: ['-testNet'], env: FIXTURE_ENV }).start()
    await net.join(c)
    // a follower validates signatures: it must be able to resolve the owners' DIDs
    await waitFor(async () => (await c.client.envelope('didResolve', { params: { did: net.alice } })).status && (await c.client.envelope('didResolve', { params: { did: net.bob } })).status,
      { timeoutMs: 30_000, what: 'the third node to resolve alice and bob' })
    // every quorum answers over the network before the first NFT consensus (a loaded machine starts them slowly)
    await waitFor(async () => (await Promise.all(net.quorumDids.map(async (did) => (await net.a.client.envelope('quorumsStatus', { query: { quorumAddress: did } })).status))).every((x) => x),
      { timeoutMs: 180_000, intervalMs: 1000, what: 'all 7 quorums to answer a status request from node A' })
  })
  after(async () => { await c?.dispose() })

  it('creates (content-addressed), deploys, executes with data, and a third node follows and fetches it', async () => {
    const { a, alice } = net
    const form = { fields: { did: alice }, files: { metadata: { filename: 'meta.json', data: metadata }, artifact: { filename: 'pic.bin', data: artifact } } }
    const made = await a.client.call('nftsGenerate', { form })
    nftId = made.result as string
    expect(nftId).to.match(/^Qm/)
    expect((await a.client.call('nftsGenerate', { form })).result).to.equal(nftId)
    const bad = await a.client.envelope('nftsGenerate', { form: { fields: { did: alice }, files: { metadata: { filename: 'm.json', data: Buffer.from('not json') }, artifact: form.files.artifact } } })
    expect(bad.status).to.equal(false)
    expect(bad.message).to.match(/not a JSON/)

    let done = await nftTx(a.client, alice, alice, { nftId, value: 1, data: 'deployed' })
    expect(done.status, done.message).to.equal(true)
    expect(await chainOf(a.client, nftId)).to.have.length(1)

    await c.client.call('nftsSubscribe', { query: { nft: nftId } })
    await waitFor(async () => (await c.client.envelope('nftChain', { params: { nft_id: nftId } })).status, { timeoutMs: 60_000, what: 'the follower to sync the deployed chain' })

    done = await nftTx(a.client, alice, alice, { nftId, value: 1, data: 'state 2' }, false, true)
    expect(done.status, done.message).to.equal(true)
    const chain = await chainOf(a.client, nftId)
    expect(chain).to.have.length(2)
    expect(chain[1].data).to.equal('state 2')
    expect(chain[1].owner).to.equal(alice)
    expect(chain[1].transaction_type).to.equal('10')
    await waitFor(async () => (await chainOf(c.client, nftId)).length === 2, { timeoutMs: 60_000, what: 'the follower to see state 2' })

    // unknown and malformed ids
    const unknownId = 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG'
    for (const env of [
      await a.client.envelope('nftChain', { params: { nft_id: unknownId } }),
      await a.client.envelope('nftChildren', { params: { nft_id: unknownId } }),
      await a.client.envelope('nftChain', { params: { nft_id: 'not-an-id' } }),
      await c.client.envelope('nftsSubscribe', { query: { nft: 'not-an-id' } })
    ]) expect(env.status, env.message).to.equal(false)

    const fetched = await c.client.call('nftFetch', { query: { nft: nftId } })
    const path = (fetched.result as { path: string }).path
    expect(readFileSync(join(path, 'metadata.json')).equals(metadata)).to.equal(true)
    expect(readFileSync(join(path, 'artifact')).equals(artifact)).to.equal(true)
  })

  it('transfers to another node: the owner changes, the old owner can no longer execute or transfer; one of two concurrent transfers wins', async () => {
    const { a, b, alice, bob } = net
    const carol = await createLiteDid(c.client, USER_PASSWORD)
    await waitFor(async () => (await a.client.envelope('didResolve', { params: { did: carol } })).status, { timeoutMs: 30_000, what: 'carol to resolve' })
    // a non-owner cannot transfer it (bob's node asks for alice's NFT in bob's name)
    const stolen = await nftTx(b.client, bob, bob, { nftId, value: 1, data: 'mine now' }, false)
    expect(stolen.status).to.equal(false)
    const stolen2 = await nftTx(a.client, bob, carol, { nftId, value: 1 }, true)
    expect(stolen2.status).to.equal(false)
    expect(await chainOf(a.client, nftId)).to.have.length(2)
    const [r1, r2] = await Promise.all([
      nftTx(a.client, alice, bob, { nftId, value: 1, data: 'to bob' }, true),
      nftTx(a.client, alice, carol, { nftId, value: 1, data: 'to carol' }, true)
    ])
    expect([r1.status, r2.status].filter((x) => x)).to.have.length(1)
    const winner = r1.status ? bob : carol
    const winnerNode = r1.status ? b : c
    const chain = await chainOf(a.client, nftId)
    expect(chain).to.have.length(3)
    expect(chain[2].owner).to.equal(winner)
    const bal = (await winnerNode.client.call('didBalancesNft', { params: { did: winner } })).result as Array<{ nft_id: string }>
    expect(bal.map((x) => x.nft_id)).to.include(nftId)
    const again = await nftTx(a.client, alice, alice, { nftId, value: 1, data: 'mine still?' })
    expect(again.status).to.equal(false)
    expect(again.message).to.match(/not the owner/)
    const regift = await nftTx(a.client, alice, r1.status ? carol : bob, { nftId, value: 1, data: 'again' }, true)
    expect(regift.status).to.equal(false)
    expect(regift.message).to.match(/not the owner/)
    expect(await chainOf(a.client, nftId)).to.have.length(3)
    // the follower sees the new state and owner
    await waitFor(async () => (await chainOf(c.client, nftId)).length === 3, { timeoutMs: 60_000, what: 'the follower to see the transfer' })
    expect((await chainOf(c.client, nftId))[2].owner).to.equal(winner)
    const unknown = await nftTx(a.client, alice, alice, { nftId: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', value: 1 })
    expect(unknown.status).to.equal(false)
  })

  it('mints a child NFT; children/parent answered by the originator only; a forged parent is refused', async () => {
    const { a, b, alice } = net
    const form = { fields: { did: alice }, files: { metadata: { filename: 'meta.json', data: Buffer.from('{"parent":true}') }, artifact: { filename: 'x', data: Buffer.from('parent artifact') } } }
    const parent = (await a.client.call('nftsGenerate', { form })).result as string
    const deployed = await nftTx(a.client, alice, alice, { nftId: parent, value: 1 })
    expect(deployed.status, deployed.message).to.equal(true)
    const minted = await nftTx(a.client, alice, alice, { nftId: parent, value: 0.5, data: 'child one', parentNFTId: parent })
    expect(minted.status, minted.message).to.equal(true)
    const child = ((minted.result as { mintedNFTChildren: Array<{ childNFTId: string }> }).mintedNFTChildren)[0].childNFTId
    const kids = (await a.client.call('nftChildren', { params: { nft_id: parent } })).result as Array<{ nft_id: string }>
    expect(kids.map((k) => k.nft_id)).to.deep.equal([child])
    expect(((await a.client.call('nftParent', { params: { nft_id: child } })).result as { nft_id: string }).nft_id).to.equal(parent)
    // B does not host the originator: refused (B follows the parent to know it at all)
    await b.client.call('nftsSubscribe', { query: { nft: parent } })
    await waitFor(async () => (await b.client.envelope('nftChain', { params: { nft_id: parent } })).status, { timeoutMs: 30_000, what: 'B to sync the parent' })
    const refused = await b.client.envelope('nftChildren', { params: { nft_id: parent } })
    expect(refused.status).to.equal(false)
    expect(refused.message).to.match(/originator/)
    // B's user cannot mint a child of a parent it does not own
    const forged = await nftTx(b.client, net.bob, net.bob, { nftId: parent, value: 0.5, parentNFTId: parent })
    expect(forged.status).to.equal(false)
    // a parent nobody deployed, and a parent id that disagrees with nftId
    const ghost = await nftTx(a.client, alice, alice, { nftId: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG', value: 0.5, parentNFTId: 'QmYwAPJzv5CZsnA625s3Xf2nemtYgPpHdWEz79ojWnPbdG' })
    expect(ghost.status).to.equal(false)
    expect(ghost.message).to.match(/not deployed or not known/)
    const mismatch = await nftTx(a.client, alice, alice, { nftId: child, value: 0.5, parentNFTId: parent })
    expect(mismatch.status).to.equal(false)
    expect(((await a.client.call('nftChildren', { params: { nft_id: parent } })).result as unknown[])).to.have.length(1)
  })

  it("a child minted on another node than the parent's originator reaches the originator's children list through the parent's topic", async () => {
    const { a, b, alice, bob } = net
    const form = { fields: { did: alice }, files: { metadata: { filename: 'meta.json', data: Buffer.from('{"parent":"travels"}') }, artifact: { filename: 'y', data: Buffer.from('travelling parent') } } }
    const parent = (await a.client.call('nftsGenerate', { form })).result as string
    const deployed = await nftTx(a.client, alice, alice, { nftId: parent, value: 1, data: 'at alice' })
    expect(deployed.status, deployed.message).to.equal(true)
    const moved = await nftTx(a.client, alice, bob, { nftId: parent, value: 1, data: 'to bob' }, true)
    expect(moved.status, moved.message).to.equal(true)
    await waitFor(async () => ((await b.client.call('didBalancesNft', { params: { did: bob } })).result as Array<{ nft_id: string }> ?? []).some((x) => x.nft_id === parent),
      { timeoutMs: 60_000, what: 'bob to hold the parent' })
    // bob, the parent's owner now, mints a child on his own node
    const minted = await nftTx(b.client, bob, bob, { nftId: parent, value: 0.25, data: 'minted by bob', parentNFTId: parent })
    expect(minted.status, minted.message).to.equal(true)
    const child = ((minted.result as { mintedNFTChildren: Array<{ childNFTId: string }> }).mintedNFTChildren)[0].childNFTId
    // the originator (alice's node) learns of it, verified, without asking
    const kids = await waitFor(async () => {
      const r = ((await a.client.call('nftChildren', { params: { nft_id: parent } })).result as Array<{ nft_id: string, value: number }>)
      return r.length > 0 ? r : undefined
    }, { timeoutMs: 90_000, what: "the originator to learn of the child minted on bob's node" })
    expect(kids).to.deep.equal([{ nft_id: child, value: 0.25 }])
    const atA = await chainOf(a.client, child)
    expect(atA.map((x) => [x.transaction_type, x.owner, x.data])).to.deep.equal([['09', bob, 'minted by bob']])
    // bob's node is not the parent's originator: it does not answer the children list
    const refused = await b.client.envelope('nftChildren', { params: { nft_id: parent } })
    expect(refused.status).to.equal(false)
    expect(refused.message).to.match(/originator/)
  })
})
