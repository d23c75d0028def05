/**
 * Wallet benchmark: DID creation per type, image-signature and key-signature throughput.
 * `run()` returns the figures; executed directly it prints them.
 */
import { pathToFileURL } from 'node:url'
import { createHash } from 'node:crypto'
import { createDid, didDocumentOf } from '../src/wallet/create-did.js'
import { DidSigner, QuorumSigner, verifyDidSignature, verifyPvtSignature, clearDidCaches, type DidSignature } from '../src/wallet/did-crypto.js'
import { generateShares } from '../src/wallet/nlss.js'
import { writePngRgb } from '../src/wallet/image.js'
import { randomBytes } from 'node:crypto'
import { unsealPrivateKey } from '../src/wallet/seal.js'

const hashes = Array.from({ length: 64 }, (_, i) => createHash('sha3-256').update(`msg-${i}`).digest('hex'))

async function timeMs (f: () => Promise<unknown> | unknown, n = 1): Promise<number> {
  const t = performance.now()
  for (let i = 0; i < n; i++) await f()
  return (performance.now() - t) / n
}

function rate (ms: number): number { return Math.round(1000 / ms) }

async function opsPerSec (f: (i: number) => unknown, minMs = 400): Promise<number> {
  f(0)
  let n = 0
  const t = performance.now()
  while (performance.now() - t < minMs) { f(n); n++ }
  return Math.round(n * 1000 / (performance.now() - t))
}

export async function run (): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {}
  const r2 = (x: number): number => Math.round(x * 10) / 10

  const basic = await createDid({ type: 0, password: 'p' }) // warm-up
  out['createdid_basic_ms'] = r2(await timeMs(() => createDid({ type: 0, password: 'p' }), 3))
  out['createdid_standard_ms'] = r2(await timeMs(() => createDid({ type: 1, image: writePngRgb(new Uint8Array(randomBytes(196608)), 256, 256), publicKeyHex: '04' + '6b17d1f2e12c4247f8bce6e563a440f277037d812deb33a0f4a13945d898c296' + '4fe342e2fe1a7f9b8ee7eb4a7c0f9e162bce33576b315ececbb6406837bf51f5' }), 3))
  out['createdid_wallet_ms'] = r2(await timeMs(() => createDid({ type: 2, publicFiles: { 'did.png': basic.publicFiles['did.png']!, 'pubShare.png': basic.publicFiles['pubShare.png']!, 'pubKey.pem': basic.publicFiles['pubKey.pem']! } }), 3))
  out['createdid_lite_ms'] = r2(await timeMs(() => createDid({ type: 4, password: 'p' }), 3))
  out['share_generation_ms'] = r2(await timeMs(() => generateShares(new Uint8Array(196608)), 3))
  out['unseal_scrypt_ms'] = r2(await timeMs(() => unsealPrivateKey(basic.privateFiles['pvtKey.pem']!, 'p'), 5))

  // basic (image signature = share walk + P-256)
  const bdoc = didDocumentOf(basic)
  const signer = new DidSigner({ doc: bdoc, pvtShare: basic.privateFiles['pvtShare.png'], pvtKey: basic.privateFiles['pvtKey.pem'] }, async () => ({ password: 'p' }))
  await signer.sign(hashes[0]!)
  const q = await QuorumSigner.open({ doc: bdoc, pvtShare: basic.privateFiles['pvtShare.png'], quorumKey: basic.privateFiles['quorumPrivKey.pem'] }, { quorumPassword: 'p' })
  out['basic_sign_per_s'] = await opsPerSec(i => q.sign(hashes[i % 64]!))
  const bsigs: DidSignature[] = hashes.map(h => q.sign(h))
  clearDidCaches()
  out['basic_first_verify_ms'] = r2(await timeMs(() => verifyDidSignature(bdoc, hashes[0]!, bsigs[0]!, { quorum: true })))
  out['basic_verify_per_s'] = await opsPerSec(i => { if (!verifyDidSignature(bdoc, hashes[i % 64]!, bsigs[i % 64]!, { quorum: true })) throw new Error('verify failed') })
  const psigs = hashes.map(h => q.pvtSign(h))
  out['p256_pvt_verify_per_s'] = await opsPerSec(i => verifyPvtSignature(bdoc, hashes[i % 64]!, psigs[i % 64]!, { quorum: true }))

  // lite (secp256k1)
  const lite = await createDid({ type: 4, password: 'p' })
  const ldoc = didDocumentOf(lite)
  const lq = await QuorumSigner.open({ doc: ldoc, pvtKey: lite.privateFiles['pvtKey.pem'] }, { privatePassword: 'p' })
  out['lite_sign_per_s'] = await opsPerSec(i => lq.sign(hashes[i % 64]!))
  const lsigs = hashes.map(h => lq.sign(h))
  out['lite_verify_per_s'] = await opsPerSec(i => { if (!verifyDidSignature(ldoc, hashes[i % 64]!, lsigs[i % 64]!)) throw new Error('verify failed') })
  return out
}

if (process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href) {
  run().then(r => { for (const [k, v] of Object.entries(r)) console.log(`${k.padEnd(28)} ${v}`) }, e => { console.error(e); process.exitCode = 1 })
}
