/**
 * Key pairs and their file encodings.
 * - P-256 (owner and quorum keys): public key as SPKI DER, private key as PKCS#8 DER.
 * - secp256k1 (lite DIDs): public key as the raw SEC1 point (65 bytes, or 33 compressed)
 *   inside a `PUBLIC KEY` PEM, private key as the raw 32-byte big-endian scalar.
 */
import { createPrivateKey, createPublicKey, type KeyObject } from 'node:crypto'
import { p256 } from '@noble/curves/nist.js'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { createHmac, randomBytes } from 'node:crypto'
import { RbtError, ErrorCode } from '../util/errors.js'
import { Lru } from '../util/lru.js'
import { bytesEqual, concatBytes } from './bytes.js'
import { decodePem, encodePem, PEM_PUBLIC_KEY } from './pem.js'
import { secpBackend } from './secp-backend.js'

export type Curve = 'p256' | 'secp256k1'

export interface KeyPair {
  curve: Curve
  /** 32-byte big-endian scalar. */
  privateKey: Uint8Array
  /** 65-byte uncompressed SEC1 point. */
  publicKey: Uint8Array
}

export interface PublicKey {
  curve: Curve
  /** 65-byte uncompressed SEC1 point (normalised). */
  point: Uint8Array
}

export const curveImpl = (c: Curve): typeof p256 => (c === 'p256' ? p256 : secp256k1)

export function generateKeyPair (curve: Curve): KeyPair {
  const impl = curveImpl(curve)
  const privateKey = impl.utils.randomSecretKey()
  return { curve, privateKey, publicKey: impl.getPublicKey(privateKey, false) }
}

/**
 * Public keys of recently opened private keys. A key file is opened for every transfer, and
 * deriving its public key is a constant-time scalar multiplication. Entries are found by an HMAC
 * of the private key under a secret of this process and hold only the public key.
 */
const PUBLIC_KEY_CACHE_MAX = 64
const publicKeyCache = new Lru<Uint8Array>(PUBLIC_KEY_CACHE_MAX)
const publicKeyCacheSecret = randomBytes(32)

export function keyPairFromPrivate (curve: Curve, privateKey: Uint8Array): KeyPair {
  const impl = curveImpl(curve)
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32 || !impl.utils.isValidSecretKey(privateKey)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `invalid ${curve} private key`)
  }
  const id = createHmac('sha256', publicKeyCacheSecret).update(curve).update(privateKey).digest('base64')
  let publicKey = publicKeyCache.get(id)
  if (publicKey === undefined) {
    const native = curve === 'secp256k1' ? secpBackend().publicKey : undefined
    publicKey = native !== undefined ? native(privateKey) : impl.getPublicKey(privateKey, false)
    publicKeyCache.set(id, publicKey)
  }
  // Copies: callers may wipe the buffer they passed in, or change what they get.
  return { curve, privateKey: privateKey.slice(), publicKey: publicKey.slice() }
}

