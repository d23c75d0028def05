import { createPrivateKey, createPublicKey, sign, verify, type KeyObject } from 'node:crypto'
import { peerIdFromString } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import { Lru } from '../util/lru.js'

/**
 * Signatures with a peer's identity key, checked from the peer id alone (the claims' grants,
 * docs/protocol.md "Claims"). An Ed25519 key is held as one Node KeyObject: @libp2p/crypto imports
 * the key from JWK again for every signature and every check, which cost more than the signature
 * itself (some ten grants are checked by each signer and receiver of every transfer, and each
 * arbiter signs five per request). Other key types go through @libp2p/crypto as they are.
 */

/** DER prefixes of an Ed25519 public key (SPKI) and private key (PKCS #8) around its 32 raw bytes. */
const SPKI_ED25519 = Buffer.from('302a300506032b6570032100', 'hex')
const PKCS8_ED25519 = Buffer.from('302e020100300506032b657004220420', 'hex')

/** Peers' public keys as KeyObjects (`false`: a key this module does not hold, checked by @libp2p/crypto). */
const publicKeys = new Lru<KeyObject | false>(4096)

/** A signer with `key`: Ed25519 through one KeyObject, other types through the key itself. */
export function peerSigner (key: PrivateKey): (data: Uint8Array) => Promise<Uint8Array> {
  if (key.type === 'Ed25519') {
    const ko = createPrivateKey({ key: Buffer.concat([PKCS8_ED25519, key.raw.subarray(0, 32)]), format: 'der', type: 'pkcs8' })
    return async (data) => new Uint8Array(sign(null, data, ko))
  }
  return async (data) => await key.sign(data)
}

/** Whether `sig` is `peerId`'s identity key's signature over `data` (false for a peer id that embeds no key, e.g. RSA, or anything malformed). */
export async function verifyPeerSignature (peerId: string, data: Uint8Array, sig: Uint8Array): Promise<boolean> {
  try {
    let ko = publicKeys.get(peerId)
    if (ko === undefined) {
      const pub = peerIdFromString(peerId).publicKey
      ko = pub?.type === 'Ed25519' ? createPublicKey({ key: Buffer.concat([SPKI_ED25519, pub.raw]), format: 'der', type: 'spki' }) : false
      publicKeys.set(peerId, ko)
    }
    if (ko === false) {
      const pub = peerIdFromString(peerId).publicKey
      return pub !== undefined && await pub.verify(data, sig)
    }
    return sig.length === 64 && verify(null, data, ko, sig)
  } catch { return false }
}
