import { expect } from 'chai'
import { execFile } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { nativeBackend, nobleBackend, secpBackend, setSecpBackend, describeSecpBackend, type SecpBackendName } from '../../../src/wallet/secp-backend.js'
import { generateKeyPair, parsePublicKeyPem } from '../../../src/wallet/keys.js'
import { signHashHex, signMessage, verifyHashHex, Verifier } from '../../../src/wallet/signing.js'
import { createDid, didDocumentOf } from '../../../src/wallet/create-did.js'
import { QuorumSigner, verifyDidSignature, verifyPvtSignature, clearDidCaches } from '../../../src/wallet/did-crypto.js'
import { validateChain } from '../../../src/tokenchain/validate.js'
import { buildTestTokenChain, KeyRing } from '../tokenchain/fixtures.js'
import { goPem, hex, toHex } from './helpers.js'
import { LIVE } from './live-signatures.js'

/**
 * Signatures from the code as it was before the backend existed (noble, RFC 6979, low-S, DER),
 * for one fixed key: with no extra entropy, and with 32 bytes of 0x42 as extra entropy.
 */
const KEY = '1e99423a4edf5c3d2e8f6b8c3f4e5d6c7b8a9b0c1d2e3f4a5b6c7d8e9f0a1b2c'
const KEY_POINT = '0452b491732714676806091d02e56b104dc3319553783512602df5d04acef420504e7c7c6e076f129eae293de889d88d8baf405cf78f783fd4e994a545ac4c018b'
const TODAY = [
  { msg: '3366333162343939373566636537633234656536623730356535396630393765', plain: '3045022100aa20669fc3dd26316edb76fd534c50f6a6c71d898df5630a724cc72a7d71b5dc02206384b6c864ae97d230988c16442c9d0fb4b5dee447ee44de180c529f17f1eb55', entropy42: '3045022100cf888c580f0068b86d81669520ee3a68491e16ba911288b8ff1e6a5825b9c540022077c10a6554b45903d8dfaab875579e989cb01f44d2992be7269ae9486a5f6c5a' },
  { msg: '616263', plain: '3045022100d6d8deb7c72416e9d808de6f925d64ef44c044be433bfc49714f0cff68ab870f02206948b6b918c2c7e1d3a02435f6ac192aaf0d95ef225ec2cc2258211a36907eca', entropy42: '30440220494cb8e5605c3f2b22dd8a5c0222239f41050264379cdf5d4e1a00f0dc32f089022027eb7f570f3cdfb92bdcfc22f6fe7c370a4103d120c0b0dec9a15df6b0e7b1f6' },
  // a digest above the group order: reduced mod n before the nonce is derived, on both backends
  { msg: 'ff'.repeat(32), plain: '304402207269535be6fbdb49c2f007f0128c6a878b864ad16efbc9b898bb70747cf86e48022076479c96d7c274af904e6accb18326262217721823152c2f17e718018ae55620', entropy42: '3045022100db1c35d324f9a9c6019ce0003fc47c276e143a969bc685aaf2d2181667aff98f022035200e71a3380f3af61edf284b57ab20ea497e1143cdaab165ae576bd8b45fb3' }
]

const N = secp256k1.Point.Fn.ORDER

describe('wallet/secp-backend: libsecp256k1 loads here', () => {
  it('loads the N-API binding from the package prebuilds (not the elliptic fallback)', function () {
    const n = nativeBackend()
    if (n === undefined && process.env.RBTNODE_SECP_BACKEND === 'noble') this.skip()
    expect(n, 'native backend').to.not.equal(undefined)
    expect(n!.detail).to.match(/^libsecp256k1 \(secp256k1 5\.0\.2, .*\.node\)$/)
  })

  it('is chosen by default and can be forced either way', () => {
    const before = process.env.RBTNODE_SECP_BACKEND
    try {
      delete process.env.RBTNODE_SECP_BACKEND
      expect(setSecpBackend(undefined).name).to.equal(nativeBackend() !== undefined ? 'native' : 'noble')
      process.env.RBTNODE_SECP_BACKEND = 'noble'
      expect(setSecpBackend(undefined).name).to.equal('noble')
      expect(describeSecpBackend()).to.match(/noble backend.*forced by RBTNODE_SECP_BACKEND/)
      process.env.RBTNODE_SECP_BACKEND = 'native'
      expect(setSecpBackend(undefined).name).to.equal('native')
      process.env.RBTNODE_SECP_BACKEND = 'openssl'
      expect(() => setSecpBackend(undefined)).to.throw(/must be native, noble or auto/)
    } finally {
      if (before === undefined) delete process.env.RBTNODE_SECP_BACKEND
      else process.env.RBTNODE_SECP_BACKEND = before
      setSecpBackend(undefined)
    }
  })
})

