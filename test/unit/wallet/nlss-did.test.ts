import { expect } from 'chai'
import { PNG } from 'pngjs'
import { createHash } from 'node:crypto'
import { xorKeyStream, generateShares, combineShares, shareSign, shareVerify } from '../../../src/wallet/nlss.js'
import { readDidImage, readShareImage, writePngRgb } from '../../../src/wallet/image.js'
import { createDid, didDocumentOf, type CreatedDid } from '../../../src/wallet/create-did.js'
import { DidSigner, QuorumSigner, verifyDidSignature, verifyPvtSignature, clearDidCaches, type SignRequest } from '../../../src/wallet/did-crypto.js'
import { decodeDidDocument, encodeDidDocument, type DidDocument } from '../../../src/wallet/did-document.js'
import { generateKeyPair, p256PublicPem } from '../../../src/wallet/keys.js'
import { signHashHex } from '../../../src/wallet/signing.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { sha3 } from './helpers.js'
import { isSealedMnemonic, unsealMnemonic } from '../../../src/wallet/seal.js'

const sha3hex = (s: string | Uint8Array): string => createHash('sha3-256').update(s).digest('hex')

/** The share-signature walk written straight from the spec, with bit strings. */
function specShareSign (hash: string, pvtStream: Uint8Array): { bits: string, keyDigest: string } {
  const bitAt = (i: number): string => String((pvtStream[i >> 3]! >> (7 - (i % 8))) & 1)
  let h = hash; let all = ''
  for (let k = 0; k < 32; k++) {
    const c = parseInt(h[k]!, 16)
    const r = ((2402 + c) * 2709 + (k + 2709) + c) % 2048
    const pos = Math.floor(r / 8) * 8
    let bits = ''
    for (let i = 0; i < 8; i++) bits += bitAt(pos + i)
    all += bits
    h = sha3hex(Buffer.from(h + '0'.repeat(32) + bits))
  }
  return { bits: all, keyDigest: sha3hex(Buffer.from(all)) }
}

function pngOf (w: number, h: number, colorType: 2 | 6 = 6): Uint8Array {
  const png = new PNG({ width: w, height: h })
  for (let i = 0; i < png.data.length; i++) png.data[i] = (i * 13) & 0xff
  for (let i = 3; i < png.data.length; i += 4) png.data[i] = 255
  return new Uint8Array(PNG.sync.write(png, { colorType }))
}

async function rejectsWith (p: Promise<unknown>, code: string): Promise<void> {
  try { await p } catch (e) { expect((e as RbtError).code).to.equal(code); return }
  expect.fail('expected rejection')
}

