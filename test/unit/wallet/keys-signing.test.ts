import { expect } from 'chai'
import { createECDH, createPublicKey } from 'node:crypto'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { p256 } from '@noble/curves/nist.js'
import { decodePem, encodePem } from '../../../src/wallet/pem.js'
import { generateKeyPair, keyPairFromPrivate, p256PublicPem, p256Pkcs8Der, p256FromPkcs8Der, parsePublicKeyPem, rawPublicPem } from '../../../src/wallet/keys.js'
import { signHashHex, signMessage, verifyHashHex, verifyMessage, Verifier } from '../../../src/wallet/signing.js'
import { didFromPublicFiles } from '../../../src/wallet/did-string.js'
import { goPem, hex, toHex } from './helpers.js'
import { LIVE } from './live-signatures.js'

describe('wallet/pem + keys', () => {
  it('writes Go pem.EncodeToMemory layout', () => {
    const body = new Uint8Array(100).map((_, i) => i)
    const pem = Buffer.from(encodePem('PUBLIC KEY', body)).toString()
    expect(pem).to.equal(Buffer.from(goPem('PUBLIC KEY', body)).toString())
    const lines = pem.split('\n')
    expect(lines[0]).to.equal('-----BEGIN PUBLIC KEY-----')
    expect(lines[1]).to.have.length(64)
    expect(pem.endsWith('-----END PUBLIC KEY-----\n')).to.equal(true)
    expect(decodePem(pem.replace(/\n/g, '\r\n')).bytes).to.deep.equal(body)
  })

  it('P-256 public key is SPKI DER that OpenSSL reads back', () => {
    const kp = generateKeyPair('p256')
    const pem = p256PublicPem(kp.publicKey)
    const ko = createPublicKey(Buffer.from(pem))
    const jwk = ko.export({ format: 'jwk' })
    expect(jwk.crv).to.equal('P-256')
    expect(Buffer.from(jwk.x!, 'base64url').toString('hex')).to.equal(toHex(kp.publicKey.subarray(1, 33)))
    const parsed = parsePublicKeyPem(pem)
    expect(parsed.curve).to.equal('p256')
    expect(parsed.point).to.deep.equal(kp.publicKey)
  })

  it('P-256 PKCS#8 round trip', () => {
    const kp = generateKeyPair('p256')
    expect(p256FromPkcs8Der(p256Pkcs8Der(kp.privateKey)).privateKey).to.deep.equal(kp.privateKey)
  })

  it('lite public keys: raw 65-byte and 33-byte points', () => {
    const kp = generateKeyPair('secp256k1')
    const pem = rawPublicPem('secp256k1', kp.publicKey)
    expect(decodePem(pem).bytes).to.have.length(65)
    expect(parsePublicKeyPem(pem)).to.deep.equal({ curve: 'secp256k1', point: kp.publicKey })
    const ecdh = createECDH('secp256k1'); ecdh.setPrivateKey(Buffer.from(kp.privateKey))
    const compressed = new Uint8Array(ecdh.getPublicKey(null, 'compressed'))
    expect(parsePublicKeyPem(goPem('PUBLIC KEY', compressed)).point).to.deep.equal(kp.publicKey)
    expect(() => parsePublicKeyPem(goPem('PUBLIC KEY', new Uint8Array(65).fill(4)))).to.throw(/not a point/)
  })
})

describe('wallet/keys: key pairs from private keys', () => {
  it('gives each private key its own public key, every time, as fresh copies', () => {
    const a = generateKeyPair('secp256k1')
    const b = generateKeyPair('p256')
    for (let i = 0; i < 3; i++) {
      const ka = keyPairFromPrivate('secp256k1', a.privateKey)
      const kb = keyPairFromPrivate('p256', b.privateKey)
      expect(toHex(ka.publicKey)).to.equal(toHex(a.publicKey))
      expect(toHex(kb.publicKey)).to.equal(toHex(b.publicKey))
      ka.publicKey.fill(0)
      ka.privateKey.fill(0)
    }
    expect(toHex(keyPairFromPrivate('secp256k1', a.privateKey).publicKey)).to.equal(toHex(secp256k1.getPublicKey(a.privateKey, false)))
  })
})

