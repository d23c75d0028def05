import { expect } from 'chai'
import { createHash } from 'node:crypto'
import {
  addSignature, blockIdFor, createBlock, decodeBlockEnvelope, encodeBlockContent, encodeBlockEnvelope, formatBlockId,
  ftGenesis, ftGenesisComment, isBlockId, nextTokenEntry, parseBlockId, partTokenGenesis, peekBlockEnvelope, setSignature, testTokenGenesis
} from '../../../src/tokenchain/block.js'
import { decodeContract } from '../../../src/tokenchain/contract.js'
import { encodeCbor } from '../../../src/tokenchain/cbor.js'
import { TokenType } from '../../../src/tokenchain/types.js'
import { isRbtError } from '../../../src/util/errors.js'
import { buildTestTokenChain, KeyRing } from './fixtures.js'
import { C1_CONTRACT_HEX } from './vectors.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const sha3 = (b: Uint8Array): string => createHash('sha3-256').update(b).digest('hex')
const head = (major: number, n: number): string => n < 24 ? ((major << 5) | n).toString(16).padStart(2, '0') : n < 256 ? ((major << 5) | 24).toString(16) + n.toString(16).padStart(2, '0') : ((major << 5) | 25).toString(16) + n.toString(16).padStart(4, '0')

describe('tokenchain/block', () => {
  describe('public block hashes reproduced from the dumped fields', () => {
    it('B1: FT genesis of QmQ2Us… → dddfeea4…; its ID is the previous block in contract C1', () => {
      const content = ftGenesis({
        ftId: 'QmQ2UsVPPkMhoZdXq3XjUZHkxoCQMcU5gqE8yg231fRseV',
        creator: 'bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina',
        index: 0,
        parentIds: ['QmddtfTnv3yRsCSbJn8D5jF11H7yhymKTvWzJkPfJFxSVb'],
        value: 0.2,
        comment: ftGenesisComment('2025-01-22 11:44:48.452452437 +0530 IST m=+51997.497202936', 'testFT-1')
      })
      const block = createBlock(content)
      expect(block.hash).to.equal('dddfeea488ac5b0b0be323d7277023518f29031671f7eccb11639ff88f1f9243')
      expect(sha3(block.contentBytes)).to.equal(block.hash)
      const id = blockIdFor(block, 'QmQ2UsVPPkMhoZdXq3XjUZHkxoCQMcU5gqE8yg231fRseV')
      const c1 = decodeContract(Buffer.from(C1_CONTRACT_HEX, 'hex'))
      expect(c1.content.transInfo.transTokens!.QmQ2UsVPPkMhoZdXq3XjUZHkxoCQMcU5gqE8yg231fRseV!.blockId).to.equal(id)
    })
    it('B6: part-token genesis (PR #137 fields) → 4633bdf0…', () => {
      const block = createBlock(partTokenGenesis({
        tokenId: 'QmcXiAjAHqzerxb4UoiBBe8XTrMk91nkJrKuNuXA9xHdeW',
        owner: 'bafybmibxi7exmpvz5p6mgny6cpxdy27z6pnudfxzl57fcz5ct2g6a3mx7m',
        parentId: 'QmdeLtGrvnr2tVnQeKYD4b2Kj12aMVC3krCTrAC5N2cJDe',
        grandParentIds: ['QmUJyEoynjzmkLuGZypW8Pjqu3VGJJGwzKvAkYxjgWfiLB'],
        value: 0.25,
        tokenType: TokenType.TEST_PART,
        comment: 'Part token generated at : 2024-04-19 17:22:26.367892833 +0530 IST m=+7962.294132512'
      }))
      expect(block.hash).to.equal('4633bdf07a5e1a9fb2e1f5137fbf6b0d4b17eddf4c7c543b3ae5068ca369eb32')
    })
  })

  describe('encoding, hash and envelope (hand-written bytes)', () => {
    const content = testTokenGenesis({ tokenId: 'T', owner: 'D' })
    const want =
      'a6' +
      '6132' + '623035' +
      '6133' + '6144' +
      '6134' + 'a2' + '6131' + '623035' + '6132' + 'a1' + '6154' + 'a3' + '613100' + '613200' + '6137a0' +
      '6135' + 'a1' + '6136' + 'a1' + '6154' + 'a3' + '613103' + '6134' + '6130' + '6135' + '60' +
      '623130' + 'f93c00' +
      '623131' + '80'
    it('test-token genesis content is the expected canonical CBOR', () => {
      expect(hex(encodeBlockContent(content))).to.equal(want)
    })
    it('hash = SHA3-256(content) and the envelope wraps content and signature map as byte strings', () => {
      const block = setSignature(createBlock(content), 'D', 'ab')
      expect(block.hash).to.equal(sha3(Buffer.from(want, 'hex')))
      const sigMap = 'a1' + '6144' + '626162'
      const env = 'a2' + '6131' + head(2, want.length / 2) + want + '6132' + head(2, sigMap.length / 2) + sigMap
      expect(hex(encodeBlockEnvelope(block))).to.equal(env)
      expect(blockIdFor(block, 'T')).to.equal(`0-${block.hash}`)
    })
    it('an unsigned block has no "2" in its envelope', () => {
      expect(hex(encodeBlockEnvelope(createBlock(content)))).to.equal('a1' + '6131' + head(2, want.length / 2) + want)
    })
    it('leaves out "98"/"99", empty optional fields, and a zero value or epoch', () => {
      const c = { ...content, tokenValue: 0, epoch: 0, smartContractData: '', nftData: '' }
      const bytes = hex(encodeBlockContent(c))
      expect(bytes).to.not.contain('623130f9') // no "10"
      expect(bytes).to.not.contain(Buffer.from('epoch').toString('hex'))
      const withEpoch = hex(encodeBlockContent({ ...content, epoch: 1_700_000_000 }))
      expect(withEpoch.endsWith('6565706f63681a6553f100')).to.equal(true) // "epoch" sorts last
    })
    it('refuses a block without tokens', () => {
      expect(() => createBlock({ ...content, transInfo: { tokens: {} } })).to.throw(/at least one token/)
    })
  })

  describe('signatures', () => {
    const b = createBlock(testTokenGenesis({ tokenId: 'T', owner: 'D' }))
    it('add and replace keep the content and hash', () => {
      const s1 = addSignature(b, 'Q1', 'aa')
      const s2 = setSignature(s1, 'Q1', 'bb')
      expect(s2.signatures).to.deep.equal({ Q1: 'bb' })
      expect(s2.hash).to.equal(b.hash)
      expect(hex(s2.contentBytes)).to.equal(hex(b.contentBytes))
      expect(b.signatures).to.deep.equal({}) // immutable
    })
    it('addSignature refuses to overwrite a different signature', () => {
      const s1 = addSignature(b, 'Q1', 'aa')
      expect(addSignature(s1, 'Q1', 'aa').signatures).to.deep.equal({ Q1: 'aa' })
      try { addSignature(s1, 'Q1', 'bb'); expect.fail('should throw') } catch (e) { expect(isRbtError(e, 'CONFLICT')).to.equal(true) }
    })
  })

  describe('decoding', () => {
    const ring = new KeyRing()
    const chain = buildTestTokenChain(ring, 2, 5)
    it('peeking at an envelope gives the hash and signers a full decode gives, without decoding the content', () => {
      for (const env of chain.envelopes) {
        // a copy, so that the decode memo of the bytes below does not answer
        const peeked = peekBlockEnvelope(env.slice())
        const d = decodeBlockEnvelope(env)
        expect(peeked.hash).to.equal(d.hash)
        expect(peeked.signers).to.deep.equal(Object.keys(d.signatures))
      }
      expect(() => peekBlockEnvelope(new Uint8Array([1, 2, 3]))).to.throw()
    })

    it('keeps raw bytes; typed content re-encodes to the same bytes', () => {
      for (const env of chain.envelopes) {
        const d = decodeBlockEnvelope(env)
        expect(hex(d.envelopeBytes)).to.equal(hex(env))
        expect(d.canonical).to.equal(true)
        expect(d.hash).to.equal(sha3(d.contentBytes))
        expect(hex(encodeBlockContent(d.content))).to.equal(hex(d.contentBytes))
        expect(hex(encodeBlockEnvelope(d))).to.equal(hex(env))
      }
      const transfer = decodeBlockEnvelope(chain.envelopes[1]!)
      expect(transfer.content.quorumSignatures).to.have.length(5)
      expect(Object.keys(transfer.signatures)).to.have.length(5)
      expect(transfer.content.initiatorSignature!.initiatorDid).to.equal(chain.owners[0])
    })
    it('a decoded block keeps its own bytes: changing the envelope array afterwards changes nothing', () => {
      const env = chain.envelopes[1]!.slice()
      const d = decodeBlockEnvelope(env)
      const [content, envelope] = [hex(d.contentBytes), hex(d.envelopeBytes)]
      env.fill(0)
      expect(hex(d.contentBytes)).to.equal(content)
      expect(hex(d.envelopeBytes)).to.equal(envelope)
      expect(sha3(d.contentBytes)).to.equal(d.hash)
    })
    it('rejects envelopes with unexpected keys, "98" in content, or a wrong shape', () => {
      const content = encodeBlockContent(testTokenGenesis({ tokenId: 'T', owner: 'D' }))
      expect(() => decodeBlockEnvelope(encodeCbor({ 1: content, 3: 1 }))).to.throw(/unexpected envelope key/)
      expect(() => decodeBlockEnvelope(encodeCbor({ 1: encodeCbor({ 2: '05', 3: 'D', 98: 'x' }) }))).to.throw(/98/)
      expect(() => decodeBlockEnvelope(encodeCbor({ 1: 'text' }))).to.throw(/byte string/)
      expect(() => decodeBlockEnvelope(encodeCbor({ 1: content, 2: encodeCbor({ D: 5 }) }))).to.throw(/must be text/)
    })
    it('flags non-canonical content', () => {
      const content = Buffer.from(hex(encodeBlockContent(testTokenGenesis({ tokenId: 'T', owner: 'D' }))).replace('f93c00', 'fb3ff0000000000000'), 'hex')
      const d = decodeBlockEnvelope(encodeCbor({ 1: new Uint8Array(content) }))
      expect(d.canonical).to.equal(false)
    })
    it('accepts quorum credits stored as JSON strings (old blocks)', () => {
      const c = { ...testTokenGenesis({ tokenId: 'T', owner: 'D' }) }
      const raw = { 2: '02', 3: 'D', 5: { 6: { T: { 1: 3, 4: '1', 5: 'x' } } }, 7: ['{"did":"Q","hash":"","sign_type":"0","signature":"","priv_signature":"ab"}'], 11: [] }
      const d = decodeBlockEnvelope(encodeCbor({ 1: encodeCbor(raw) }))
      expect(d.content.quorumSignatures).to.deep.equal([{ did: 'Q', hash: '', signType: '0', signature: '', privSignature: 'ab' }])
      expect(c.owner).to.equal('D')
    })
  })

  describe('block IDs', () => {
    it('format, parse, validate', () => {
      const h = 'ab'.repeat(32)
      expect(formatBlockId(12, h)).to.equal(`12-${h}`)
      expect(parseBlockId(`12-${h}`)).to.deep.equal({ number: 12, hash: h })
      expect(isBlockId(`01-${h}`)).to.equal(false)
      expect(isBlockId(`1-${h.toUpperCase()}`)).to.equal(false)
      expect(() => parseBlockId('1-abc')).to.throw(/not a block ID/)
    })
    it('nextTokenEntry numbers and links', () => {
      const g = createBlock(testTokenGenesis({ tokenId: 'T', owner: 'D' }))
      expect(nextTokenEntry(g, 'T')).to.deep.equal({ tokenType: 3, blockNumber: '1', previousBlockId: `0-${g.hash}` })
      expect(() => nextTokenEntry(g, 'U')).to.throw(/does not carry/)
    })
  })
})
