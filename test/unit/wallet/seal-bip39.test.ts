import { expect } from 'chai'
import { createCipheriv, createECDH, createHash, createHmac, randomBytes } from 'node:crypto'
import { clearKdfCache, sealPrivateKey, sealPrivateKeySync, sealFormat, unsealPrivateKey, unsealPrivateKeySync, unsealReference, sealReferencePem, PEM_SEALED_KEY } from '../../../src/wallet/seal.js'
import { decodePem, encodePem } from '../../../src/wallet/pem.js'
import { liteKeyFromMnemonic, mnemonicToSeed, generateMnemonic } from '../../../src/wallet/bip39.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { goPem, hex, toHex } from './helpers.js'

async function rejectsWith (p: Promise<unknown>, code: string): Promise<void> {
  try { await p } catch (e) { expect((e as RbtError).code).to.equal(code); return }
  expect.fail('expected rejection')
}

/** Reference sealing written out from the spec: nonce ‖ AES-256-GCM(SHA-256(pwd)) ‖ tag. */
function referenceSeal (plain: Uint8Array, password: string): Uint8Array {
  const key = createHash('sha256').update(password).digest()
  const nonce = randomBytes(12)
  const c = createCipheriv('aes-256-gcm', key, nonce)
  return new Uint8Array(Buffer.concat([nonce, c.update(plain), c.final(), c.getAuthTag()]))
}

describe('wallet/seal', () => {
  const secret = new Uint8Array(randomBytes(32))

  it('round-trips our format and rejects a wrong password', async () => {
    const file = await sealPrivateKey(secret, 'correct horse')
    expect(decodePem(file).type).to.equal(PEM_SEALED_KEY)
    expect(sealFormat(file)).to.equal('rbt')
    expect(await unsealPrivateKey(file, 'correct horse')).to.deep.equal(secret)
    expect(unsealPrivateKeySync(file, 'correct horse')).to.deep.equal(secret)
    await rejectsWith(unsealPrivateKey(file, 'wrong horse'), ErrorCode.WRONG_PASSWORD)
    expect(() => unsealPrivateKeySync(file, '')).to.throw(RbtError).with.property('code', ErrorCode.WRONG_PASSWORD)
  })

  it('binds the KDF header: a tampered salt fails like a wrong password', () => {
    const file = sealPrivateKeySync(secret, 'pw')
    const body = decodePem(file).bytes
    body[10] ^= 1
    expect(() => unsealPrivateKeySync(goPem(PEM_SEALED_KEY, body), 'pw')).to.throw(RbtError).with.property('code', ErrorCode.WRONG_PASSWORD)
    const huge = decodePem(file).bytes; huge[4] = 30
    expect(() => unsealPrivateKeySync(goPem(PEM_SEALED_KEY, huge), 'pw')).to.throw(RbtError).with.property('code', ErrorCode.INVALID_INPUT)
  })

  it('opens reference-format files (key = SHA-256(password))', async () => {
    const blob = referenceSeal(secret, 'mypassword')
    expect(blob).to.have.length(60)
    const file = goPem('ENCRYPTED PRIVATE KEY', blob)
    expect(sealFormat(file)).to.equal('reference')
    expect(await unsealPrivateKey(file, 'mypassword')).to.deep.equal(secret)
    await rejectsWith(unsealPrivateKey(file, 'mypassword2'), ErrorCode.WRONG_PASSWORD)
    // and our reference writer is readable by the spec decoder
    const ours = decodePem(sealReferencePem(secret, 'x')).bytes
    expect(unsealReference(ours, 'x')).to.deep.equal(secret)
  })

  it('plain PRIVATE KEY files open, empty password refused for sealing', async () => {
    expect(await unsealPrivateKey(goPem('PRIVATE KEY', secret), 'anything')).to.deep.equal(secret)
    await rejectsWith(sealPrivateKey(secret, ''), ErrorCode.INVALID_INPUT)
  })
})

const K1 = 'buffalo tumble defy laundry call almost little pig lift party property pool frame erosion mind library sample floor ring enemy word enemy foster ill'
const K1_SEED = '1884e5ddc2a5fb783f60803868cffaef1af1ce36e6686357c9c5dd6c80b63d698d78a8db3cab0404ecd3d966a00b9d51e4ac783997f78f64a1b24152e09ec524'
const N = 0xfffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141n

/** One BIP-32 CKDpriv step by hand with HMAC-SHA512 and OpenSSL secp256k1. */
function handChild (seed: Uint8Array, index: number): string {
  const I = createHmac('sha512', 'Bitcoin seed').update(seed).digest()
  const k = BigInt('0x' + I.subarray(0, 32).toString('hex'))
  const c = I.subarray(32)
  const ecdh = createECDH('secp256k1'); ecdh.setPrivateKey(I.subarray(0, 32))
  const data = Buffer.alloc(37); ecdh.getPublicKey(null, 'compressed').copy(data); data.writeUInt32BE(index, 33)
  const J = createHmac('sha512', c).update(data).digest()
  return ((BigInt('0x' + J.subarray(0, 32).toString('hex')) + k) % N).toString(16).padStart(64, '0')
}

describe('wallet/seal: derived-key cache', () => {
  it('a cached unseal still refuses a wrong password and a tampered file; clearing the cache changes no result', async () => {
    const plain = randomBytes(32)
    const sealed = await sealPrivateKey(plain, 'right horse')
    expect(Buffer.from(await unsealPrivateKey(sealed, 'right horse')).equals(plain)).to.equal(true)
    expect(Buffer.from(await unsealPrivateKey(sealed, 'right horse')).equals(plain)).to.equal(true)
    let wrong: unknown
    await unsealPrivateKey(sealed, 'wrong horse').catch((e) => { wrong = e })
    expect(wrong).to.be.instanceOf(RbtError)
    const der = new Uint8Array(decodePem(sealed).bytes)
    der[der.length - 1] ^= 1
    let tampered: unknown
    await unsealPrivateKey(encodePem(PEM_SEALED_KEY, der), 'right horse').catch((e) => { tampered = e })
    expect(tampered).to.be.instanceOf(RbtError)
    clearKdfCache()
    expect(Buffer.from(await unsealPrivateKey(sealed, 'right horse')).equals(plain)).to.equal(true)
  })
})

describe('wallet/bip39', () => {
  it('K1: mnemonic → seed', () => {
    expect(toHex(mnemonicToSeed(K1))).to.equal(K1_SEED)
    expect(toHex(mnemonicToSeed('  ' + K1.replace(/ /g, '   ') + '\n'))).to.equal(K1_SEED)
  })

  it('child m/<childPath> matches a hand-computed CKDpriv step', () => {
    for (const idx of [0, 1, 7]) {
      const kp = liteKeyFromMnemonic(K1, idx)
      expect(toHex(kp.privateKey)).to.equal(handChild(hex(K1_SEED), idx))
      const ecdh = createECDH('secp256k1'); ecdh.setPrivateKey(Buffer.from(kp.privateKey))
      expect(toHex(kp.publicKey)).to.equal(ecdh.getPublicKey('hex', 'uncompressed'))
    }
  })

  it('generates valid 24-word mnemonics and rejects bad ones', () => {
    const m = generateMnemonic()
    expect(m.split(' ')).to.have.length(24)
    expect(mnemonicToSeed(m)).to.have.length(64)
    expect(() => mnemonicToSeed(K1.replace('buffalo', 'buffalo buffalo'))).to.throw(RbtError)
    expect(() => liteKeyFromMnemonic(K1, -1)).to.throw(RbtError)
  })
})
