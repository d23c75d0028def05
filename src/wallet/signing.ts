/**
 * ECDSA exactly as the reference signs: the input bytes are taken as the digest itself
 * (no hashing) and only their leftmost 32 bytes are used. Callers almost always pass the
 * ASCII of a hex hash string, so the first 32 hex characters are what gets signed.
 * Signatures are strict ASN.1 DER; high-S signatures are valid (the reference makes them).
 */
import { RbtError, ErrorCode } from '../util/errors.js'
import { utf8 } from './bytes.js'
import { randomBytes } from 'node:crypto'
import { curveImpl, normalisePoint, type Curve, type PublicKey } from './keys.js'
import { secpBackend } from './secp-backend.js'
import { p256VerifyOpenssl } from './p256-openssl.js'
import { Lru } from '../util/lru.js'

/** The bytes ECDSA actually covers for a given input. */
export function signedPortion (message: Uint8Array): Uint8Array {
  if (!(message instanceof Uint8Array) || message.length === 0) {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'message to sign must be non-empty bytes')
  }
  return message.length > 32 ? message.subarray(0, 32) : message
}

export interface SignOptions {
  /**
   * 32 bytes mixed into the RFC 6979 nonce derivation; false: plain RFC 6979 (deterministic).
   * Default: 32 fresh random bytes. Only tests pass anything else.
   */
  extraEntropy?: Uint8Array | false
}

/**
 * DER ECDSA signature (low-S) over `signedPortion(message)`. Nonces are RFC 6979 plus fresh
 * entropy. secp256k1 goes through the selected backend (secp-backend.ts: libsecp256k1 or noble,
 * the same bytes either way); P-256 through noble.
 */
export function signMessage (curve: Curve, privateKey: Uint8Array, message: Uint8Array, opts?: SignOptions): Uint8Array {
  // the key's validity only (deriving its public key cost a third of every signature)
  const impl = curveImpl(curve)
  if (!(privateKey instanceof Uint8Array) || privateKey.length !== 32 || !impl.utils.isValidSecretKey(privateKey)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `invalid ${curve} private key`)
  }
  const extra = opts?.extraEntropy === false ? undefined : opts?.extraEntropy ?? new Uint8Array(randomBytes(32))
  if (curve === 'secp256k1') return secpBackend().sign(signedPortion(message), privateKey, extra)
  return impl.sign(signedPortion(message), privateKey, { prehash: false, format: 'der', lowS: true, extraEntropy: extra ?? false })
}

/** Sign the ASCII text of a hex hash (block hash, RAC hash, …), the common case. */
export function signHashHex (curve: Curve, privateKey: Uint8Array, hashHex: string): Uint8Array {
  return signMessage(curve, privateKey, utf8(hashHex))
}

/**
 * Signatures that verified lately, by key, signed bytes and signature: a node checks many of the
 * same ones again within a transfer (a quorum the sender's and its fellows' in PREPARE, SIGN and the
 * claims; a receiver the block's again in the chain), a quarter of all its checks. Only a valid
 * signature is kept (a bad one takes no room), and an entry names every byte the answer depends on.
 */
const verified = new Lru<true>(4096)
// (the secp256k1 backend is named in the key: an answer of one is never taken for the other's)
const verifiedKey = (curve: Curve, point: Uint8Array, msg: Uint8Array, signature: Uint8Array): string =>
  `${curve === 'secp256k1' ? secpBackend().name : curve}.${point.length}.${msg.length}.${Buffer.from(point.buffer, point.byteOffset, point.length).toString('latin1')}${Buffer.from(msg.buffer, msg.byteOffset, msg.length).toString('latin1')}${Buffer.from(signature.buffer, signature.byteOffset, signature.length).toString('latin1')}`

/** Number of verifications after which a cached key gets a precomputed multiplication table. */
const PRECOMPUTE_AFTER = 2
const PRECOMPUTE_WINDOW = 4

