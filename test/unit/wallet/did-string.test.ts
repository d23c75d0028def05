import { expect } from 'chai'
import { didFromPublicFiles, didLastChar, isValidDid, fileRoot, directoryBlock } from '../../../src/wallet/did-string.js'
import { base32, cidV1, goPem, hex, lenField, varintField } from './helpers.js'

const EMPTY_DIR_DID = 'bafybmialzx2tmwtnybodeampc4xrreu3qx72tmt66oc3gdcghdrffyobsi'

/** Directory node by hand: links (field 2) sorted by name, then Data (field 1) = 08 01. */
function handDirectory (entries: Array<{ name: string, cid: Uint8Array, tsize: number }>): Uint8Array {
  const sorted = [...entries].sort((a, b) => Buffer.compare(Buffer.from(a.name), Buffer.from(b.name)))
  const bytes: number[] = []
  for (const e of sorted) {
    const link = [...lenField(1, e.cid), ...lenField(2, [...Buffer.from(e.name)]), ...varintField(3, e.tsize)]
    bytes.push(...lenField(2, link))
  }
  bytes.push(...lenField(1, [0x08, 0x01]))
  return Uint8Array.from(bytes)
}

const didOfDir = (block: Uint8Array): string => 'b' + base32(cidV1(0x70, block))

describe('wallet/did-string', () => {
  it('empty directory gives the known DID', () => {
    expect(didFromPublicFiles({})).to.equal(EMPTY_DIR_DID)
    expect(didOfDir(handDirectory([]))).to.equal(EMPTY_DIR_DID)
  })

  it('D1: 65-byte secp256k1 key in pubKey.pem gives the published DID', () => {
    const key = hex('041756d13ad46e7811c99c961762472aa64a67554ae09e78b9c096350bc6a8bed3798fe19e3e3203a69d0ac00a60dc32b3652a2e7e372a7c60a64a1f3e06ec4c18')
    expect(didFromPublicFiles({ 'pubKey.pem': goPem('PUBLIC KEY', key) })).to.equal('bafybmiatw5srgqlw3t5sm4buktu5gcgbfhkgujohem3o3a4cusvt424sei')
  })

  it('D2: 33-byte compressed key gives the SDK sample DID', () => {
    const key = hex('03b8edb32c69e16b8d30de87b48aedc4fa09f1643fbaa3e85dbb1932498ea94b0a')
    expect(didFromPublicFiles({ 'pubKey.pem': goPem('PUBLIC KEY', key) })).to.equal('bafybmicbopex4ydytrtremmculwpo7e5p2uvbkuw2ds775xmkcsc5lglai')
  })

  it('matches a hand-assembled directory of small files (raw leaves, sorted links)', () => {
    const files: Record<string, Uint8Array> = {
      'quorumPubKey.pem': new Uint8Array(Buffer.from('q'.repeat(178))),
      'did.png': new Uint8Array(Buffer.from('d'.repeat(1000))),
      'pubKey.pem': new Uint8Array(Buffer.from('k'.repeat(178)))
    }
    const hand = handDirectory(Object.entries(files).map(([name, c]) => ({ name, cid: cidV1(0x55, c), tsize: c.length })))
    expect(directoryBlock(files).block).to.deep.equal(hand)
    expect(didFromPublicFiles(files)).to.equal(didOfDir(hand))
  })

  it('matches a hand-assembled multi-chunk file (dag-pb File root over raw leaves)', () => {
    const size = 262144 * 2 + 1000
    const content = new Uint8Array(size)
    for (let i = 0; i < size; i++) content[i] = (i * 31 + 7) & 0xff
    const chunks = [content.subarray(0, 262144), content.subarray(262144, 524288), content.subarray(524288)]
    // UnixFS Data: Type=File(2), filesize, blocksizes (repeated, unpacked)
    const unixfs = [...varintField(1, 2), ...varintField(3, size), ...chunks.flatMap(c => varintField(4, c.length))]
    const links = chunks.flatMap(c => lenField(2, [...lenField(1, cidV1(0x55, c)), ...lenField(2, []), ...varintField(3, c.length)]))
    const root = Uint8Array.from([...links, ...lenField(1, unixfs)])
    const r = fileRoot(content)
    expect(Buffer.from(r.cid.bytes).toString('hex')).to.equal(Buffer.from(cidV1(0x70, root)).toString('hex'))
    expect(r.tsize).to.equal(root.length + size)
    const dir = handDirectory([{ name: 'pubShare.png', cid: cidV1(0x70, root), tsize: root.length + size }])
    expect(didFromPublicFiles({ 'pubShare.png': content })).to.equal(didOfDir(dir))
  })

  it('a file of exactly one chunk stays a single raw block', () => {
    const c = new Uint8Array(262144).fill(9)
    expect(fileRoot(c).cid.code).to.equal(0x55)
    expect(fileRoot(new Uint8Array(262145)).cid.code).to.equal(0x70)
  })

  it('isValidDid checks prefix, length and alphabet', () => {
    expect(isValidDid(EMPTY_DIR_DID)).to.equal(true)
    expect(isValidDid(EMPTY_DIR_DID.slice(0, 58))).to.equal(false)
    expect(isValidDid(EMPTY_DIR_DID.replace('bafybmi', 'bafkrmi'))).to.equal(false)
    expect(isValidDid(EMPTY_DIR_DID.slice(0, 58) + '1')).to.equal(false)
    expect(isValidDid(EMPTY_DIR_DID.toUpperCase())).to.equal(false)
    expect(isValidDid(42)).to.equal(false)
  })

  it('didLastChar is the last hex digit of the digest', () => {
    // digest of the empty directory node, computed by hand
    const digest = cidV1(0x70, handDirectory([])).subarray(4)
    expect(didLastChar(EMPTY_DIR_DID)).to.equal((digest[31]! & 0x0f).toString(16))
    expect(() => didLastChar('nope')).to.throw()
  })
})
