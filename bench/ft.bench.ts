/**
 * FT benchmark, with a real DID (wallet keys) and a real LevelDB:
 * - mint 10,000 FTs backed by 10 RBT (one commit; signatures: one burn + one per 100 FTs);
 * - what a sender reads to take 1 and 1,000 of them (the free-FT index, then the chosen records);
 * - what a quorum does for a 1,000-FT transfer: build the bundle, validate every FT chain and
 *   its backing (fresh signature cache), and the bundle's size on the wire: unpacked (each chain
 *   whole), packed (each shared block once) and compressed (packed, gzip).
 */
import '../src/util/polyfill.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { buildBundle, validateBundleToken } from '../src/consensus/bundle.js'
import { consensusLedger } from '../src/node/consensus/ledger-adapter.js'
import { compressBundle, packBundle } from '../src/node/consensus/consensus-network.js'
import { LevelStore } from '../src/storage/level-store.js'
import { TokenLedger } from '../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../src/storage/token-repositories.js'
import { bytesToHex, sha3Hex } from '../src/tokenchain/index.js'
import { FtService } from '../src/tokens/ft-service.js'
import { TokenService, didSignatureVerifier, staticDidResolver, type TokenSigner } from '../src/tokens/index.js'
import { createDid, didDocumentOf } from '../src/wallet/create-did.js'
import { DidSigner } from '../src/wallet/did-crypto.js'
import { isMain } from './stats.js'

const PASSWORD = 'bench-password'

/** Bytes of the JSON the rpc layer would send (byte strings as base64). */
function wireBytes (v: unknown): number {
  return Buffer.byteLength(JSON.stringify(v, (_k, x: unknown) => x instanceof Uint8Array ? { $b64: Buffer.from(x).toString('base64') } : x))
}

export async function run (): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {}
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bench-ft-'))
  try {
    const owner = await createDid({ type: 0, password: PASSWORD })
    const store = new LevelStore(join(dir, 'db'))
    await store.open()
    const ledger = new TokenLedger(store, sha3Hex)
    const repos = levelTokenRepositories(store)
    const verifier = didSignatureVerifier(staticDidResolver([didDocumentOf(owner)]))
    const tokens = new TokenService({ ledger, repos, verifier, localMint: { allowed: true, refusal: '' } })
    const fts = new FtService({ store, ledger, repos, tokens })
    const s = new DidSigner({ doc: didDocumentOf(owner), pvtKey: owner.privateFiles['pvtKey.pem'], pvtShare: owner.privateFiles['pvtShare.png'] }, async () => ({ password: PASSWORD }))
    let signatures = 0
    const signer: TokenSigner = { did: owner.did, sign: async (h) => { signatures++; return bytesToHex(await s.pvtSign(h)) } }
    await tokens.mintLocalRbt({ did: owner.did, count: 11, startIndex: 0 }, signer)
    signatures = 0
    let t = performance.now()
    await fts.mint({ did: owner.did, ftName: 'BENCH', ftCount: 10_000, tokenCount: 10, startIndex: 0 }, signer)
    out.mint_10000_fts_ms = Math.round(performance.now() - t)
    out.mint_signatures = signatures

    const cl = consensusLedger(store, ledger, repos)
    // what a sender does to take FTs out of the 10,000: the free-FT index, then the chosen records
    t = performance.now()
    await cl.tokensById(await cl.freeFts(owner.did, 'BENCH', owner.did, 1))
    out.choose_1_of_10000_fts_ms = Number((performance.now() - t).toFixed(2))
    t = performance.now()
    const ids = await cl.freeFts(owner.did, 'BENCH', owner.did, 1000)
    await cl.tokensById(ids)
    out.choose_1000_of_10000_fts_ms = Math.round(performance.now() - t)
    t = performance.now()
    const bundle = await buildBundle(cl, ids)
    out.bundle_1000_fts_ms = Math.round(performance.now() - t)
    t = performance.now()
    const cache = new Set<string>()
    for (const id of ids) await validateBundleToken(bundle, id, verifier, cache)
    out.validate_1000_fts_ms = Math.round(performance.now() - t)
    out.bundle_wire_kib_packed = Math.round(wireBytes(packBundle(bundle)) / 1024)
    out.bundle_wire_kib_compressed = Math.round(wireBytes(compressBundle(packBundle(bundle))) / 1024)
    out.bundle_wire_kib_unpacked = Math.round(wireBytes(bundle) / 1024)
    await store.close()
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return out
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) console.log(`${k}  ${String(v)}`)
}
