import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { p256 } from '@noble/curves/nist.js'
import { p256VerifyOpenssl } from '../../../src/wallet/p256-openssl.js'
import { Verifier, signMessage } from '../../../src/wallet/signing.js'
import { generateKeyPair } from '../../../src/wallet/keys.js'

const Fn = p256.Point.Fn
const N = Fn.ORDER
const big = (b: Uint8Array): bigint => BigInt('0x' + Buffer.from(b).toString('hex'))
const bytes32 = (x: bigint): Uint8Array => Uint8Array.from(Buffer.from(x.toString(16).padStart(64, '0'), 'hex'))

/** The ECDSA rule on noble's arithmetic alone: the reference for the OpenSSL path. */
function nobleRule (e: bigint, r: bigint, s: bigint, pub: Uint8Array): boolean {
  const w = Fn.inv(s)
  const u1 = Fn.mul(e, w)
  const u2 = Fn.mul(r, w)
  const a = u1 === 0n ? p256.Point.ZERO : p256.Point.BASE.multiply(u1)
  const R = a.add(p256.Point.fromBytes(pub).multiply(u2))
  return !R.is0() && Fn.create(R.toAffine().x) === r
}

describe('wallet: P-256 verification on OpenSSL', () => {
  // each case's rule on noble is a pure-JavaScript multiplication of an arbitrary point (tens of ms
  // on a loaded machine): 24 keys, 6 cases each, and time for a machine running a soak beside it
  it('agrees with the ECDSA rule on noble for valid, high-S, tampered and wrong-key signatures', function () {
    this.timeout(90_000)
    for (let i = 0; i < 24; i++) {
      const kp = generateKeyPair('p256')
      const other = generateKeyPair('p256')
      // the first message is a zero byte (e ≡ 0), which a random one-byte message also is once in 256
      const msg = i === 0 ? new Uint8Array(1) : new Uint8Array(randomBytes(1 + (i % 32)))
      const sig = p256.Signature.fromBytes(signMessage('p256', kp.privateKey, msg), 'der')
      const e = Fn.create(big(msg))
      const q = p256.Point.fromBytes(kp.publicKey).toAffine()
      const q2 = p256.Point.fromBytes(other.publicKey).toAffine()
      const cases: Array<[bigint, bigint, bigint, { x: bigint, y: bigint }, Uint8Array]> = [
        [e, sig.r, sig.s, q, kp.publicKey],
        [e, sig.r, N - sig.s, q, kp.publicKey], // high-S: valid too
        [Fn.create(e + 1n), sig.r, sig.s, q, kp.publicKey],
        [e, sig.r, Fn.create(sig.s + 1n), q, kp.publicKey],
        [e, sig.r, sig.s, q2, other.publicKey],
        [Fn.create(N - e), sig.r, sig.s, q, kp.publicKey] // the mirror digest: valid under −Q only (unless e ≡ 0, its own mirror)
      ]
      for (const [ee, r, s, pt, pub] of cases) {
        expect(p256VerifyOpenssl(ee, r, s, pt.x, pt.y)).to.equal(nobleRule(ee, r, s, pub))
      }
      expect(p256VerifyOpenssl(e, sig.r, sig.s, q.x, q.y)).to.equal(true)
      expect(p256VerifyOpenssl(Fn.create(N - e), sig.r, sig.s, q.x, q.y)).to.equal(e === 0n)
    }
  })

  it('leaves the degenerate sums (k·G = ±Q) to the caller, and the Verifier still decides them by the rule', () => {
    const d = 0x1234567890abcdefn
    const pub = p256.getPublicKey(bytes32(d), false)
    const q = p256.Point.fromBytes(pub).toAffine()
    const r = 0x777n
    const s = 0x999n
    // k = e·r⁻¹ = d: K = Q; k = −d: K = −Q (the sum is at infinity)
    for (const k of [d, N - d]) {
      const e = Fn.mul(k, r)
      expect(p256VerifyOpenssl(e, r, s, q.x, q.y)).to.equal(undefined)
      const der = new p256.Signature(r, s).toBytes('der')
      expect(new Verifier({ curve: 'p256', point: pub }).verify(bytes32(e), der)).to.equal(nobleRule(e, r, s, pub))
    }
    // e ≡ 0: the sum is u2·Q alone
    const e0 = 0n
    expect(p256VerifyOpenssl(e0, r, s, q.x, q.y)).to.equal(nobleRule(e0, r, s, pub))
  })

  it('a real signature over a zero digest (e ≡ 0: the sum is u2·Q alone) verifies', () => {
    const kp = generateKeyPair('p256')
    const msg = new Uint8Array(32)
    const der = signMessage('p256', kp.privateKey, msg)
    expect(new Verifier({ curve: 'p256', point: kp.publicKey }).verify(msg, der)).to.equal(true)
    expect(p256.verify(der, msg, kp.publicKey, { prehash: false, format: 'der', lowS: false })).to.equal(true)
  })

  it('the Verifier accepts exactly what noble accepts over random signatures and bit flips', () => {
    const kp = generateKeyPair('p256')
    const v = new Verifier({ curve: 'p256', point: kp.publicKey })
    for (let i = 0; i < 40; i++) {
      const msg = new Uint8Array(Buffer.from(randomBytes(32).toString('hex'), 'ascii'))
      const der = signMessage('p256', kp.privateKey, msg)
      const bad = der.slice()
      bad[bad.length - 1 - (i % 8)] ^= 1 << (i % 8)
      for (const sig of [der, bad]) {
        let noble: boolean
        try { noble = p256.verify(sig, msg.subarray(0, 32), kp.publicKey, { prehash: false, format: 'der', lowS: false }) } catch { noble = false }
        expect(v.verify(msg, sig)).to.equal(noble)
      }
    }
  })
})