describe('wallet/secp-backend: both backends give the same bytes', () => {
  const native = (): NonNullable<ReturnType<typeof nativeBackend>> => nativeBackend()!

  it('reproduces the signatures of the code before the backend, on both backends', () => {
    const entropy = new Uint8Array(32).fill(0x42)
    for (const b of [nobleBackend, native()]) {
      for (const t of TODAY) {
        expect(toHex(b.sign(hex(t.msg), hex(KEY))), `${b.name} ${t.msg}`).to.equal(t.plain)
        expect(toHex(b.sign(hex(t.msg), hex(KEY), entropy)), `${b.name} ${t.msg} +entropy`).to.equal(t.entropy42)
      }
    }
  })

  it('signs identically for random keys, digests of every length 1..32 and random extra entropy', () => {
    for (let i = 0; i < 400; i++) {
      const key = generateKeyPair('secp256k1').privateKey
      const msg = new Uint8Array(randomBytes(1 + (i % 32)))
      const entropy = i % 2 === 0 ? new Uint8Array(randomBytes(32)) : undefined
      const a = nobleBackend.sign(msg, key, entropy)
      const b = native().sign(msg, key, entropy)
      expect(toHex(b), `case ${i}`).to.equal(toHex(a))
    }
  })

  it('agrees on verification: valid, tampered, high-S, wrong key, short digests', () => {
    for (let i = 0; i < 100; i++) {
      const kp = generateKeyPair('secp256k1')
      const msg = new Uint8Array(randomBytes(1 + (i % 32)))
      const sig = secp256k1.Signature.fromBytes(nobleBackend.sign(msg, kp.privateKey), 'der')
      const other = generateKeyPair('secp256k1').publicKey
      const cases: Array<[bigint, bigint, Uint8Array, Uint8Array, boolean]> = [
        [sig.r, sig.s, msg, kp.publicKey, true],
        [sig.r, N - sig.s, msg, kp.publicKey, true],
        [sig.r, sig.s, msg, other, false],
        [sig.r, (sig.s + 1n) % N || 1n, msg, kp.publicKey, false],
        [sig.r, sig.s, Uint8Array.of(...msg.subarray(0, msg.length - 1), msg[msg.length - 1]! ^ 1), kp.publicKey, false]
      ]
      for (const [r, s, m, p, want] of cases) {
        expect(nobleBackend.verify(m, r, s, p)).to.equal(want)
        expect(native().verify(m, r, s, p)).to.equal(want)
      }
    }
  })

  it('derives the same public point from a secret key (the fixed key, random keys, 1 and n-1)', () => {
    const derive = native().publicKey!
    expect(toHex(derive(hex(KEY)))).to.equal(KEY_POINT)
    const edges = [new Uint8Array(32), hex((N - 1n).toString(16).padStart(64, '0'))]
    edges[0]![31] = 1
    for (const sk of [...edges, ...Array.from({ length: 50 }, () => generateKeyPair('secp256k1').privateKey)]) {
      expect(toHex(derive(sk))).to.equal(toHex(secp256k1.getPublicKey(sk, false)))
    }
    expect(() => derive(new Uint8Array(32))).to.throw()
  })
})