describe('wallet/nlss + image', () => {
  it('key stream XOR follows the SHA3 chain seeded by secret‖mac', () => {
    const pixels = new Uint8Array(196608).map((_, i) => i & 0xff)
    const out = xorKeyStream(pixels, 'My DID Secret', '')
    const h0 = sha3('My DID Secret'); const h1 = sha3(h0)
    for (let i = 0; i < 32; i++) {
      expect(out[i]).to.equal(pixels[i]! ^ h0[i]!)
      expect(out[32 + i]).to.equal(pixels[32 + i]! ^ h1[i]!)
    }
    let h = h0; for (let i = 1; i < 6144; i++) h = sha3(h)
    expect(out[196607]).to.equal(pixels[196607]! ^ h[31]!)
    expect(xorKeyStream(out, 'My DID Secret')).to.deep.equal(pixels)
  })

  it('shares satisfy parity(pvt AND pub) = DID bit, MSB first', () => {
    const did = new Uint8Array(196608).map((_, i) => (i * 7 + 3) & 0xff)
    const { pvt, pub } = generateShares(did)
    expect(pvt).to.have.length(1572864)
    for (const i of [0, 1, 7, 8, 1000, 1572863]) {
      let p = pvt[i]! & pub[i]!; let par = 0; while (p !== 0) { par ^= p & 1; p >>= 1 }
      expect(par).to.equal((did[i >> 3]! >> (7 - (i % 8))) & 1)
    }
    expect(combineShares(pvt, pub)).to.deep.equal(did)
  })

  it('share signature matches the spec walk and verifies', () => {
    const did = new Uint8Array(196608).map((_, i) => (i * 5) & 0xff)
    const { pvt, pub } = generateShares(did)
    const hash = sha3hex('a transaction')
    const s = shareSign(hash, pvt)
    const spec = specShareSign(hash, pvt)
    expect(Array.from(s.shareSig, b => b.toString(2).padStart(8, '0')).join('')).to.equal(spec.bits)
    expect(s.keyDigestHex).to.equal(spec.keyDigest)
    expect(shareVerify(hash, s.shareSig, did, pub)).to.equal(spec.keyDigest)
    const t = s.shareSig.slice(); t[3] ^= 0x10
    expect(shareVerify(hash, t, did, pub)).to.equal(null)
  })

  it('rejects non-PNG and wrong-size images with INVALID_INPUT', () => {
    expect(() => readDidImage(new Uint8Array(Buffer.from('GIF89a not a png at all, really not one')))).to.throw(RbtError, /not a PNG/).with.property('code', ErrorCode.INVALID_INPUT)
    expect(() => readDidImage(pngOf(255, 256))).to.throw(RbtError, /256x256/).with.property('code', ErrorCode.INVALID_INPUT)
    expect(() => readShareImage(pngOf(256, 256))).to.throw(RbtError, /1024x512/)
    const ok = pngOf(256, 256)
    expect(readDidImage(ok)).to.have.length(196608)
    expect(() => readDidImage(ok.subarray(0, 200))).to.throw(RbtError).with.property('code', ErrorCode.INVALID_INPUT)
  })

  it('writes 8-bit RGB PNGs that decode to the same pixels', () => {
    const rgb = new Uint8Array(196608).map((_, i) => (i * 11) & 0xff)
    const png = writePngRgb(rgb, 256, 256)
    expect(png[25]).to.equal(2) // IHDR colour type
    expect(readDidImage(png)).to.deep.equal(rgb)
  })

  it('alpha is premultiplied like Go (RGBA()>>8)', () => {
    const png = new PNG({ width: 256, height: 256 })
    png.data.fill(0); png.data[0] = 200; png.data[1] = 100; png.data[2] = 255; png.data[3] = 128
    const rgb = readDidImage(new Uint8Array(PNG.sync.write(png)))
    expect(Array.from(rgb.subarray(0, 3))).to.deep.equal([100, 50, 128])
  })
})