/** Parse and validate a SEC1 point (33 or 65 bytes); returns the uncompressed form. */
export function normalisePoint (curve: Curve, point: Uint8Array): Uint8Array {
  if (!(point instanceof Uint8Array) || (point.length !== 33 && point.length !== 65)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${curve} public key must be 33 or 65 bytes`)
  }
  if (curve === 'secp256k1') {
    const native = secpBackend().uncompressPoint?.(point)
    if (native !== undefined) return native
  }
  try {
    return curveImpl(curve).Point.fromBytes(point).toBytes(false)
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `${curve} public key is not a point on the curve`, { cause: e })
  }
}

// SPKI DER prefix for an uncompressed P-256 point: SEQUENCE{ SEQUENCE{ id-ecPublicKey, prime256v1 }, BIT STRING }.
const P256_SPKI_PREFIX = Uint8Array.from(Buffer.from('3059301306072a8648ce3d020106082a8648ce3d030107034200', 'hex'))

export function p256SpkiDer (point: Uint8Array): Uint8Array {
  return concatBytes(P256_SPKI_PREFIX, normalisePoint('p256', point))
}

/** `pubKey.pem` / `quorumPubKey.pem` for a P-256 key (what Go's x509.MarshalPKIXPublicKey writes). */
export function p256PublicPem (point: Uint8Array): Uint8Array {
  return encodePem(PEM_PUBLIC_KEY, p256SpkiDer(point))
}

/** Lite `pubKey.pem`: the point bytes exactly as given (65 uncompressed, or 33 compressed). */
export function rawPublicPem (curve: Curve, point: Uint8Array): Uint8Array {
  normalisePoint(curve, point)
  return encodePem(PEM_PUBLIC_KEY, point)
}

/**
 * Parse a public key PEM of either shape: SPKI DER (P-256, or secp256k1 SPKI for tolerance)
 * or a raw SEC1 point, which is secp256k1 (lite DIDs).
 */
export function parsePublicKeyPem (pem: Uint8Array | string): PublicKey {
  const block = decodePem(pem)
  if (block.type !== PEM_PUBLIC_KEY) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `expected a PUBLIC KEY PEM, got ${block.type}`)
  }
  const b = block.bytes
  if (b.length === 91 && bytesEqual(b.subarray(0, P256_SPKI_PREFIX.length), P256_SPKI_PREFIX)) {
    return { curve: 'p256', point: normalisePoint('p256', b.subarray(P256_SPKI_PREFIX.length)) }
  }
  if ((b.length === 65 && b[0] === 4) || (b.length === 33 && (b[0] === 2 || b[0] === 3))) {
    return { curve: 'secp256k1', point: normalisePoint('secp256k1', b) }
  }
  let ko: KeyObject
  try {
    ko = createPublicKey({ key: Buffer.from(b), format: 'der', type: 'spki' })
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'public key PEM is neither SPKI nor a raw point', { cause: e })
  }
  const jwk = ko.export({ format: 'jwk' })
  const curve: Curve | undefined = jwk.crv === 'P-256' ? 'p256' : jwk.crv === 'secp256k1' ? 'secp256k1' : undefined
  if (curve === undefined || jwk.x === undefined || jwk.y === undefined) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `unsupported public key curve ${String(jwk.crv)}`)
  }
  const point = concatBytes(Uint8Array.of(4), Buffer.from(jwk.x, 'base64url'), Buffer.from(jwk.y, 'base64url'))
  return { curve, point: normalisePoint(curve, point) }
}

const b64u = (b: Uint8Array): string => Buffer.from(b).toString('base64url')

/** PKCS#8 DER of a P-256 private key (the plaintext inside a sealed pvtKey.pem). */
export function p256Pkcs8Der (privateKey: Uint8Array): Uint8Array {
  const kp = keyPairFromPrivate('p256', privateKey)
  const ko = createPrivateKey({
    key: { kty: 'EC', crv: 'P-256', d: b64u(kp.privateKey), x: b64u(kp.publicKey.subarray(1, 33)), y: b64u(kp.publicKey.subarray(33)) },
    format: 'jwk'
  })
  return new Uint8Array(ko.export({ type: 'pkcs8', format: 'der' }))
}

/** Read a P-256 scalar from PKCS#8 DER (also accepts SEC1 `EC PRIVATE KEY` DER). */
export function p256FromPkcs8Der (der: Uint8Array): KeyPair {
  let ko: KeyObject | undefined
  for (const type of ['pkcs8', 'sec1'] as const) {
    try { ko = createPrivateKey({ key: Buffer.from(der), format: 'der', type }); break } catch { /* try next */ }
  }
  if (ko === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'private key is not PKCS#8 or SEC1 DER')
  const jwk = ko.export({ format: 'jwk' })
  if (jwk.crv !== 'P-256' || jwk.d === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'private key is not a P-256 key')
  const d = new Uint8Array(Buffer.from(jwk.d, 'base64url'))
  const padded = new Uint8Array(32); padded.set(d, 32 - d.length)
  return keyPairFromPrivate('p256', padded)
}
