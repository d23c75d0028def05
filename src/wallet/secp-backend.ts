/**
 * The one place that chooses how secp256k1 ECDSA over a raw digest is computed.
 *
 * - `native`: libsecp256k1 through the `secp256k1` package's N-API binding (a prebuilt binary
 *   shipped inside the package, loaded by node-gyp-build; no compiler is involved). Its pure-JS
 *   fallback (elliptic) is never used: the binding is loaded directly and, when it cannot be,
 *   this module falls back to noble instead.
 * - `noble`: `@noble/curves`, pure JavaScript (what the node used before; always available).
 *
 * Both produce the same bytes: strict DER, low-S, RFC 6979 nonces with the same optional extra
 * entropy appended to the HMAC-DRBG seed (key || digest || entropy). test/unit/wallet/secp-backend.test.ts
 * proves it. `RBTNODE_SECP_BACKEND=native|noble` forces one (a forced `native` that cannot load is
 * an error, not a silent fallback); unset or `auto`, native when it loads, else noble.
 *
 * Callers hand in what `signing.ts` has already decided: the at most 32 signed bytes, a valid
 * 32-byte scalar, and for verification a range-checked (r, s) and a validated 65-byte point.
 */
import { createRequire } from 'node:module'
import { randomBytes } from 'node:crypto'
import { secp256k1 } from '@noble/curves/secp256k1.js'
import { compare as compareBytes, parseDerSignature, subtract as subtractBytes } from './der-signature.js'

export type SecpBackendName = 'native' | 'noble'

export interface SecpBackend {
  readonly name: SecpBackendName
  /** Where the implementation came from, for the start-up log line. */
  readonly detail: string
  /**
   * DER signature (low-S) over `digest` (1..32 bytes, read as a big-endian integer), RFC 6979
   * nonce; `extraEntropy` (32 bytes), when given, is mixed into the nonce derivation.
   */
  sign: (digest: Uint8Array, privateKey: Uint8Array, extraEntropy?: Uint8Array) => Uint8Array
  /** ECDSA check of (r, s), both already in [1, n-1], either S half, against a 65-byte point. */
  verify: (digest: Uint8Array, r: bigint, s: bigint, point: Uint8Array) => boolean
  /**
   * The same check for a DER signature, parsed on bytes (der-signature.ts) with no bigint; false
   * for a signature that is not strict DER in range. Only the native backend has it.
   */
  verifyDer?: (digest: Uint8Array, signature: Uint8Array, point: Uint8Array) => boolean
  /**
   * The 65-byte form of a 33-byte (02/03) or 65-byte (04) point, or undefined when it is not a
   * point on the curve. Only the native backend has it (noble's decompression is a bigint square root).
   */
  uncompressPoint?: (point: Uint8Array) => Uint8Array | undefined
  /**
   * The 65-byte public point of a valid 32-byte secret key. Only the native backend has it: noble's
   * first scalar multiplication builds its base-point tables (about 20 ms, paid by every node that
   * opens a key file at start).
   */
  publicKey?: (privateKey: Uint8Array) => Uint8Array
}

const N = secp256k1.Point.Fn.ORDER
const HALF_N = N >> 1n
const N_BYTES = bigTo32(N)
const HALF_N_BYTES = bigTo32(HALF_N)

/** The digest as the 32-byte big-endian encoding of (bits2int(digest) mod n). */
function digest32 (digest: Uint8Array): Uint8Array {
  let out: Uint8Array
  if (digest.length === 32) {
    out = digest
  } else {
    out = new Uint8Array(32)
    out.set(digest, 32 - digest.length)
  }
  // ≥ n only for digests starting 0xffff…ffff (never for ASCII hex); reduce as RFC 6979 does
  if (out[0] === 0xff && out[1] === 0xff && out[2] === 0xff && out[3] === 0xff) {
    const e = BigInt('0x' + Buffer.from(out).toString('hex'))
    if (e >= N) out = bigTo32(e - N)
  }
  return out
}

function bigTo32 (x: bigint): Uint8Array {
  return new Uint8Array(Buffer.from(x.toString(16).padStart(64, '0'), 'hex'))
}

// ------------------------------------------------------------------ noble

export const nobleBackend: SecpBackend = {
  name: 'noble',
  detail: '@noble/curves (pure JavaScript)',
  sign: (digest, privateKey, extraEntropy) =>
    secp256k1.sign(digest, privateKey, { prehash: false, format: 'der', lowS: true, extraEntropy: extraEntropy ?? false }),
  verify: (digest, r, s, point) => {
    // the pure-JS path keeps its own per-key window tables (signing.ts Verifier); this is the one-off form
    const compact = new secp256k1.Signature(r, s).toBytes('compact')
    return secp256k1.verify(compact, digest, point, { prehash: false, format: 'compact', lowS: false })
  }
}

// ------------------------------------------------------------------ native

interface NativeBinding {
  contextRandomize: (seed: Uint8Array) => void
  publicKeyConvert: (pubkey: Uint8Array, compressed: boolean) => Uint8Array
  publicKeyCreate: (seckey: Uint8Array, compressed: boolean) => Uint8Array
  ecdsaSign: (msg32: Uint8Array, seckey: Uint8Array, options?: { data?: Uint8Array }) => { signature: Uint8Array, recid: number }
  ecdsaVerify: (sig: Uint8Array, msg32: Uint8Array, pubkey: Uint8Array) => boolean
  signatureExport: (sig: Uint8Array) => Uint8Array
}