/**
 * A parsed public key ready for repeated verification. node:crypto cannot verify a
 * signature over a raw (unhashed) digest: secp256k1 goes to the selected backend, P-256 to
 * OpenSSL's point multiplications (p256-openssl.ts), and what is left (secp256k1 without the
 * native binding, P-256's rare degenerate cases) to noble's point arithmetic, where keys used
 * repeatedly get a window table.
 */
export class Verifier {
  readonly curve: Curve
  readonly point: Uint8Array
  // the point for noble's arithmetic, made at first noble use (libsecp256k1 parses its own)
  private q: ReturnType<typeof curveImpl>['Point']['BASE'] | undefined
  private uses = 0
  // P-256: the key's affine coordinates for OpenSSL's multiplications (p256-openssl.ts)
  private qx = -1n
  private qy = -1n

  constructor (key: PublicKey) {
    this.curve = key.curve
    this.point = normalisePoint(key.curve, key.point)
  }

  private get Q (): ReturnType<typeof curveImpl>['Point']['BASE'] {
    if (this.q === undefined) this.q = curveImpl(this.curve).Point.fromBytes(this.point)
    return this.q
  }

  /** True when `signature` (DER) is valid for `message` under the reference rule. Never throws on bad signatures. */
  verify (message: Uint8Array, signature: Uint8Array): boolean {
    if (!(signature instanceof Uint8Array) || signature.length < 8 || signature.length > 80) return false
    const msg = signedPortion(message)
    const k = verifiedKey(this.curve, this.point, msg, signature)
    if (verified.get(k) === true) return true
    const ok = this.check(msg, signature)
    if (ok) verified.set(k, true)
    return ok
  }

  private check (msg: Uint8Array, signature: Uint8Array): boolean {
    if (this.curve === 'secp256k1') {
      // libsecp256k1: the DER is parsed on bytes, no bigint is made
      const verifyDer = secpBackend().verifyDer
      if (verifyDer !== undefined) return verifyDer(msg, signature, this.point)
    }
    const impl = curveImpl(this.curve)
    const Fn = impl.Point.Fn
    let r: bigint, s: bigint
    try {
      const sig = impl.Signature.fromBytes(signature, 'der')
      r = sig.r; s = sig.s
    } catch {
      return false
    }
    if (r <= 0n || r >= Fn.ORDER || s <= 0n || s >= Fn.ORDER) return false
    if (this.curve === 'secp256k1') {
      const backend = secpBackend()
      if (backend.name === 'native') return backend.verify(msg, r, s, this.point)
    }
    // bits2int: the (at most 32) bytes as a big-endian integer, reduced mod n.
    const e = Fn.create(BigInt('0x' + Buffer.from(msg).toString('hex')))
    if (this.curve === 'p256') {
      if (this.qx < 0n) {
        this.qx = BigInt('0x' + Buffer.from(this.point.subarray(1, 33)).toString('hex'))
        this.qy = BigInt('0x' + Buffer.from(this.point.subarray(33, 65)).toString('hex'))
      }
      const ok = p256VerifyOpenssl(e, r, s, this.qx, this.qy)
      if (ok !== undefined) return ok
    }
    // lazily: building the table eagerly multiplies through the blinded constant-time path,
    // whose (wider) table verification never uses
    if (++this.uses === PRECOMPUTE_AFTER) this.Q.precompute(PRECOMPUTE_WINDOW, true)
    const w = Fn.inv(s)
    const u1 = Fn.mul(e, w)
    const u2 = Fn.mul(r, w)
    const a = u1 === 0n ? impl.Point.ZERO : impl.Point.BASE.multiplyUnsafe(u1)
    const R = a.add(this.Q.multiplyUnsafe(u2))
    if (R.is0()) return false
    return Fn.create(R.toAffine().x) === r
  }
}

/** One-off verification (prefer a cached `Verifier` for keys seen repeatedly). */
export function verifyMessage (key: PublicKey, message: Uint8Array, signature: Uint8Array): boolean {
  return new Verifier(key).verify(message, signature)
}

export function verifyHashHex (key: PublicKey, hashHex: string, signature: Uint8Array): boolean {
  return new Verifier(key).verify(utf8(hashHex), signature)
}