for (const name of ['noble', 'native'] as SecpBackendName[]) {
  describe(`wallet/signing on the ${name} backend`, () => {
    before(() => { setSecpBackend(name); clearDidCaches() })
    after(() => { setSecpBackend(undefined); clearDidCaches() })

    it('is the backend in use', () => { expect(secpBackend().name).to.equal(name) })

    for (const v of LIVE) {
      it(`verifies live signature ${v.name}, and not over another hash`, () => {
        const key = parsePublicKeyPem(goPem('PUBLIC KEY', hex(v.key)))
        const verifier = new Verifier(key)
        for (let i = 0; i < 3; i++) expect(verifier.verify(Buffer.from(v.hash), hex(v.sig))).to.equal(true)
        expect(verifyHashHex(key, v.hash, hex(v.sig))).to.equal(true)
        const other = (v.hash[0] === '0' ? '1' : '0') + v.hash.slice(1)
        expect(verifyHashHex(key, other, hex(v.sig))).to.equal(false)
      })
    }

    it('signMessage gives today\'s bytes with the same entropy, and plain RFC 6979 without', () => {
      for (const t of TODAY) {
        expect(toHex(signMessage('secp256k1', hex(KEY), hex(t.msg), { extraEntropy: false }))).to.equal(t.plain)
        expect(toHex(signMessage('secp256k1', hex(KEY), hex(t.msg), { extraEntropy: new Uint8Array(32).fill(0x42) }))).to.equal(t.entropy42)
        // the default draws fresh entropy: a different, valid, low-S signature each time
        const a = signMessage('secp256k1', hex(KEY), hex(t.msg))
        const b = signMessage('secp256k1', hex(KEY), hex(t.msg))
        expect(toHex(a)).to.not.equal(toHex(b))
        const key = { curve: 'secp256k1' as const, point: hex(KEY_POINT) }
        for (const s of [a, b]) {
          expect(new Verifier(key).verify(hex(t.msg), s)).to.equal(true)
          expect(secp256k1.Signature.fromBytes(s, 'der').hasHighS()).to.equal(false)
          expect(secp256k1.verify(s, hex(t.msg), key.point, { prehash: false, format: 'der' })).to.equal(true)
        }
      }
    })

    it('signs the first 32 bytes only, and an independent verifier accepts', () => {
      const kp = generateKeyPair('secp256k1')
      const h = 'cd'.repeat(32)
      const sig = signHashHex('secp256k1', kp.privateKey, h)
      const key = { curve: 'secp256k1' as const, point: kp.publicKey }
      expect(verifyHashHex(key, h.slice(0, 32) + '00'.repeat(16), sig)).to.equal(true)
      expect(verifyHashHex(key, 'ce' + h.slice(2), sig)).to.equal(false)
      expect(secp256k1.verify(sig, Buffer.from(h.slice(0, 32)), kp.publicKey, { prehash: false, format: 'der', lowS: false })).to.equal(true)
    })

    it('accepts high-S, rejects malformed DER, out-of-range r or s, and a wrong key without throwing', () => {
      const kp = generateKeyPair('secp256k1')
      const msg = new Uint8Array(Buffer.from('0f'.repeat(16)))
      const low = secp256k1.Signature.fromBytes(signMessage('secp256k1', kp.privateKey, msg), 'der')
      const v = new Verifier({ curve: 'secp256k1', point: kp.publicKey })
      expect(v.verify(msg, new secp256k1.Signature(low.r, N - low.s).toBytes('der'))).to.equal(true)
      const der = low.toBytes('der')
      const t = der.slice(); t[t.length - 1] ^= 1
      expect(v.verify(msg, t)).to.equal(false)
      expect(v.verify(msg, Uint8Array.from([...der, 0]))).to.equal(false)
      expect(v.verify(msg, new Uint8Array(70))).to.equal(false)
      // r = n (encoded by hand: noble refuses to build it)
      const rN = Buffer.from(N.toString(16), 'hex')
      const sB = Buffer.from(low.s.toString(16).padStart(64, '0'), 'hex')
      const bad = Buffer.concat([Buffer.from([0x30, 4 + 33 + 2 + sB.length + (sB[0]! >= 0x80 ? 1 : 0), 0x02, 33, 0]), rN, Buffer.from([0x02, sB.length + (sB[0]! >= 0x80 ? 1 : 0)]), sB[0]! >= 0x80 ? Buffer.from([0]) : Buffer.alloc(0), sB])
      expect(v.verify(msg, new Uint8Array(bad))).to.equal(false)
      expect(new Verifier({ curve: 'secp256k1', point: generateKeyPair('secp256k1').publicKey }).verify(msg, der)).to.equal(false)
    })

    it('a lite DID signs as quorum and owner, and its signatures verify on both backends', async () => {
      const lite = await createDid({ type: 4, password: 'p' })
      const doc = didDocumentOf(lite)
      const q = await QuorumSigner.open({ doc, pvtKey: lite.privateFiles['pvtKey.pem'] }, { privatePassword: 'p' })
      const h = 'e3'.repeat(32)
      const sig = q.sign(h)
      const pvt = q.pvtSign(h)
      for (const other of [name, name === 'native' ? 'noble' : 'native'] as SecpBackendName[]) {
        setSecpBackend(other); clearDidCaches()
        expect(verifyDidSignature(doc, h, sig), other).to.equal(true)
        expect(verifyPvtSignature(doc, h, pvt), other).to.equal(true)
        expect(verifyPvtSignature(doc, 'e4' + h.slice(2), pvt), other).to.equal(false)
      }
      setSecpBackend(name)
    })

    it('validates a secp256k1-signed token chain, and finds a bad signature in it', async () => {
      const ring = new KeyRing('raw-secp256k1')
      const chain = buildTestTokenChain(ring, 4, 5)
      const ctx = { tokenId: chain.tokenId, verifier: ring.verifier, tokenContent: chain.tokenContent }
      expect((await validateChain(chain.envelopes, ctx)).length).to.equal(5)
      const verify = ring.verifier.verify
      let calls = 0
      // the ninth signature reaches the real verifier with its last byte changed
      const flip = (h: string): string => h.slice(0, -2) + (parseInt(h.slice(-2), 16) ^ 1).toString(16).padStart(2, '0')
      const failing = { ...ring.verifier, verify: async (did: string, m: string, sig: string, role?: 'owner' | 'quorum') => await verify(did, m, ++calls === 9 ? flip(sig) : sig, role) }
      ring.clearVerifierCache()
      let err: unknown
      try { await validateChain(chain.envelopes, { ...ctx, verifier: failing }) } catch (e) { err = e }
      expect(String(err)).to.match(/block 1: signature check failed/)
    })
  })
}

