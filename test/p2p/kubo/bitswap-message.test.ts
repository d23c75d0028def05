import { expect } from 'chai'
import { CID } from 'multiformats/cid'
import { RbtError } from '../../../src/util/errors.js'
import {
  PRESENCE_DONT_HAVE, PRESENCE_HAVE, WANT_BLOCK, WANT_HAVE, cidPrefix, decodeMessage, emptyMessage, encodeMessage, parseCidPrefix
} from '../../../src/p2p/kubo/bitswap-message.js'

const V0 = CID.parse('QmVUbzigHKQR2y8wSt2KwZp92AC9Utfms5nEUHwttK4Yq9')
const DID = CID.parse('bafybmigvbt6mbkqcvdu6rxy5vxlf4v6xnhnq7dpjbuhtw6y3ioy3c7xziy')

describe('p2p/kubo/bitswap-message: the bitswap protobuf', () => {
  it('a message with every field comes back as it went', () => {
    const m = emptyMessage()
    m.wantlist.full = true
    m.wantlist.entries.push({ cid: V0, priority: 2147483647, cancel: false, wantType: WANT_HAVE, sendDontHave: true })
    m.wantlist.entries.push({ cid: DID, priority: 1, cancel: true, wantType: WANT_BLOCK, sendDontHave: false })
    m.blocks.push(Uint8Array.of(1, 2, 3))
    m.payload.push({ prefix: cidPrefix(DID), data: new Uint8Array(70_000).fill(7) })
    m.blockPresences.push({ cid: V0, type: PRESENCE_DONT_HAVE }, { cid: DID, type: PRESENCE_HAVE })
    m.pendingBytes = 12345
    const back = decodeMessage(encodeMessage(m))
    expect(back.wantlist.full).to.equal(true)
    expect(back.wantlist.entries.map((e) => ({ ...e, cid: e.cid.toString() }))).to.deep.equal(m.wantlist.entries.map((e) => ({ ...e, cid: e.cid.toString() })))
    expect(back.blocks.map((b) => [...b])).to.deep.equal([[1, 2, 3]])
    expect(Buffer.from(back.payload[0].prefix).equals(Buffer.from(cidPrefix(DID)))).to.equal(true)
    expect(back.payload[0].data.length).to.equal(70_000)
    expect(back.blockPresences.map((p) => [p.cid.toString(), p.type])).to.deep.equal([[V0.toString(), PRESENCE_DONT_HAVE], [DID.toString(), PRESENCE_HAVE]])
    expect(back.pendingBytes).to.equal(12345)
  })

  it('encodes a want-block entry as boxo does (default fields left out)', () => {
    const m = emptyMessage()
    m.wantlist.entries.push({ cid: V0, priority: 1, cancel: false, wantType: WANT_BLOCK, sendDontHave: false })
    const bytes = Buffer.from(encodeMessage(m))
    // Message.wantlist(1) { entries(1) { block(1) = 34 CID bytes, priority(2) = 1 } }
    const entry = Buffer.concat([Buffer.from([0x0a, 34]), Buffer.from(V0.bytes), Buffer.from([0x10, 0x01])])
    expect(bytes.toString('hex')).to.equal(Buffer.concat([Buffer.from([0x0a, entry.length + 2, 0x0a, entry.length]), entry]).toString('hex'))
  })

  it('reads a negative int32 priority and skips unknown fields', () => {
    const m = emptyMessage()
    m.wantlist.entries.push({ cid: V0, priority: -5, cancel: false, wantType: WANT_BLOCK, sendDontHave: false })
    const withUnknown = Buffer.concat([Buffer.from(encodeMessage(m)), Buffer.from([0x78, 0x05, 0x82, 0x01, 0x02, 0xaa, 0xbb])])
    expect(decodeMessage(withUnknown).wantlist.entries[0].priority).to.equal(-5)
  })

  it('gives the CID prefix of CIDv0 and CIDv1 as Go does', () => {
    expect([...cidPrefix(V0)]).to.deep.equal([0, 0x70, 0x12, 0x20])
    expect([...cidPrefix(DID)]).to.deep.equal([1, 0x70, 0x16, 0x20])
    expect(parseCidPrefix(cidPrefix(DID))).to.deep.equal({ version: 1, codec: 0x70, hashCode: 0x16, digestLength: 32 })
  })

  it('a truncated message is a PROTOCOL error', () => {
    const m = emptyMessage()
    m.payload.push({ prefix: cidPrefix(V0), data: new Uint8Array(100) })
    const bytes = encodeMessage(m)
    expect(() => decodeMessage(bytes.subarray(0, bytes.length - 10))).to.throw(RbtError).with.property('code', 'PROTOCOL')
  })
})