describe('wallet/did-crypto (create, sign, verify per type)', function () {
  this.timeout(20000)
  let basic: CreatedDid
  let basicDoc: DidDocument
  const hash = sha3hex('contract')

  before(async () => {
    basic = await createDid({ type: 0, password: 'p123', quorumPassword: 'q123', image: pngOf(256, 256, 2) })
    basicDoc = didDocumentOf(basic)
  })

  it('basic DID: files, password asked once, image signature verifies', async () => {
    expect(Object.keys(basic.publicFiles).sort()).to.deep.equal(['did.png', 'pubKey.pem', 'pubShare.png', 'quorumPubKey.pem'])
    expect(Object.keys(basic.privateFiles).sort()).to.deep.equal(['pvtKey.pem', 'pvtShare.png', 'quorumPrivKey.pem'])
    expect(basic.did).to.match(/^bafybmi[a-z2-7]{52}$/)
    const asked: SignRequest[] = []
    const signer = new DidSigner({ doc: basicDoc, pvtShare: basic.privateFiles['pvtShare.png'], pvtKey: basic.privateFiles['pvtKey.pem'] },
      async req => { asked.push(req); return { password: 'p123' } })
    const sig = await signer.sign(hash)
    const sig2 = await signer.pvtSign(hash)
    expect(asked).to.deep.equal([{ did: basic.did, mode: 0, kind: 'password', hash: null, onlyPrivKey: false }])
    expect(sig.shareSig).to.have.length(32)
    expect(verifyDidSignature(basicDoc, hash, sig)).to.equal(true)
    expect(verifyPvtSignature(basicDoc, hash, sig2)).to.equal(true)
    expect(verifyDidSignature(basicDoc, sha3hex('other'), sig)).to.equal(false)
    const badShare = { ...sig, shareSig: sig.shareSig.map((b, i) => i === 0 ? b ^ 0xff : b) }
    expect(verifyDidSignature(basicDoc, hash, badShare)).to.equal(false)
    const badKey = { ...sig, keySig: sig.keySig.map((b, i) => i === 10 ? b ^ 1 : b) }
    expect(verifyDidSignature(basicDoc, hash, badKey)).to.equal(false)
    // as quorum the owner signature must not verify (different key)
    expect(verifyDidSignature(basicDoc, hash, sig, { quorum: true })).to.equal(false)
  })

  it('wrong password → WRONG_PASSWORD, no signature', async () => {
    const signer = new DidSigner({ doc: basicDoc, pvtShare: basic.privateFiles['pvtShare.png'], pvtKey: basic.privateFiles['pvtKey.pem'] },
      async () => ({ password: 'nope' }))
    await rejectsWith(signer.sign(hash), ErrorCode.WRONG_PASSWORD)
  })

  it('quorum role signs with pvtShare + quorum key', async () => {
    const q = await QuorumSigner.open({ doc: basicDoc, pvtShare: basic.privateFiles['pvtShare.png'], quorumKey: basic.privateFiles['quorumPrivKey.pem'] }, { quorumPassword: 'q123' })
    const sig = q.sign(hash)
    expect(verifyDidSignature(basicDoc, hash, sig, { quorum: true })).to.equal(true)
    expect(verifyDidSignature(basicDoc, hash, sig)).to.equal(false)
    expect(verifyPvtSignature(basicDoc, hash, q.pvtSign(hash), { quorum: true })).to.equal(true)
    await rejectsWith(QuorumSigner.open({ doc: basicDoc, pvtShare: basic.privateFiles['pvtShare.png'], quorumKey: basic.privateFiles['quorumPrivKey.pem'] }, { quorumPassword: 'p123' }), ErrorCode.WRONG_PASSWORD)
  })

  it('tampered public image is rejected (files no longer hash to the DID)', () => {
    clearDidCaches()
    const files = { ...basic.publicFiles }
    const png = files['did.png']!.slice(); png[png.length - 20] ^= 1
    files['did.png'] = png
    expect(() => verifyDidSignature({ ...basicDoc, files }, hash, { shareSig: new Uint8Array(32), keySig: new Uint8Array(70) }))
      .to.throw(RbtError).with.property('code', ErrorCode.VERIFICATION_FAILED)
  })

  it('DID documents round-trip through the binary encoding', () => {
    const doc = decodeDidDocument(encodeDidDocument(basicDoc))
    expect(doc.did).to.equal(basicDoc.did)
    expect(doc.files['pubShare.png']).to.deep.equal(basicDoc.files['pubShare.png'])
    expect(() => decodeDidDocument(encodeDidDocument(basicDoc).subarray(0, 100))).to.throw(RbtError)
  })

  it('type 0 without an image gets random pixels', async () => {
    const a = await createDid({ type: 0, password: 'x' })
    expect(a.did).to.not.equal(basic.did)
    expect(readDidImage(a.publicFiles['did.png']!)).to.have.length(196608)
  })

  it('standard DID: node signs the share part, client signs keyDigest', async () => {
    const client = generateKeyPair('p256')
    const std = await createDid({ type: 1, image: pngOf(256, 256), publicKeyPem: p256PublicPem(client.publicKey) })
    expect(std.privateFiles['pvtKey.pem']).to.equal(undefined)
    const doc = didDocumentOf(std)
    const asked: SignRequest[] = []
    const signer = new DidSigner({ doc, pvtShare: std.privateFiles['pvtShare.png'] }, async req => {
      asked.push(req)
      return { signature: signHashHex('p256', client.privateKey, req.hash!) }
    })
    const sig = await signer.sign(hash)
    expect(asked[0]!.kind).to.equal('signature')
    expect(asked[0]!.mode).to.equal(1)
    expect(asked[0]!.hash).to.match(/^[0-9a-f]{64}$/).and.not.equal(hash)
    expect(verifyDidSignature(doc, hash, sig)).to.equal(true)
    const bad = new DidSigner({ doc, pvtShare: std.privateFiles['pvtShare.png'] }, async req => ({ signature: signHashHex('p256', generateKeyPair('p256').privateKey, req.hash!) }))
    await rejectsWith(bad.sign(hash), ErrorCode.VERIFICATION_FAILED)
  })

  it('wallet DID: client returns pixels + signature; pvtSign asks only_priv_key', async () => {
    // the client side: its own images and key, made with the same building blocks
    const client = await createDid({ type: 0, password: 'c', image: pngOf(256, 256) })
    const clientSigner = new DidSigner({ doc: didDocumentOf(client), pvtShare: client.privateFiles['pvtShare.png'], pvtKey: client.privateFiles['pvtKey.pem'] }, async () => ({ password: 'c' }))
    const wal = await createDid({ type: 2, publicFiles: { 'did.png': client.publicFiles['did.png']!, 'pubShare.png': client.publicFiles['pubShare.png']!, 'pubKey.pem': client.publicFiles['pubKey.pem']! } })
    expect(Object.keys(wal.privateFiles)).to.deep.equal(['quorumPrivKey.pem'])
    const doc = didDocumentOf(wal)
    const asked: SignRequest[] = []
    const signer = new DidSigner({ doc }, async req => {
      asked.push(req)
      if (req.onlyPrivKey) return { signature: await clientSigner.pvtSign(req.hash!) }
      const s = await clientSigner.sign(req.hash!)
      return { pixels: s.shareSig, signature: s.keySig }
    })
    expect(verifyDidSignature(doc, hash, await signer.sign(hash))).to.equal(true)
    expect(verifyPvtSignature(doc, hash, await signer.pvtSign(hash))).to.equal(true)
    expect(asked.map(a => [a.mode, a.kind, a.hash, a.onlyPrivKey])).to.deep.equal([[2, 'signature', hash, false], [2, 'signature', hash, true]])
  })

  it('lite DID from mnemonic: empty share signature, secp256k1 key signature', async () => {
    const K1 = 'buffalo tumble defy laundry call almost little pig lift party property pool frame erosion mind library sample floor ring enemy word enemy foster ill'
    const lite = await createDid({ type: 4, password: 'p', mnemonic: K1, childPath: 0 })
    expect(Object.keys(lite.publicFiles)).to.deep.equal(['pubKey.pem'])
    // the mnemonic is sealed like the key, with the same password; never plaintext
    const file = lite.privateFiles['mnemonic.txt']!
    expect(Buffer.from(file).toString()).to.not.include('buffalo')
    expect(isSealedMnemonic(file)).to.equal(true)
    expect(await unsealMnemonic(file, 'p')).to.equal(K1)
    expect((await unsealMnemonic(file, 'wrong').then(() => undefined, (e: RbtError) => e))?.code).to.equal(ErrorCode.WRONG_PASSWORD)
    const again = await createDid({ type: 4, password: 'other', mnemonic: K1, childPath: 0 })
    expect(again.did).to.equal(lite.did)
    expect((await createDid({ type: 4, password: 'p', mnemonic: K1, childPath: 1 })).did).to.not.equal(lite.did)
    const doc = didDocumentOf(lite)
    const signer = new DidSigner({ doc, pvtKey: lite.privateFiles['pvtKey.pem'] }, async () => ({ password: 'p' }))
    const sig = await signer.sign(hash)
    expect(sig.shareSig).to.have.length(0)
    expect(verifyDidSignature(doc, hash, sig)).to.equal(true)
    expect(verifyPvtSignature(doc, hash, sig.keySig)).to.equal(true)
    const q = await QuorumSigner.open({ doc, pvtKey: lite.privateFiles['pvtKey.pem'] }, { privatePassword: 'p' })
    expect(verifyDidSignature(doc, hash, q.sign(hash), { quorum: true })).to.equal(true)
  })

  it('lite DID from an external public key (D1) asks for only_priv_key signatures', async () => {
    const ext = await createDid({ type: 4, publicKeyHex: '041756d13ad46e7811c99c961762472aa64a67554ae09e78b9c096350bc6a8bed3798fe19e3e3203a69d0ac00a60dc32b3652a2e7e372a7c60a64a1f3e06ec4c18' })
    expect(ext.did).to.equal('bafybmiatw5srgqlw3t5sm4buktu5gcgbfhkgujohem3o3a4cusvt424sei')
    expect(ext.privateFiles).to.deep.equal({})
    let req: SignRequest | undefined
    const signer = new DidSigner({ doc: didDocumentOf(ext) }, async r => { req = r; return { signature: new Uint8Array(71) } })
    await rejectsWith(signer.pvtSign(hash), ErrorCode.VERIFICATION_FAILED)
    expect(req).to.deep.equal({ did: ext.did, mode: 4, kind: 'signature', hash, onlyPrivKey: true })
  })

  it('rejects bad creation inputs', async () => {
    await rejectsWith(createDid({ type: 1 }), ErrorCode.INVALID_INPUT)
    await rejectsWith(createDid({ type: 0, password: 'x', image: pngOf(128, 128) }), ErrorCode.INVALID_INPUT)
    await rejectsWith(createDid({ type: 4 }), ErrorCode.INVALID_INPUT)
    await rejectsWith(createDid({ type: 7 as 0 }), ErrorCode.INVALID_INPUT)
  })
})
