import { expect } from 'chai'
import { createHash } from 'node:crypto'
import {
  createContract, decodeContract, encodeContractContent, encodeContractEnvelope, withContractSignature, type ContractContent
} from '../../../src/tokenchain/contract.js'
import { C1_CONTRACT_HASH, C1_CONTRACT_HEX, C1_SENDER_SIG, C1_TID, C2_CONTRACT_HASH, C2_CONTRACT_HEX, C2_TID } from './vectors.js'

const hex = (b: Uint8Array): string => Buffer.from(b).toString('hex')
const sha3 = (b: Uint8Array): string => createHash('sha3-256').update(b).digest('hex')

const C1_SENDER = 'bafybmiaysyb5hbdb6clsk7jncdejxwomxumv3zos5t57f6bwz7numvaina'
const C2_SENDER = 'bafybmihsas7ercw2upkuq5mpq2xrauwycxkes6pxxyj52ijfx7sgwsqr6m'
const C2_SIG = '304402202fe718ca168deb42817cce1c758625a96e0f81c8a9d38a31ea874696f5a9cfef022003319304e31a81b5bb05f240f552869c48caf457e7be2d82c0306c0f832303c1'

const c1Content: ContractContent = {
  type: 8,
  pledgeMode: 0,
  transInfo: {
    sender: C1_SENDER,
    receiver: 'bafybmifqpi36mvzocqqpsh3rtjrjy5434wlqv4nz7zr4ejqx3qul5gl36q',
    transTokens: {
      QmQ2UsVPPkMhoZdXq3XjUZHkxoCQMcU5gqE8yg231fRseV: { tokenType: 10, tokenValue: 0.2, owner: C1_SENDER, blockId: '0-dddfeea488ac5b0b0be323d7277023518f29031671f7eccb11639ff88f1f9243' }
    }
  },
  totalRbts: 0
}

const c2Content: ContractContent = {
  type: 8,
  pledgeMode: 0,
  transInfo: {
    sender: C2_SENDER,
    receiver: 'bafybmihtljjkvayu7iwjxzd4sfufywakdd3zymrgcnw7jnc3p6oltjzofe',
    transTokens: {
      QmX4DscAghtbwavd21qUm197tYSnfpw1ANBtVyhsxXxDjZ: { tokenType: 10, tokenValue: 0.1, owner: C2_SENDER, blockId: '0-4d2c27b2910d74238511efad8aa554b00e0cb700743ed7e16ccf6dddecb54a1d' },
      QmWsLjvBJm2Bosu7AvYjdQqg4qVFKjMmJ6CLKxvzED13BC: { tokenType: 10, tokenValue: 0.1, owner: C2_SENDER, blockId: '0-de63dd8b7be6644af479170abce573459836fb561dfcf20e6a0af82a1a78a6a1' }
    }
  },
  totalRbts: 0
}

describe('tokenchain/contract', () => {
  for (const [name, content, sender, sig, envHex, wantHash, wantTid] of [
    ['C1', c1Content, C1_SENDER, C1_SENDER_SIG, C1_CONTRACT_HEX, C1_CONTRACT_HASH, C1_TID],
    ['C2', c2Content, C2_SENDER, C2_SIG, C2_CONTRACT_HEX, C2_CONTRACT_HASH, C2_TID]
  ] as const) {
    describe(`vector ${name}`, () => {
      it('the published envelope hashes to the published contract hash and TID (node:crypto)', () => {
        const env = Buffer.from(envHex, 'hex')
        expect(sha3(env)).to.equal(wantTid)
      })
      it('building the contract from its fields reproduces hash, envelope bytes and TID', () => {
        const c = withContractSignature(createContract(content), sender, sig, '')
        expect(c.hash).to.equal(wantHash)
        expect(sha3(c.contentBytes)).to.equal(wantHash)
        const env = encodeContractEnvelope(c)
        expect(hex(env)).to.equal(envHex)
        expect(sha3(env)).to.equal(wantTid)
      })
      it('decoding keeps raw bytes and gives the typed view back', () => {
        const d = decodeContract(Buffer.from(envHex, 'hex'))
        expect(d.hash).to.equal(wantHash)
        expect(d.transactionId).to.equal(wantTid)
        expect(d.keySignatures).to.deep.equal({ [sender]: sig })
        expect(d.shareSignatures).to.deep.equal({ [sender]: '' })
        expect(d.content).to.deep.equal(content)
        expect(hex(encodeContractContent(d.content))).to.equal(hex(d.contentBytes))
      })
    })
  }

  it('C2 sorts the two equal-length token IDs byte-wise (QmWs… before QmX4…)', () => {
    const h = hex(encodeContractContent(c2Content))
    expect(h.indexOf(Buffer.from('QmWs').toString('hex'))).to.be.lessThan(h.indexOf(Buffer.from('QmX4').toString('hex')))
  })

  it('encodes a whole-RBT value 0.5 as a half float and leaves empty fields out', () => {
    const bytes = encodeContractContent({ type: 0, pledgeMode: 0, transInfo: { sender: 'S', comment: '', transTokens: { T: { tokenType: 0, tokenValue: 0.5 } } }, totalRbts: 0.5 })
    // {"1":0,"2":0,"3":{"1":"S","4":{"T":{"1":0,"4":0.5}}},"4":0.5}
    expect(hex(bytes)).to.equal('a4' + '613100' + '613200' + '6133' + 'a2' + '61316153' + '6134' + 'a1' + '6154' + 'a2' + '613100' + '6134f93800' + '6134f93800')
  })

  it('rejects malformed envelopes', () => {
    expect(() => decodeContract(Buffer.from('a0', 'hex'))).to.throw(/byte string "1"/)
    expect(() => decodeContract(Buffer.from('a161314100', 'hex'))).to.throw()
  })
})