describe('wallet/signing', () => {
  for (const v of LIVE) {
    it(`verifies live signature ${v.name} and its key reproduces the DID`, () => {
      const key = parsePublicKeyPem(goPem('PUBLIC KEY', hex(v.key)))
      expect(verifyHashHex(key, v.hash, hex(v.sig))).to.equal(true)
      expect(didFromPublicFiles({ 'pubKey.pem': goPem('PUBLIC KEY', hex(v.key)) })).to.equal(v.did)
      // a different hash (first 32 chars changed) must fail
      const other = (v.hash[0] === '0' ? '1' : '0') + v.hash.slice(1)
      expect(verifyHashHex(key, other, hex(v.sig))).to.equal(false)
    })
  }

  it('only the first 32 input bytes are signed', () => {
    for (const curve of ['p256', 'secp256k1'] as const) {
      const kp = generateKeyPair(curve)
      const h = 'ab'.repeat(32)
      const sig = signHashHex(curve, kp.privateKey, h)
      const key = { curve, point: kp.publicKey }
      expect(verifyHashHex(key, h.slice(0, 32) + 'ff'.repeat(16), sig)).to.equal(true)
      expect(verifyHashHex(key, 'ac' + h.slice(2), sig)).to.equal(false)
      // independent check: noble over the raw first 32 ASCII bytes, no prehash
      const impl = curve === 'p256' ? p256 : secp256k1
      expect(impl.verify(sig, Buffer.from(h.slice(0, 32)), kp.publicKey, { prehash: false, format: 'der', lowS: false })).to.equal(true)
    }
  })

  it('accepts high-S signatures for both curves', () => {
    for (const [curve, impl] of [['p256', p256], ['secp256k1', secp256k1]] as const) {
      const kp = generateKeyPair(curve)
      const msg = new Uint8Array(Buffer.from('c0ffee'.repeat(11)))
      const low = impl.Signature.fromBytes(signMessage(curve, kp.privateKey, msg), 'der')
      const n = impl.Point.Fn.ORDER
      const highS = low.s > n / 2n ? low.s : n - low.s
      const high = new impl.Signature(low.r, highS).toBytes('der')
      const v = new Verifier({ curve, point: kp.publicKey })
      expect(v.verify(msg, high)).to.equal(true)
      expect(v.verify(msg, new impl.Signature(low.r, n - highS).toBytes('der'))).to.equal(true)
    }
  })

  it('rejects malformed and tampered signatures without throwing', () => {
    const kp = generateKeyPair('p256')
    const msg = new Uint8Array(Buffer.from('00'.repeat(32)))
    const sig = signMessage('p256', kp.privateKey, msg)
    const v = new Verifier({ curve: 'p256', point: kp.publicKey })
    for (let i = 0; i < 4; i++) expect(v.verify(msg, sig)).to.equal(true) // also exercises the precomputed path
    const t = sig.slice(); t[t.length - 1] ^= 1
    expect(v.verify(msg, t)).to.equal(false)
    expect(v.verify(msg, new Uint8Array(70))).to.equal(false)
    expect(v.verify(msg, Uint8Array.from([...sig, 0]))).to.equal(false)
    expect(verifyMessage({ curve: 'p256', point: generateKeyPair('p256').publicKey }, msg, sig)).to.equal(false)
  })

  it('a signature that verified once answers the same from the memo, and only for the same key, bytes and signature', () => {
    for (const curve of ['p256', 'secp256k1'] as const) {
      const kp = generateKeyPair(curve)
      const other = generateKeyPair(curve)
      const msg = new Uint8Array(Buffer.from('ab'.repeat(32)))
      const sig = signMessage(curve, kp.privateKey, msg)
      const v = new Verifier({ curve, point: kp.publicKey })
      expect(v.verify(msg, sig)).to.equal(true)
      expect(v.verify(msg, sig), 'again, from the memo').to.equal(true)
      expect(new Verifier({ curve, point: other.publicKey }).verify(msg, sig), 'another key').to.equal(false)
      // only the signed portion (the first 32 bytes) counts, memo or not
      expect(v.verify(new Uint8Array([...msg.subarray(0, 32), 1, 2]), sig)).to.equal(true)
      const changed = msg.slice(); changed[31] ^= 1
      expect(v.verify(changed, sig), 'other signed bytes').to.equal(false)
      const bad = sig.slice(); bad[bad.length - 2] ^= 1
      expect(v.verify(msg, bad)).to.equal(false)
      expect(v.verify(msg, bad), 'a refusal is not remembered as anything else').to.equal(false)
    }
  })
})
