/**
 * Signature benchmark: secp256k1 sign and verify of raw 32-byte digests per backend
 * (src/wallet/secp-backend.ts: libsecp256k1 or noble), and P-256 for comparison.
 * `run()` returns the figures in µs per operation; executed directly it prints them.
 *
 * - `*_sign_us`: `signMessage` (key check, fresh extra entropy, DER), what every signer calls.
 * - `*_verify_cached_us`: one `Verifier` per key, reused (what did-crypto's per-DID cache does).
 * - `*_verify_cold_us`: a new `Verifier` per signature (a key seen once: parsing included).
 * - `p256_nodecrypto_sha256_verify_us`: node:crypto with a cached KeyObject, over SHA-256 of the
 *   32 bytes: not what the reference signs (node:crypto cannot take a raw digest), shown only as the
 *   bound that OpenSSL would give.
 */
import { pathToFileURL } from 'node:url'
import { createHash, createPublicKey, createPrivateKey, sign as cryptoSign, verify as cryptoVerify } from 'node:crypto'
import { generateKeyPair } from '../src/wallet/keys.js'
import { signMessage, Verifier } from '../src/wallet/signing.js'
import { nativeBackend, secpBackend, setSecpBackend, type SecpBackendName } from '../src/wallet/secp-backend.js'

const DIGESTS = Array.from({ length: 64 }, (_, i) => new Uint8Array(Buffer.from(createHash('sha3-256').update(`m${i}`).digest('hex').slice(0, 32))))

function usPerOp (f: (i: number) => unknown, minMs = 500): number {
  for (let i = 0; i < 20; i++) f(i)
  let n = 0
  const t = performance.now()
  while (performance.now() - t < minMs) { f(n); n++ }
  return Math.round((performance.now() - t) * 1000 / n * 10) / 10
}

function secpFigures (name: SecpBackendName, out: Record<string, string | number>): void {
  setSecpBackend(name)
  const kp = generateKeyPair('secp256k1')
  const key = { curve: 'secp256k1' as const, point: kp.publicKey }
  out[`secp256k1_${name}_sign_us`] = usPerOp(i => signMessage('secp256k1', kp.privateKey, DIGESTS[i % 64]!))
  const sigs = DIGESTS.map(d => signMessage('secp256k1', kp.privateKey, d))
  const v = new Verifier(key)
  out[`secp256k1_${name}_verify_cached_us`] = usPerOp(i => { if (!v.verify(DIGESTS[i % 64]!, sigs[i % 64]!)) throw new Error('verify failed') })
  out[`secp256k1_${name}_verify_cold_us`] = usPerOp(i => { if (!new Verifier(key).verify(DIGESTS[i % 64]!, sigs[i % 64]!)) throw new Error('verify failed') })
}

export async function run (): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {}
  const before = secpBackend().name
  try {
    out.secp256k1_backend_default = before
    secpFigures('noble', out)
    if (nativeBackend() !== undefined) secpFigures('native', out)
    else out.secp256k1_native = 'unavailable'
  } finally {
    setSecpBackend(undefined)
  }

  const kp = generateKeyPair('p256')
  const key = { curve: 'p256' as const, point: kp.publicKey }
  out.p256_noble_sign_us = usPerOp(i => signMessage('p256', kp.privateKey, DIGESTS[i % 64]!))
  const sigs = DIGESTS.map(d => signMessage('p256', kp.privateKey, d))
  const v = new Verifier(key)
  out.p256_noble_verify_cached_us = usPerOp(i => { if (!v.verify(DIGESTS[i % 64]!, sigs[i % 64]!)) throw new Error('verify failed') })
  out.p256_noble_verify_cold_us = usPerOp(i => { if (!new Verifier(key).verify(DIGESTS[i % 64]!, sigs[i % 64]!)) throw new Error('verify failed') })
  const b64 = (x: Uint8Array): string => Buffer.from(x).toString('base64url')
  const jwk = { kty: 'EC', crv: 'P-256', x: b64(kp.publicKey.subarray(1, 33)), y: b64(kp.publicKey.subarray(33)) }
  const pub = createPublicKey({ key: jwk, format: 'jwk' })
  const priv = createPrivateKey({ key: { ...jwk, d: b64(kp.privateKey) }, format: 'jwk' })
  out.p256_nodecrypto_sha256_sign_us = usPerOp(i => cryptoSign('sha256', DIGESTS[i % 64]!, priv))
  const nsigs = DIGESTS.map(d => cryptoSign('sha256', d, priv))
  out.p256_nodecrypto_sha256_verify_us = usPerOp(i => { if (!cryptoVerify('sha256', DIGESTS[i % 64]!, pub, nsigs[i % 64]!)) throw new Error('verify failed') })
  return out
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(r => { for (const [k, v] of Object.entries(r)) console.log(`${k.padEnd(36)} ${v}`) }, e => { console.error(e); process.exitCode = 1 })
}