/**
 * The wallet, token-chain and token suites again, in a child process with the noble backend forced
 * through the environment, as an operator would force it (the native backend is the default, on
 * which the whole run goes through them already; forcing it is checked above).
 */
describe('wallet/secp-backend: whole signing suites with RBTNODE_SECP_BACKEND forced', function () {
  this.timeout(180_000)
  const here = dirname(fileURLToPath(import.meta.url))
  const files = [
    ...readdirSync(here).filter(f => f.endsWith('.test.js') && f !== 'secp-backend.test.js').map(f => join(here, f)),
    ...['tokenchain/validate.test.js', 'tokenchain/contract.test.js', 'tokens/ingest.test.js', 'tokens/chain-validation-pool.test.js'].map(f => join(here, '..', f))
  ]
  const mocha = join(here, '..', '..', '..', '..', 'node_modules', 'mocha', 'bin', 'mocha.js')
  for (const name of ['noble']) {
    it(`passes with ${name}`, async () => {
      const res = await new Promise<{ code: number, out: string }>((resolve) => {
        execFile(process.execPath, [mocha, '--reporter', 'dot', ...files], { env: { ...process.env, RBTNODE_SECP_BACKEND: name }, maxBuffer: 16 << 20 }, (err, stdout, stderr) => {
          resolve({ code: err === null ? 0 : (typeof err.code === 'number' ? err.code : 1), out: stdout + stderr })
        })
      })
      expect(res.code, res.out).to.equal(0)
      expect(res.out).to.match(/\d+ passing/)
    })
  }
})
