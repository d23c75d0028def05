import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { peerIdFromString } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import { Lru } from '../util/lru.js'
import { sodiumNative, type SodiumNative } from '../util/sodium-native.js'

/**
 * Signatures with a peer's identity key, checked from the peer id alone (the claims' grants and
 * seals, docs/protocol.md "Claims"). An Ed25519 key goes to libsodium where the optional add-on
 * loads (about half of OpenSSL's time through node:crypto, to sign and to check: every signer and
 * receiver of a transfer checks some ten of these, every arbiter signs several per request), and
 * else to node:crypto with the key held as one KeyObject (@libp2p/crypto imports the key from JWK
 * again for every call). Ed25519 signatures are deterministic: both paths give the same bytes,
 * and the native one is trusted only once it gave node:crypto's answer on a known key.
 * Other key types go through @libp2p/crypto as they are.
 */

/** DER prefixes of an Ed25519 public key (SPKI) and private key (PKCS #8) around its 32 raw bytes. */
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex')
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex')

/** Which Ed25519 implementation signs and checks: libsodium, or OpenSSL through node:crypto. */
export type PeerSignatureBackend = 'libsodium' | 'node'

let sodium: SodiumNative | null | undefined
let forced: PeerSignatureBackend | undefined

/** libsodium's Ed25519, once it signed and checked one known key as node:crypto does; else null. */
function nativeEd25519 (): SodiumNative | null {
  if (forced === 'node') return null
  if (sodium !== undefined) return sodium
  sodium = null
  try {
    const s = sodiumNative()
    if (s === null || typeof s.crypto_sign_detached !== 'function' || typeof s.crypto_sign_verify_detached !== 'function') return null
    const seed = Buffer.alloc(32, 7)
    const ko = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, seed]), format: 'der', type: 'pkcs8' })
    const pub = createPublicKey(ko).export({ format: 'der', type: 'spki' }).subarray(SPKI_ED25519.length)
    const msg = Buffer.from('rbtnode peer signature check')
    const sig = Buffer.alloc(64)
    s.crypto_sign_detached(sig, msg, Buffer.concat([seed, pub]))
    const bad = Buffer.from(sig); bad[0] ^= 1
    if (sig.equals(sign(null, msg, ko)) && s.crypto_sign_verify_detached(sig, msg, pub) && !s.crypto_sign_verify_detached(bad, msg, pub)) sodium = s
  } catch {
    sodium = null
  }
  return sodium
}

/** The implementation in use (`RBTNODE_PEER_SIG=node` in the environment, or `usePeerSignatureBackend`, keeps node:crypto). */
export function peerSignatureBackend (): PeerSignatureBackend {
  if (!envRead) { envRead = true; if (forced === undefined && process.env.RBTNODE_PEER_SIG === 'node') forced = 'node' }
  return nativeEd25519() !== null ? 'libsodium' : 'node'
}
let envRead = false

/** Tests: run on one implementation (`node`), or back to the default choice (undefined). Keys made before keep theirs. */
export function usePeerSignatureBackend (b: PeerSignatureBackend | undefined): void {
  forced = b === 'node' ? 'node' : undefined
  publicKeys.clear()
}

/** A peer's public key as this module checks with it (`false`: a key type it does not hold, checked by @libp2p/crypto). */
type HeldKey = { raw: Uint8Array, ko: KeyObject | undefined } | false
const publicKeys = new Lru<HeldKey>(4096)

/** A signer with `key`: Ed25519 through libsodium or one KeyObject, other types through the key itself. */
export function peerSigner (key: PrivateKey): (data: Uint8Array) => Promise<Uint8Array> {
  if (key.type === 'Ed25519') {
    const s = peerSignatureBackend() === 'libsodium' ? nativeEd25519() : null
    if (s !== null) {
      // libsodium's secret key is the seed and the public key, as libp2p holds it
      const sk = Buffer.concat([key.raw.subarray(0, 32), key.publicKey.raw])
      return async (data) => { const sig = new Uint8Array(64); s.crypto_sign_detached(sig, data, sk); return sig }
    }
    const ko = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, key.raw.subarray(0, 32)]), format: 'der', type: 'pkcs8' })
    return async (data) => new Uint8Array(sign(null, data, ko))
  }
  return async (data) => await key.sign(data)
}

/** Whether `sig` is `peerId`'s identity key's signature over `data` (false for a peer id that embeds no key, e.g. RSA, or anything malformed). */
export async function verifyPeerSignature (peerId: string, data: Uint8Array, sig: Uint8Array): Promise<boolean> {
  try {
    const s = peerSignatureBackend() === 'libsodium' ? nativeEd25519() : null
    let held = publicKeys.get(peerId)
    if (held === undefined) {
      const pub = peerIdFromString(peerId).publicKey
      held = pub?.type === 'Ed25519' ? { raw: pub.raw, ko: undefined } : false
      publicKeys.set(peerId, held)
    }
    if (held === false) {
      const pub = peerIdFromString(peerId).publicKey
      return pub !== undefined && await pub.verify(data, sig)
    }
    if (sig.length !== 64) return false
    if (s !== null) return s.crypto_sign_verify_detached(sig, data, held.raw)
    held.ko ??= createPublicKey({ key: Buffer.concat([SPKI_ED25519, held.raw]), format: 'der', type: 'spki' })
    return verify(null, data, held.ko, sig)
  } catch { return false }
}