let nativeLoadError: Error | undefined
let nativeBackendCache: SecpBackend | null | undefined

function loadNativeBinding (): { binding: NativeBinding, detail: string } {
  const require = createRequire(import.meta.url)
  const pkgJson = require.resolve('secp256k1/package.json')
  const version = (require('secp256k1/package.json') as { version: string }).version
  // `secp256k1/bindings` is the N-API path only; plain `secp256k1` would silently use elliptic
  const binding = require('secp256k1/bindings') as NativeBinding
  let file = 'binding'
  try {
    const gypBuild = require('node-gyp-build') as { path: (dir: string) => string }
    file = gypBuild.path(pkgJson.slice(0, -'/package.json'.length)).split(/[\\/]/).slice(-2).join('/')
  } catch { /* the name is for the log line only */ }
  // blinding of the signing context against side channels; changes no signature
  binding.contextRandomize(randomBytes(32))
  return { binding, detail: `libsecp256k1 (secp256k1 ${version}, ${file})` }
}

/** The native backend, or undefined when the binding cannot load on this machine. */
export function nativeBackend (): SecpBackend | undefined {
  if (nativeBackendCache !== undefined) return nativeBackendCache ?? undefined
  let loaded: ReturnType<typeof loadNativeBinding>
  try {
    loaded = loadNativeBinding()
  } catch (e) {
    nativeLoadError = e instanceof Error ? e : new Error(String(e))
    nativeBackendCache = null
    return undefined
  }
  const b = loaded.binding
  const compact = new Uint8Array(64)
  nativeBackendCache = {
    name: 'native',
    detail: loaded.detail,
    sign: (digest, privateKey, extraEntropy) => {
      const opts = extraEntropy !== undefined ? { data: extraEntropy } : {}
      return b.signatureExport(b.ecdsaSign(digest32(digest), privateKey, opts).signature)
    },
    verify: (digest, r, s, point) => {
      // libsecp256k1 accepts low-S only; (r, n-s) verifies exactly when (r, s) does
      compact.set(bigTo32(r), 0)
      compact.set(bigTo32(s > HALF_N ? N - s : s), 32)
      return b.ecdsaVerify(compact, digest32(digest), point)
    },
    uncompressPoint: (point) => {
      // libsecp256k1 also parses the "hybrid" 06/07 form, which noble (and so the node) refuses
      const ok = (point.length === 33 && (point[0] === 2 || point[0] === 3)) || (point.length === 65 && point[0] === 4)
      if (!ok) return undefined
      try { return b.publicKeyConvert(point, false) } catch { return undefined }
    },
    publicKey: (privateKey) => b.publicKeyCreate(privateKey, false),
    verifyDer: (digest, signature, point) => {
      const rs = parseDerSignature(signature, N_BYTES)
      if (rs === undefined) return false
      compact.set(rs.r, 0)
      compact.set(compareBytes(rs.s, HALF_N_BYTES) > 0 ? subtractBytes(N_BYTES, rs.s) : rs.s, 32)
      return b.ecdsaVerify(compact, digest32(digest), point)
    }
  }
  return nativeBackendCache
}

/** Why the native backend did not load (undefined when it did, or was not tried). */
export function nativeUnavailableReason (): string | undefined {
  return nativeLoadError?.message.split('\n')[0]
}

// ------------------------------------------------------------------ choice

const ENV = 'RBTNODE_SECP_BACKEND'
let current: SecpBackend | undefined

function choose (wanted: string | undefined): SecpBackend {
  const w = (wanted ?? '').trim().toLowerCase()
  if (w === 'noble') return nobleBackend
  if (w === 'native') {
    const n = nativeBackend()
    if (n === undefined) throw new Error(`${ENV}=native, but libsecp256k1 could not be loaded: ${nativeUnavailableReason() ?? 'unknown reason'}`)
    return n
  }
  if (w !== '' && w !== 'auto') throw new Error(`${ENV} must be native, noble or auto, not ${JSON.stringify(wanted)}`)
  return nativeBackend() ?? nobleBackend
}

/** The backend in use (chosen on first use from RBTNODE_SECP_BACKEND). */
export function secpBackend (): SecpBackend {
  if (current === undefined) current = choose(process.env[ENV])
  return current
}

/**
 * Use another backend from now on (tests, benchmarks): 'native', 'noble', 'auto', or undefined
 * to choose again from the environment. Returns the backend now in use.
 */
export function setSecpBackend (name: SecpBackendName | 'auto' | undefined): SecpBackend {
  current = choose(name ?? process.env[ENV])
  return current
}

/** One line for the node's start-up log. */
export function describeSecpBackend (): string {
  const b = secpBackend()
  const why = b.name === 'noble' && nativeUnavailableReason() !== undefined ? ` (native unavailable: ${nativeUnavailableReason()!})` : ''
  const wanted = (process.env[ENV] ?? '').trim().toLowerCase()
  const forced = wanted === 'native' || wanted === 'noble' ? `, forced by ${ENV}` : ''
  return `secp256k1 signatures: ${b.name} backend, ${b.detail}${forced}${why}`
}
