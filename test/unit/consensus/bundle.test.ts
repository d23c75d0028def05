import { expect } from 'chai'
import { validateNewestBlocks } from '../../../src/consensus/bundle.js'
import { decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import type { SignatureVerifier } from '../../../src/tokenchain/validate.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { SimNet } from './harness.js'

describe('consensus: validating the newest blocks of a chain (validate-token-chain blockcount)', function () {
  this.timeout(60_000)

  it('a block count checks only that many blocks from the latest back; 0, negative or the whole length checks the whole chain', async () => {
    const { net, id, bundle } = await SimNet.thereAndBack('b')
    const chain = bundle.chains[id]
    expect(chain).to.have.length(3)
    const verifier = didSignatureVerifier({ resolve: async (d) => net.docs.get(d) })
    for (const n of [0, -1, 3, 7]) expect(await validateNewestBlocks(bundle, id, verifier, n), String(n)).to.equal(3)
    expect(await validateNewestBlocks(bundle, id, verifier, 1)).to.equal(1)
    expect(await validateNewestBlocks(bundle, id, verifier, 2)).to.equal(2)

    // a verifier that refuses every signature over the middle block (block 1)
    const middle = decodeBlockEnvelope(chain[1]).hash
    const refusing: SignatureVerifier = { verify: async (did, msg, sig, role) => msg !== middle && await verifier.verify(did, msg, sig, role) }
    expect(await validateNewestBlocks(bundle, id, refusing, 1), 'the latest block alone is fine').to.equal(1)
    for (const n of [2, 0, 3]) {
      try {
        await validateNewestBlocks(bundle, id, refusing, n)
        expect.fail(`block count ${n} should reach block 1`)
      } catch (e) {
        expect((e as { details?: { blockNumber?: number } }).details?.blockNumber, String(n)).to.equal(1)
      }
    }

    // the window still checks its first block's link to the block before it
    const swapped = { chains: { ...bundle.chains, [id]: [chain[0], chain[0], chain[2]] }, contents: bundle.contents }
    try {
      await validateNewestBlocks(swapped, id, verifier, 1)
      expect.fail('a window whose first block does not follow the stored block before it is refused')
    } catch (e) {
      expect((e as Error).message).to.match(/block-number|previous-block/)
    }
  })
})

describe('consensus: a transfer reads its tokens\' chains once', function () {
  this.timeout(60_000)

  it('the chains sent to the quorums are used again for the new block and the delivery', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 3)
    const reads = new Map<string, number>()
    const read = a.ledger.chain.bind(a.ledger)
    a.ledger.chain = async (id: string) => { reads.set(id, (reads.get(id) ?? 0) + 1); return await read(id) }
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(await b.ledger.chain(ids[0])).to.have.length(2)
    // before: read for the quorums' bundle, again for the new block, again for the delivery; the
    // anchor token once more, at the lock, for the signers of its last block (quorum selection)
    const counts = ids.map((id) => reads.get(id) ?? 0)
    expect(counts.filter((n) => n === 1).length + counts.filter((n) => n === 2).length).to.equal(ids.length)
    expect(counts.reduce((x, y) => x + y, 0)).to.be.at.most(ids.length + 1)
  })
})

describe('consensus: a transfer reads only the chains someone lacks', function () {
  this.timeout(60_000)

  it('tokens coming back, to quorums that signed their last block and a node that held them: no chain is read but the anchor\'s', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const ids = await net.mint(a, alice.did, 3)
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, alice.owner)
    const reads: string[] = []
    const read = b.ledger.chain.bind(b.ledger)
    b.ledger.chain = async (id: string) => { reads.push(id); return await read(id) }
    const back = await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 3000, memo: '', quorums: net.quorumDids }, bob.owner)
    // the five quorums that signed the first transfer know all three states; alice's node held them
    expect([...back.quorums].sort()).to.deep.equal([...first.quorums].sort())
    // the anchor token's chain, for the signers of its last block (quorum selection)
    expect(reads).to.have.length(1)
    expect(ids).to.include(reads[0])
    expect((await a.ledger.tokensOf(alice.did, 'Free')).map((t) => t.tokenId).sort()).to.deep.equal([...ids].sort())
  })
})

describe('consensus: a delivery writes each block once', function () {
  this.timeout(60_000)

  it('the ancestors a receiver learns are not written a second time with the bundle\'s chains', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    const writes = new Map<string, number>()
    const commit = b.ledger.commit.bind(b.ledger)
    b.ledger.commit = async (build) => await commit((w) => {
      build({ ...w, putBlock: (id, n, env) => { writes.set(`${id}/${n}`, (writes.get(`${id}/${n}`) ?? 0) + 1); w.putBlock(id, n, env) } })
    })
    // a part of alice's token: bob's node learns its parent (the burnt whole token) with the delivery
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 250, memo: '', quorums: net.quorumDids }, alice.owner)
    expect(writes.size).to.be.greaterThan(2)
    for (const [key, n] of writes) expect(n, key).to.equal(1)
  })
})

describe('consensus: a receiver writes only the blocks it lacks', function () {
  this.timeout(60_000)

  it('change coming back: the blocks and contents the node stored when it held the token are not written again', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    await net.mint(a, alice.did, 1)
    // alice pays bob a part; bob pays it back: alice's node stored that part's chain (and its parent's) when it sent it
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 250, memo: '', quorums: net.quorumDids }, alice.owner)
    const [part] = await b.ledger.tokensOf(bob.did)
    const blocks: string[] = []
    const contents: string[] = []
    const commit = a.ledger.commit.bind(a.ledger)
    a.ledger.commit = async (build) => await commit((w) => {
      build({
        ...w,
        putBlock: (id, n, env) => { blocks.push(`${id}/${n}`); w.putBlock(id, n, env) },
        putRecord: (c, k, v) => { if (c === 'cs-contents') contents.push(k); w.putRecord(c, k, v) }
      })
    })
    await b.sender.transfer({ sender: bob.did, receiver: alice.did, amountMilli: 250, memo: '', quorums: net.quorumDids }, bob.owner)
    expect(await a.ledger.chain(part.tokenId)).to.have.length(3)
    // before: the part's three blocks, its parent's two and the contents of the parent's two parts
    const siblings = decodeBlockEnvelope((await a.ledger.chain(part.parentId!)).at(-1)!).content.childTokens
    const line = new Set([part.tokenId, part.parentId, ...siblings])
    expect(siblings).to.include(part.tokenId)
    expect(blocks.filter((k) => line.has(k.split('/')[0]))).to.deep.equal([`${part.tokenId}/2`])
    expect(contents.filter((c) => line.has(c))).to.deep.equal([])
  })
})
