import { expect } from 'chai'
import {
  burntBlock, createBlock, encodeBlockEnvelope, ftGenesis, ftGenesisComment, setSignature, testTokenGenesis, type Block
} from '../../../src/tokenchain/block.js'
import { encodeCbor, decodeCbor, type CborObject } from '../../../src/tokenchain/cbor.js'
import { ftTokenId } from '../../../src/tokenchain/token-id.js'
import { spendAnchor, validateChain, validateExtension, verifyEnvelope, type ChainValidationContext } from '../../../src/tokenchain/validate.js'
import { nextTokenEntry } from '../../../src/tokenchain/block.js'
import { TransactionType } from '../../../src/tokenchain/types.js'
import { isRbtError, type RbtError } from '../../../src/util/errors.js'
import { buildTestTokenChain, KeyRing, tamperedEnvelope, transferBlock, type TestChain } from './fixtures.js'

async function expectInvalid (p: Promise<unknown>, blockNumber: number, check: string, re?: RegExp): Promise<RbtError> {
  try {
    await p
  } catch (e) {
    expect(isRbtError(e, 'CHAIN_INVALID'), String(e)).to.equal(true)
    const err = e as RbtError
    expect(err.details).to.deep.include({ blockNumber, check })
    expect(err.message).to.contain(`block ${blockNumber}: ${check} check failed`)
    if (re !== undefined) expect(err.message).to.match(re)
    return err
  }
  expect.fail('chain should be rejected')
}

