import { expect } from 'chai'
import { createHash } from 'node:crypto'
import {
  cidV0ForContent, ftTokenId, ftTokenPreimage, goIndentedJson, isCidV0, nftTokenId, smartContractDescriptor,
  smartContractTokenId, tokenStateHash, wholeTokenContent, wholeTokenId
} from '../../../src/tokenchain/token-id.js'
import { createRac, decodeRacEnvelope, encodeRacEnvelope, racFromTokenContent, racTokenContent, racTokenId } from '../../../src/tokenchain/rac.js'
import { RacType } from '../../../src/tokenchain/types.js'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { create as createDigest } from 'multiformats/hashes/digest'

describe('tokenchain/token-id', () => {
  describe('content addressing (default ipfs add → CIDv0)', () => {
    it('reproduces well-known CIDs', () => {
      expect(cidV0ForContent('')).to.equal('QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH')
      expect(cidV0ForContent('hello world\n')).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
    })
    it('a single-chunk node is dag-pb {Data: UnixFS file}; CID = multihash of its bytes', () => {
      // Hand-built node for "abc": PBNode.Data (field 1) = UnixFS {Type=File(2), Data="abc", filesize=3}
      const unixfs = Buffer.from('0802' + '1203616263' + '1803', 'hex')
      const node = Buffer.concat([Buffer.from([0x0a, unixfs.length]), unixfs])
      const digest = createHash('sha256').update(node).digest()
      const mh = Buffer.concat([Buffer.from([0x12, 0x20]), digest])
      expect(cidV0ForContent('abc')).to.equal(base58btc(mh))
    })
    it('a single chunk of any length gets the id the dag-pb and UnixFS encoders give it', () => {
      // the node is encoded by hand (the libraries cost several times more, for every token state hashed)
      for (const n of [0, 1, 2, 113, 127, 128, 129, 16_383, 16_384, 16_385, 100_000, 262_143, 262_144]) {
        const bytes = new Uint8Array(n).map((_, i) => (i * 31 + n) & 0xff)
        const data = new UnixFS({ type: 'file', data: bytes }).marshal()
        const want = CID.createV0(createDigest(0x12, createHash('sha256').update(dagPb.encode({ Data: data, Links: [] })).digest())).toString()
        expect(cidV0ForContent(bytes), `${n} bytes`).to.equal(want)
      }
    })
    it('splits content over 256 KiB into a balanced DAG', () => {
      const big = new Uint8Array(262_144 * 2 + 10).fill(7)
      const id = cidV0ForContent(big)
      expect(isCidV0(id)).to.equal(true)
      expect(id).to.not.equal(cidV0ForContent(big.subarray(0, 262_144)))
    })
    it('gives the same id for a text asked again, also once more texts were hashed than it remembers', () => {
      expect(cidV0ForContent('hello world\n')).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
      const first = Array.from({ length: 5000 }, (_, i) => cidV0ForContent(`content ${i}`))
      expect(new Set(first).size).to.equal(5000)
      for (let i = 0; i < 5000; i += 499) expect(cidV0ForContent(`content ${i}`)).to.equal(first[i])
      expect(cidV0ForContent('hello world\n')).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
      expect(cidV0ForContent(new TextEncoder().encode('hello world\n'))).to.equal('QmT78zSuBmuS4z925WZfrqQ1qHaJ56DQaTfyMUF7F8ff5o')
    })
    it('isCidV0 accepts only 46-character Qm base58 CIDs', () => {
      expect(isCidV0('QmfYNyAyGD8xHE9XgctX8WnfJ627edkM2EkAcijEutoJmH')).to.equal(true)
      expect(isCidV0('QmfYNyAyGD8xHE9XgctX8WnfJ627edkM2EkAcijEutoJm0')).to.equal(false)
      expect(isCidV0('bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina')).to.equal(false)
    })
  })

  describe('whole RBT tokens (vectors T1, T2)', () => {
    it('T1: level 3, number 1423543 → content and CID', () => {
      const want = '003' + createHash('sha256').update('1423543').digest('hex')
      expect(want).to.equal('003841d04a85612adb1ca95d86e08561eb1dcc9608899a57b59d57c565d796bb106')
      expect(wholeTokenContent(3, 1423543)).to.equal(want)
      expect(wholeTokenId(3, 1423543)).to.equal('QmfYNyAyGD8xHE9XgctX8WnfJ627edkM2EkAcijEutoJmH')
    })
    it('T2: level 3, number 1662242 → content', () => {
      expect(wholeTokenContent(3, 1662242)).to.equal('003f4a5ac9cd7498503f8ab1b5f4f62454703e3cfef47886861d776819d3be9fdbb')
    })
    it('level 1 number 0, and the legacy 2-digit level', () => {
      expect(wholeTokenId(1, 0)).to.equal('QmUeBM2pNTbyYZ4LrsCNHb3hUTpBwYgW7XHrmJucy9cKvy')
      expect(wholeTokenContent(1, 0, { legacyTwoDigitLevel: true })).to.have.length(66)
    })
    it('rejects bad levels and numbers', () => {
      expect(() => wholeTokenContent(0, 1)).to.throw(/level/)
      expect(() => wholeTokenContent(79, 1)).to.throw(/level/)
      expect(() => wholeTokenContent(1, -1)).to.throw(/non-negative/)
      expect(() => wholeTokenContent(1, 5_000_000)).to.throw(/beyond level 1/)
    })
  })

  describe('FT IDs (vectors F1–F3)', () => {
    const cases: Array<[string, number, string, string]> = [
      ['testFT-1', 0, 'bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina', 'QmQ2UsVPPkMhoZdXq3XjUZHkxoCQMcU5gqE8yg231fRseV'],
      ['test1', 8, 'bafybmifebqlvq2uetxo3mgrwugf3k4rdjupo6h6fkn7mzrb5ekhxttamnq', 'QmbYuoWwTeW1WxM1WbZ53PGCVg5GLTQoqpuZzQ2LirxBN5'],
      ['test1', 1, 'bafybmihsas7ercw2upkuq5mpq2xrauwycxkes6pxxyj52ijfx7sgwsqr6m', 'QmX4DscAghtbwavd21qUm197tYSnfpw1ANBtVyhsxXxDjZ']
    ]
    for (const [name, i, did, id] of cases) {
      it(`${name} #${i} → ${id}`, () => {
        expect(ftTokenPreimage(name, i, did)).to.equal(`${name} ${i} ${did}`)
        expect(ftTokenId(name, i, did)).to.equal(id)
      })
    }
    it('rejects an empty name or a negative index', () => {
      expect(() => ftTokenId('', 0, 'x')).to.throw(/empty/)
      expect(() => ftTokenId('a', -1, 'x')).to.throw(/index/)
    })
  })

  describe('NFT and smart-contract IDs (Go indented JSON)', () => {
    it('writes Go MarshalIndent text with 2-space indent and HTML escapes', () => {
      expect(goIndentedJson([['DID', 'd'], ['ArtifactHash', 'a<b']])).to.equal('{\n  "DID": "d",\n  "ArtifactHash": "a\\u003cb"\n}')
    })
    it('NFT ID = CIDv0 of {"DID","ArtifactHash"}', () => {
      const text = '{\n  "DID": "bafyX",\n  "ArtifactHash": "QmY"\n}'
      expect(nftTokenId('bafyX', 'QmY')).to.equal(cidV0ForContent(text))
    })
    it('SC ID = CIDv0 of the four-field descriptor in field order', () => {
      const s = { binaryCodeHash: 'Qm1', rawCodeHash: 'Qm2', schemaCodeHash: 'QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH', did: 'bafyD' }
      expect(smartContractDescriptor(s)).to.equal('{\n  "binaryCodeHash": "Qm1",\n  "rawCodeHash": "Qm2",\n  "schemaCodeHash": "QmbFMke1KXqnYyBBWxB74N4c5SBnJMVAiMNRcGu6x1AwQH",\n  "did": "bafyD"\n}')
      expect(smartContractTokenId(s)).to.equal(cidV0ForContent(smartContractDescriptor(s)))
    })
  })

  describe('RAC-backed tokens (test RBT, parts)', () => {
    it('encodes the RAC content canonically and the envelope with a text signature', () => {
      const rac = createRac({ type: RacType.TEST_TOKEN, version: 1, did: 'D', tokenNumber: 0, totalSupply: 1, timestamp: 'T' })
      // {"1":0,"2":1,"3":"D","4":0,"5":1,"6":"T"}
      const want = 'a6' + '613100' + '613201' + '61336144' + '613400' + '613501' + '61366154'
      expect(Buffer.from(rac.contentBytes).toString('hex')).to.equal(want)
      expect(rac.hash).to.equal(createHash('sha3-256').update(Buffer.from(want, 'hex')).digest('hex'))
      rac.signature = 'abcd'
      const env = encodeRacEnvelope(rac)
      expect(Buffer.from(env).toString('hex')).to.equal('a2' + '6131' + '55' + want + '6132' + '6461626364')
      const content = racTokenContent(env)
      expect(content).to.equal(Buffer.from(env).toString('hex'))
      expect(racTokenId(env)).to.equal(cidV0ForContent(content))
      const back = racFromTokenContent(content)
      expect(back.content).to.deep.equal(rac.content)
      expect(back.signature).to.equal('abcd')
    })
    it('part info carries parent, number and a float value', () => {
      const rac = createRac({ type: RacType.TEST_PART_TOKEN, version: 1, did: 'D', tokenNumber: 0, totalSupply: 1, partInfo: { parentId: 'P', partNumber: 1, value: 0.5 } })
      expect(Buffer.from(rac.contentBytes).toString('hex')).to.contain('623133' + 'a3' + '61316150' + '613201' + '6133f93800')
      expect(decodeRacEnvelope(encodeRacEnvelope(rac)).content.partInfo).to.deep.equal({ parentId: 'P', partNumber: 1, value: 0.5 })
    })
  })

  it('token state hash = CIDv0 of tokenID ‖ blockID', () => {
    expect(tokenStateHash('QmA', '0-ff')).to.equal(cidV0ForContent('QmA0-ff'))
  })
})

const ALPHABET = '123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz'
function base58btc (bytes: Uint8Array): string {
  let n = BigInt('0x' + Buffer.from(bytes).toString('hex'))
  let out = ''
  while (n > 0n) { out = ALPHABET[Number(n % 58n)]! + out; n /= 58n }
  for (const b of bytes) { if (b !== 0) break; out = '1' + out }
  return out
}
