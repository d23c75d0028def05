import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { generateKeyPair } from '@libp2p/crypto/keys'
import { peerIdFromPrivateKey } from '@libp2p/peer-id'
import { peerSignatureBackend, peerSigner, usePeerSignatureBackend, verifyPeerSignature } from '../../src/p2p/peer-signature.js'

describe('p2p: signatures with a peer\'s identity key (libsodium, or one KeyObject)', () => {
  afterEach(() => { usePeerSignatureBackend(undefined) })

  it('agree with @libp2p/crypto both ways, for random keys and messages; a tampered message, signature or another peer fails', async () => {
    for (let i = 0; i < 20; i++) {
      const key = await generateKeyPair('Ed25519')
      const other = await generateKeyPair('Ed25519')
      const id = peerIdFromPrivateKey(key).toString()
      const msg = randomBytes(1 + Math.floor(Math.random() * 300))
      const ours = await peerSigner(key)(msg)
      const theirs = await key.sign(msg)
      expect(Buffer.from(ours).equals(Buffer.from(theirs)), 'Ed25519 is deterministic: the same bytes').to.equal(true)
      expect(await key.publicKey.verify(msg, ours)).to.equal(true)
      expect(await verifyPeerSignature(id, msg, theirs)).to.equal(true)
      const bad = Buffer.from(msg); bad[0] ^= 1
      expect(await verifyPeerSignature(id, bad, theirs)).to.equal(false)
      const badSig = Buffer.from(theirs); badSig[10] ^= 1
      expect(await verifyPeerSignature(id, msg, badSig)).to.equal(false)
      expect(await verifyPeerSignature(peerIdFromPrivateKey(other).toString(), msg, theirs)).to.equal(false)
    }
  })

  it('answers false, never throws, for a malformed peer id, a short signature or a key type it does not hold (secp256k1 goes through @libp2p/crypto)', async () => {
    expect(await verifyPeerSignature('not-a-peer', new Uint8Array(1), new Uint8Array(64))).to.equal(false)
    const key = await generateKeyPair('Ed25519')
    expect(await verifyPeerSignature(peerIdFromPrivateKey(key).toString(), new Uint8Array(1), new Uint8Array(3))).to.equal(false)
    const secp = await generateKeyPair('secp256k1')
    const msg = randomBytes(40)
    expect(await verifyPeerSignature(peerIdFromPrivateKey(secp).toString(), msg, await peerSigner(secp)(msg))).to.equal(true)
  })

  it('libsodium (where it loads) and node:crypto give the same signatures and the same answers, each checking the other\'s', async function () {
    if (peerSignatureBackend() !== 'libsodium') this.skip() // the add-on does not load on this platform: node:crypto alone
    for (let i = 0; i < 40; i++) {
      const key = await generateKeyPair('Ed25519')
      const id = peerIdFromPrivateKey(key).toString()
      const msg = randomBytes(Math.floor(Math.random() * 400))
      usePeerSignatureBackend(undefined)
      const native = await peerSigner(key)(msg)
      usePeerSignatureBackend('node')
      expect(peerSignatureBackend()).to.equal('node')
      const openssl = await peerSigner(key)(msg)
      expect(Buffer.from(native).equals(Buffer.from(openssl))).to.equal(true)
      const bad = Buffer.from(native); bad[i % 64] ^= 1 << (i % 8)
      for (const b of ['node', undefined] as const) {
        usePeerSignatureBackend(b)
        expect(await verifyPeerSignature(id, msg, native), `${b ?? 'libsodium'} checks`).to.equal(true)
        expect(await verifyPeerSignature(id, msg, bad), `${b ?? 'libsodium'} refuses a changed signature`).to.equal(false)
        expect(await verifyPeerSignature(id, Buffer.concat([msg, Buffer.from([0])]), native)).to.equal(false)
      }
    }
  })
})