describe('tokenchain/validate', function () {
  this.timeout(10_000)
  const ring = new KeyRing()
  let chain: TestChain
  let ctx: ChainValidationContext

  before(() => {
    chain = buildTestTokenChain(ring, 4, 5)
    ctx = { tokenId: chain.tokenId, verifier: ring.verifier, tokenContent: chain.tokenContent }
  })

  describe('a valid chain', () => {
    it('validates genesis + 4 transfers from envelopes', async () => {
      const r = await validateChain(chain.envelopes, ctx)
      expect(r.length).to.equal(5)
      expect(r.kind).to.equal('test-rbt')
      expect(r.tokenType).to.equal(3)
      expect(r.genesisOwner).to.equal(chain.owners[0])
      expect(r.tip.owner).to.equal(chain.owners[4])
      expect(r.tip.blockNumber).to.equal(4)
      expect(r.tip.blockId).to.equal(`4-${chain.blocks[4]!.hash}`)
      expect(r.tip.value).to.equal(1)
      expect(r.blockIds).to.deep.equal(chain.blocks.map((b, i) => `${i}-${b.hash}`))
      // genesis: owner + RAC signature; each transfer: 5 block + 5 credit + 1 initiator signatures
      expect(r.signaturesVerified).to.equal(2 + 4 * 11)
    })
    it('accepts Block objects as well as bytes', async () => {
      const r = await validateChain(chain.blocks, ctx)
      expect(r.length).to.equal(5)
    })
    it('memoises verified blocks: a second pass verifies no block signature again', async () => {
      const cache = new Set<string>()
      const first = await validateChain(chain.envelopes, { ...ctx, cache })
      expect(first.cacheHits).to.equal(0)
      const before = ring.verifyCalls
      const second = await validateChain(chain.envelopes, { ...ctx, cache })
      expect(second.cacheHits).to.equal(5)
      expect(ring.verifyCalls - before).to.equal(1) // only the token-content RAC signature
      expect(cache.size).to.equal(5)
    })
    it('a cache does not excuse a tampered block (the key is the envelope hash)', async () => {
      const cache = new Set<string>()
      await validateChain(chain.envelopes, { ...ctx, cache })
      const env = chain.envelopes.map(e => e.slice())
      tamperSignature(env, 3)
      await expectInvalid(validateChain(env, { ...ctx, cache }), 3, 'signature')
    })
  })

  describe('verifyEnvelope: one block outside a chain', () => {
    it('checks what a chain validation checks of the block, and a chain validation then finds it in the memo', async () => {
      const cache = new Set<string>()
      const before = ring.verifyCalls
      expect(await verifyEnvelope(chain.envelopes[3]!, { verifier: ring.verifier, cache })).to.equal(11)
      expect(ring.verifyCalls - before).to.equal(11)
      expect(await verifyEnvelope(chain.envelopes[3]!, { verifier: ring.verifier, cache })).to.equal(0)
      const r = await validateChain(chain.envelopes, { ...ctx, cache })
      expect(r.cacheHits).to.equal(1)
      expect(r.signaturesVerified).to.equal(2 + 3 * 11)
    })
    it('refuses a tampered signature with CHAIN_INVALID naming the block, and remembers nothing', async () => {
      const cache = new Set<string>()
      const env = chain.envelopes.map(e => e.slice())
      tamperSignature(env, 2)
      await expectInvalid(verifyEnvelope(env[2]!, { verifier: ring.verifier, cache, tokenId: chain.tokenId }), 2, 'signature')
      expect(cache.size).to.equal(0)
    })
  })

  describe('rejects', () => {
    it('an empty chain', async () => {
      try { await validateChain([], ctx); expect.fail('should throw') } catch (e) { expect(isRbtError(e, 'CHAIN_INVALID')).to.equal(true) }
    })
    it('a changed byte in a block\'s content (signatures no longer match its hash)', async () => {
      const env = chain.envelopes.map(e => e.slice())
      const b = env[2]!
      // the comment, found with its CBOR key and length (key "3", the text "test"): a bare 'test'
      // also turns up inside a random DID now and then, and changing that fails the owner check first
      const field = Buffer.concat([Buffer.from([0x61]), Buffer.from('3'), Buffer.from([0x64]), Buffer.from('test')])
      const at = Buffer.from(b).indexOf(field)
      expect(at).to.be.at.least(0)
      b[at + field.length - 1] = 'u'.charCodeAt(0)
      await expectInvalid(validateChain(env, ctx), 2, 'signature', /does not verify/)
    })
    it('a changed byte in a signature', async () => {
      const env = chain.envelopes.map(e => e.slice())
      tamperSignature(env, 4)
      await expectInvalid(validateChain(env, ctx), 4, 'signature')
    })
    it('a byte change that breaks the encoding', async () => {
      const env = chain.envelopes.map(e => e.slice())
      env[1] = env[1]!.subarray(0, env[1]!.length - 3)
      await expectInvalid(validateChain(env, ctx), 1, 'decode')
    })
    it('a block whose stated hash is not its content hash', async () => {
      const blocks: Block[] = [...chain.blocks]
      blocks[1] = { ...blocks[1]!, hash: 'ab'.repeat(32) }
      await expectInvalid(validateChain(blocks, ctx), 1, 'hash')
    })
    it('a missing block', async () => {
      const env = [...chain.envelopes]
      env.splice(2, 1)
      await expectInvalid(validateChain(env, ctx), 2, 'block-number', /numbered "3", expected "2"/)
    })
    it('reordered blocks', async () => {
      const env = [...chain.envelopes]
      ;[env[2], env[3]] = [env[3]!, env[2]!]
      await expectInvalid(validateChain(env, ctx), 2, 'block-number')
    })
    it('a block that links to a different previous block', async () => {
      // a second, equally valid transfer from the same owner: a fork at block 2
      const sibling = transferBlock(ring, chain.tokenId, chain.blocks[0]!, chain.owners[0]!, chain.owners[1]!, chain.quorums, 1_800_000_000)
      const forged = transferBlock(ring, chain.tokenId, sibling, chain.owners[1]!, chain.owners[2]!, chain.quorums)
      const env = [chain.envelopes[0]!, chain.envelopes[1]!, encodeBlockEnvelope(forged)]
      await expectInvalid(validateChain(env, ctx), 2, 'previous-block')
    })
    it('a transfer by someone who is not the owner', async () => {
      const thief = ring.newDid()
      const forged = transferBlock(ring, chain.tokenId, chain.blocks[1]!, thief, thief, chain.quorums)
      await expectInvalid(validateChain([chain.envelopes[0]!, chain.envelopes[1]!, encodeBlockEnvelope(forged)], ctx), 2, 'owner', /is not the owner/)
    })
    it('a genesis signed with the wrong key', async () => {
      const g = chain.blocks[0]!
      const intruder = ring.newDid()
      const forged = setSignature(g, chain.owners[0]!, ring.sign(intruder, g.hash))
      await expectInvalid(validateChain([encodeBlockEnvelope(forged), ...chain.envelopes.slice(1)], ctx), 0, 'signature', /block signature by .* does not verify/)
    })
    it('a quorum block signature made with the owner key instead of the quorum key', async () => {
      const q = chain.quorums[2]!
      const b = chain.blocks[1]!
      const forged = setSignature(b, q, ring.sign(q, b.hash, 'owner'))
      await expectInvalid(validateChain([chain.envelopes[0]!, encodeBlockEnvelope(forged)], ctx), 1, 'signature')
    })
    it('too few quorum signatures, unless the context lowers the minimum', async () => {
      const small = buildTestTokenChain(ring, 1, 3)
      const sctx = { tokenId: small.tokenId, verifier: ring.verifier }
      await expectInvalid(validateChain(small.envelopes, sctx), 1, 'signature', /at least 5 required/)
      const r = await validateChain(small.envelopes, { ...sctx, minQuorumSignatures: 3 })
      expect(r.length).to.equal(2)
    })
    it('a pledging quorum whose block signature is missing', async () => {
      const b = chain.blocks[1]!
      const sigs = { ...b.signatures }
      delete sigs[chain.quorums[0]!]
      const forged = { ...b, signatures: sigs }
      await expectInvalid(validateChain([chain.envelopes[0]!, encodeBlockEnvelope(forged)], { ...ctx, minQuorumSignatures: 4 }), 1, 'signature', /pledging quorum .* did not sign/)
    })
    it('NLSS credit signatures when no NLSS verifier is configured', async () => {
      const b = chain.blocks[1]!
      const content = { ...b.content, quorumSignatures: b.content.quorumSignatures!.map((c, i) => i === 0 ? { ...c, signType: '1', signature: 'ab'.repeat(32) } : c) }
      let nb = createBlock(content)
      for (const q of chain.quorums) nb = setSignature(nb, q, ring.sign(q, nb.hash, 'quorum'))
      await expectInvalid(validateChain([chain.envelopes[0]!, encodeBlockEnvelope(nb)], ctx), 1, 'signature', /no NLSS verifier/)
    })
    it('a TID that is not the hash of the embedded contract', async () => {
      const b = chain.blocks[1]!
      let nb = createBlock({ ...b.content, transInfo: { ...b.content.transInfo, tid: 'cd'.repeat(32) } })
      for (const q of chain.quorums) nb = setSignature(nb, q, ring.sign(q, nb.hash, 'quorum'))
      await expectInvalid(validateChain([chain.envelopes[0]!, encodeBlockEnvelope(nb)], ctx), 1, 'contract', /not the hash of the embedded contract/)
    })
    it('a block after a burn', async () => {
      const owner = chain.owners[1]!
      let burn = createBlock(burntBlock(chain.blocks[1]!, chain.tokenId, owner, 1, ['QmChildA', 'QmChildB']))
      burn = setSignature(burn, owner, ring.sign(owner, burn.hash))
      const ok = await validateChain([chain.envelopes[0]!, chain.envelopes[1]!, encodeBlockEnvelope(burn)], ctx)
      expect(ok.tip.burnt).to.equal(true)
      const after = transferBlock(ring, chain.tokenId, burn, owner, chain.owners[2]!, chain.quorums)
      await expectInvalid(validateChain([chain.envelopes[0]!, chain.envelopes[1]!, encodeBlockEnvelope(burn), encodeBlockEnvelope(after)], ctx), 3, 'transaction', /burnt/)
    })
    it('a burn by someone other than the owner', async () => {
      const other = chain.owners[3]!
      let burn = createBlock(burntBlock(chain.blocks[1]!, chain.tokenId, other, 1, []))
      burn = setSignature(burn, other, ring.sign(other, burn.hash))
      await expectInvalid(validateChain([chain.envelopes[0]!, chain.envelopes[1]!, encodeBlockEnvelope(burn)], ctx), 2, 'owner', /owner changed/)
    })
  })

  describe('a cheating owner', () => {
    /** An owner-only "11" (contract committed) block on `previous`, signed by `owner` alone. */
    const ownerOnly = (previous: Block, owner: string): Block => {
      const b = createBlock({ transactionType: TransactionType.CONTRACT_COMMITTED, owner, transInfo: { tokens: { [chain.tokenId]: nextTokenEntry(previous, chain.tokenId) } }, childTokens: [] })
      return setSignature(b, owner, ring.sign(owner, b.hash))
    }
    it('a credit signer that did not sign the block (it would rank among the signers, the designated checker among them)', async () => {
      const b = chain.blocks[1]!
      const extra = ring.newDid()
      const tid = b.content.transInfo.tid!
      const credits = [...b.content.quorumSignatures!, { did: extra, hash: '', signType: '0', signature: '', privSignature: ring.sign(extra, tid, 'quorum') }]
      let nb = createBlock({ ...b.content, quorumSignatures: credits })
      for (const q of chain.quorums) nb = setSignature(nb, q, ring.sign(q, nb.hash, 'quorum'))
      await expectInvalid(validateChain([chain.envelopes[0]!, encodeBlockEnvelope(nb)], ctx), 1, 'signature', /gave a credit signature but did not sign the block/)
    })
    it('an owner-only block forks nothing: two spends of one state, one through an owner-only block, spend the same anchor', async () => {
      const owner = chain.owners[1]!
      const base = [chain.envelopes[0]!, chain.envelopes[1]!]
      const toBob = transferBlock(ring, chain.tokenId, chain.blocks[1]!, owner, chain.owners[2]!, chain.quorums)
      const eleven = ownerOnly(chain.blocks[1]!, owner)
      const toCarol = transferBlock(ring, chain.tokenId, eleven, owner, chain.owners[3]!, chain.quorums)
      // both chains are valid (main-net chains hold such blocks) ...
      const before = await validateChain([...base], ctx)
      const a = await validateChain([...base, encodeBlockEnvelope(toBob)], ctx)
      const withEleven = await validateChain([...base, encodeBlockEnvelope(eleven)], ctx)
      const c = await validateChain([...base, encodeBlockEnvelope(eleven), encodeBlockEnvelope(toCarol)], ctx)
      expect(a.tip.owner).to.equal(chain.owners[2])
      expect(c.tip.owner).to.equal(chain.owners[3])
      // ... but the state each spend spends is the same: the last quorum-signed one
      expect(before.tip.anchorBlockId).to.equal(before.tip.blockId)
      expect(withEleven.tip.blockId).to.not.equal(before.tip.blockId)
      expect(withEleven.tip.anchorBlockId).to.equal(before.tip.blockId)
      expect(spendAnchor([...base, encodeBlockEnvelope(eleven)])).to.equal(before.tip.blockId)
      expect(spendAnchor([...base])).to.equal(before.tip.blockId)
      // an extension from the owner-only tip keeps what it knows of the anchor
      const ext = await validateExtension(withEleven.tip, [], ctx)
      expect(ext.tip.anchorBlockId).to.equal(before.tip.blockId)
    })
    it('an owner-only block on a chain the reference never writes one on (an FT)', async () => {
      const creator = ring.newDid()
      const id = ftTokenId('gold', 0, creator)
      let g = createBlock(ftGenesis({ ftId: id, creator, index: 0, parentIds: ['QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH'], value: 0.2, comment: ftGenesisComment('2025-01-01 00:00:00 +0000 UTC', 'gold') }))
      g = setSignature(g, creator, ring.sign(creator, g.hash))
      let b = createBlock({ transactionType: TransactionType.PLEDGED, owner: creator, transInfo: { tokens: { [id]: nextTokenEntry(g, id) } }, childTokens: [] })
      b = setSignature(b, creator, ring.sign(creator, b.hash, 'quorum'))
      await validateChain([encodeBlockEnvelope(g)], { tokenId: id, verifier: ring.verifier })
      await expectInvalid(validateChain([encodeBlockEnvelope(g), encodeBlockEnvelope(b)], { tokenId: id, verifier: ring.verifier }), 1, 'transaction', /owner-only "04" block on a ft chain/)
    })
  })

  describe('forged genesis', () => {
    it('a self-signed genesis that claims someone else\'s test token', async () => {
      const thief = ring.newDid()
      let g = createBlock(testTokenGenesis({ tokenId: chain.tokenId, owner: thief, comment: 'test token' }))
      g = setSignature(g, thief, ring.sign(thief, g.hash))
      await expectInvalid(validateChain([encodeBlockEnvelope(g)], ctx), 0, 'genesis', /token content names/)
      await expectInvalid(validateChain([encodeBlockEnvelope(g)], { tokenId: chain.tokenId, verifier: ring.verifier, requireTokenContent: true }), 0, 'genesis', /content is needed/)
    })
    it('token content that does not hash to the token ID', async () => {
      await expectInvalid(validateChain(chain.envelopes, { ...ctx, tokenContent: chain.tokenContent.slice(0, -2) + '00' }), 0, 'genesis', /does not hash to the token ID/)
    })
    it('a genesis for another token', async () => {
      await expectInvalid(validateChain(chain.envelopes, { ...ctx, tokenId: 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH' }), 0, 'token-entry')
    })
    it('a test token genesis with a value other than 1', async () => {
      const owner = chain.owners[0]!
      let g = createBlock({ ...testTokenGenesis({ tokenId: chain.tokenId, owner, comment: 'test token' }), tokenValue: 2 })
      g = setSignature(g, owner, ring.sign(owner, g.hash))
      await expectInvalid(validateChain([encodeBlockEnvelope(g)], ctx), 0, 'genesis', /worth 1.0/)
    })
    it('a transfer block in genesis position', async () => {
      await expectInvalid(validateChain(chain.envelopes.slice(1), ctx), 0, 'block-number')
      const b = chain.blocks[1]!
      const raw = decodeCbor(b.contentBytes) as CborObject
      ;((raw['5'] as CborObject)['6'] as CborObject)[chain.tokenId] = { 1: 3, 4: '0', 5: '' }
      const env = encodeCbor({ 1: encodeCbor(raw) })
      await expectInvalid(validateChain([env], ctx), 0, 'genesis', /cannot start a chain/)
    })
    describe('FT genesis (ID derived from name, index and creator)', () => {
      const make = (creator: string, idCreator: string, index: number): { id: string, env: Uint8Array } => {
        const id = ftTokenId('gold', index, idCreator)
        let g = createBlock(ftGenesis({ ftId: id, creator, index, parentIds: ['QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH'], value: 0.2, comment: ftGenesisComment('2025-01-01 00:00:00 +0000 UTC', 'gold') }))
        g = setSignature(g, creator, ring.sign(creator, g.hash))
        return { id, env: encodeBlockEnvelope(g) }
      }
      it('accepts a genuine FT genesis', async () => {
        const creator = ring.newDid()
        const { id, env } = make(creator, creator, 3)
        const r = await validateChain([env], { tokenId: id, verifier: ring.verifier })
        expect(r.kind).to.equal('ft')
        expect(r.tip.value).to.equal(0.2)
      })
      it('rejects a genesis whose creator did not create that FT ID', async () => {
        const creator = ring.newDid()
        const thief = ring.newDid()
        const { id, env } = make(thief, creator, 3)
        await expectInvalid(validateChain([env], { tokenId: id, verifier: ring.verifier }), 0, 'genesis', /has ID/)
      })
      it('rejects a mismatching FT name given by the caller', async () => {
        const creator = ring.newDid()
        const { id, env } = make(creator, creator, 0)
        await expectInvalid(validateChain([env], { tokenId: id, verifier: ring.verifier, ftName: 'silver' }), 0, 'genesis')
      })
      it('rejects a kind other than the expected one', async () => {
        const creator = ring.newDid()
        const { id, env } = make(creator, creator, 0)
        await expectInvalid(validateChain([env], { tokenId: id, verifier: ring.verifier, expectedKind: 'test-rbt' }), 0, 'genesis', /expected test-rbt/)
      })
    })
  })

  describe('validateExtension', () => {
    it('extends from a ChainTip with only the new blocks checked', async () => {
      const head = await validateChain(chain.envelopes.slice(0, 3), ctx)
      const before = ring.verifyCalls
      const ext = await validateExtension(head.tip, chain.envelopes.slice(3), ctx)
      expect(ext.length).to.equal(2)
      expect(ext.tip.owner).to.equal(chain.owners[4])
      expect(ext.tip.blockNumber).to.equal(4)
      expect(ext.blockIds[0]).to.equal(`3-${chain.blocks[3]!.hash}`)
      expect(ring.verifyCalls - before).to.equal(22)
      expect(ext.ownerLinkChecked).to.equal(true)
    })
    it('extends from a bare block ID; owner link checked only when the tip owner is given', async () => {
      const tipId = `2-${chain.blocks[2]!.hash}`
      const bare = await validateExtension(tipId, chain.envelopes.slice(3), ctx)
      expect(bare.ownerLinkChecked).to.equal(false)
      const withOwner = await validateExtension(tipId, chain.envelopes.slice(3), { ...ctx, tipOwner: chain.owners[2] })
      expect(withOwner.ownerLinkChecked).to.equal(true)
      await expectInvalid(validateExtension(tipId, chain.envelopes.slice(3), { ...ctx, tipOwner: chain.owners[0] }), 3, 'owner')
    })
    it('rejects blocks that do not follow the tip', async () => {
      const head = await validateChain(chain.envelopes.slice(0, 2), ctx)
      await expectInvalid(validateExtension(head.tip, chain.envelopes.slice(3), ctx), 2, 'block-number')
      const wrongTip = `2-${'00'.repeat(32)}`
      await expectInvalid(validateExtension(wrongTip, chain.envelopes.slice(3), ctx), 3, 'previous-block')
    })
    it('refuses a malformed tip ID and a tip of another token', async () => {
      try { await validateExtension('x', [], ctx); expect.fail('should throw') } catch (e) { expect(isRbtError(e, 'INVALID_INPUT')).to.equal(true) }
      const head = await validateChain(chain.envelopes.slice(0, 1), ctx)
      try { await validateExtension({ ...head.tip, tokenId: 'QmOther' }, [], ctx); expect.fail('should throw') } catch (e) { expect(isRbtError(e, 'INVALID_INPUT')).to.equal(true) }
    })
  })
})

/** Flips a hex digit inside the first signature of block `i`'s signature map. */
function tamperSignature (env: Uint8Array[], i: number): void {
  env[i] = tamperedEnvelope(env[i]!)
}
