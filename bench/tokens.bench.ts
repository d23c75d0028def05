/**
 * Token benchmark, with real DIDs (wallet keys, sealed key files) and a real LevelDB:
 * - mint 1,000 local test RBT (2,000 owner signatures, one atomic batch);
 * - balance of a DID holding 10,000 tokens (goal ≤ 10 ms);
 * - ingest (validate + store) a 1,000-block chain with 5 quorums per transfer;
 * - GET /svc/v1/dids/{did}/balances req/s against a real node (goal ≥ 5,000).
 */
import '../src/util/polyfill.js'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { performance } from 'node:perf_hooks'
import { Pool } from 'undici'
import { LevelStore } from '../src/storage/level-store.js'
import { TokenLedger } from '../src/storage/token-ledger.js'
import { levelTokenRepositories } from '../src/storage/token-repositories.js'
import { bytesToHex, sha3Hex } from '../src/tokenchain/index.js'
import { TokenService, didSignatureVerifier, staticDidResolver, type TokenSigner } from '../src/tokens/index.js'
import { createDid, didDocumentOf, type CreatedDid } from '../src/wallet/create-did.js'
import { DidSigner, QuorumSigner } from '../src/wallet/did-crypto.js'
import { buildTestTokenChain, type KeyRing } from '../test/unit/tokenchain/fixtures.js'
import { NodeProcess } from '../test/helpers/node-process.js'
import { isMain, median, percentile } from './stats.js'

const PASSWORD = 'bench-password'

function localOf (d: CreatedDid): { doc: ReturnType<typeof didDocumentOf>, pvtKey?: Uint8Array, pvtShare?: Uint8Array, quorumKey?: Uint8Array } {
  return { doc: didDocumentOf(d), pvtKey: d.privateFiles['pvtKey.pem'], pvtShare: d.privateFiles['pvtShare.png'], quorumKey: d.privateFiles['quorumPrivKey.pem'] }
}

function tokenSigner (d: CreatedDid): TokenSigner {
  const s = new DidSigner(localOf(d), async () => ({ password: PASSWORD }))
  return { did: d.did, sign: async (h) => bytesToHex(await s.pvtSign(h)) }
}

async function service (dbDir: string, docs: CreatedDid[]): Promise<{ store: LevelStore, svc: TokenService }> {
  const store = new LevelStore(dbDir)
  await store.open()
  const svc = new TokenService({
    ledger: new TokenLedger(store, sha3Hex),
    repos: levelTokenRepositories(store),
    verifier: didSignatureVerifier(staticDidResolver(docs.map(didDocumentOf))),
    localMint: { allowed: true, refusal: '' }
  })
  return { store, svc }
}

const ownerKeys = new Map<string, QuorumSigner>()
function ownerSignSync (did: string, msg: string): Uint8Array {
  const s = ownerKeys.get(did)
  if (s === undefined) throw new Error('owner key not opened')
  return s.pvtSign(msg)
}

function buildWithOwners (ring: KeyRing, transfers: number, quorums: string[], owners: string[]): ReturnType<typeof buildTestTokenChain> {
  // buildTestTokenChain draws owners and quorums from ring.newDid(): feed it ours in order
  const seq = [...Array.from({ length: transfers + 1 }, (_, k) => owners[k % 2]!), ...quorums]
  let k = 0
  const r = ring as unknown as { newDid: () => string }
  r.newDid = () => seq[k++]!
  return buildTestTokenChain(ring, transfers, quorums.length)
}

export async function run (): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {}
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-bench-tokens-'))
  try {
    const owner = await createDid({ type: 0, password: PASSWORD })
    // the database sits where a test-net node started with -p <dir> keeps it, so the HTTP part reads these tokens
    const { store, svc } = await service(join(dir, 'Rubix', 'TestNet', 'db'), [owner])
    const signer = tokenSigner(owner)
    await svc.mintLocalRbt({ did: owner.did, count: 10, startIndex: 1_000_000 }, signer) // warm-up (opens the key)
    let t = performance.now()
    await svc.mintLocalRbt({ did: owner.did, count: 1000, startIndex: 0 }, signer)
    const mintMs = performance.now() - t
    out.mint_1000_tokens_ms = Math.round(mintMs)
    out.mint_per_token_ms = +(mintMs / 1000).toFixed(2)
    for (let i = 1; i < 10; i++) await svc.mintLocalRbt({ did: owner.did, count: 1000, startIndex: i * 1000 }, signer)
    const bal = await svc.rbtBalance(owner.did)
    out.holding_tokens = bal.balance
    const lat: number[] = []
    for (let i = 0; i < 2000; i++) {
      t = performance.now()
      await svc.balances(owner.did)
      lat.push(performance.now() - t)
    }
    out.balance_10k_tokens_median_ms = +median(lat).toFixed(3)
    out.balance_10k_tokens_p99_ms = +percentile(lat, 99).toFixed(3)
    t = performance.now()
    const list = await svc.listTokens(owner.did, 'rbt')
    out.list_10k_tokens_ms = Math.round(performance.now() - t)
    if (list.length !== 10_010) throw new Error(`expected 10,010 tokens, listed ${list.length}`)
    await store.close()

    // 1,000-block chain with real DIDs: validate and store through the ingestion path
    const { chain, dids } = await realChain(1000)
    const dir2 = mkdtempSync(join(tmpdir(), 'rbtnode-bench-chain-'))
    try {
      const s2 = await service(join(dir2, 'db'), dids)
      t = performance.now()
      const r = await s2.svc.ingestChain(chain.tokenId, chain.envelopes, { status: 'Free', tokenContent: chain.tokenContent })
      out.ingest_1000_block_chain_ms = Math.round(performance.now() - t)
      out.ingest_signatures_verified = r.validation.signaturesVerified
      await s2.store.close()
    } finally { rmSync(dir2, { recursive: true, force: true }) }

    // GET balance over HTTP against a real node holding the 10,010 tokens minted above
    const node = await new NodeProcess({ dir, extraArgs: ['-testNet'] }).start()
    try {
      const pool = new Pool(node.url, { connections: 32, pipelining: 1 })
      const path = `/svc/v1/dids/${owner.did}/balances`
      const until = performance.now() + 3000
      let count = 0
      const hl: number[] = []
      const check = await pool.request({ method: 'GET', path })
      const body = await check.body.json() as { result: { rbt_balance: Array<{ balance: number }> } }
      if (body.result.rbt_balance[0]!.balance !== 10_010) throw new Error(`node reports ${body.result.rbt_balance[0]!.balance} RBT`)
      await Promise.all(Array.from({ length: 32 }, async () => {
        while (performance.now() < until) {
          const t0 = performance.now()
          const res = await pool.request({ method: 'GET', path })
          await res.body.text()
          if (res.statusCode !== 200) throw new Error(`HTTP ${res.statusCode}`)
          hl.push(performance.now() - t0)
          count++
        }
      }))
      out.get_balance_req_per_s = Math.round(count / 3)
      out.get_balance_p50_ms = +median(hl).toFixed(2)
      await pool.close()
    } finally { await node.stop() }
  } finally {
    rmSync(dir, { recursive: true, force: true })
  }
  return out
}

/** A chain of `blocks` blocks between two real owners, every transfer signed by five real quorums. */
async function realChain (blocks: number): Promise<{ chain: ReturnType<typeof buildTestTokenChain>, dids: CreatedDid[] }> {
  const dids: CreatedDid[] = []
  for (let i = 0; i < 7; i++) dids.push(await createDid({ type: 0, password: PASSWORD, quorumPassword: PASSWORD }))
  const quorumSigners = new Map<string, QuorumSigner>()
  for (const d of dids) {
    quorumSigners.set(d.did, await QuorumSigner.open(localOf(d), { quorumPassword: PASSWORD }))
    ownerKeys.set(d.did, await openOwner(d))
  }
  // the fixtures' builder signs through ring.sign(did, hex, role): hand it the wallet keys
  const ring = {
    newDid: () => '',
    sign: (did: string, msg: string, role: 'owner' | 'quorum' = 'owner') =>
      bytesToHex(role === 'quorum' ? quorumSigners.get(did)!.pvtSign(msg) : ownerSignSync(did, msg))
  }
  const chain = buildWithOwners(ring as unknown as KeyRing, blocks - 1, dids.slice(2, 7).map((d) => d.did), [dids[0]!.did, dids[1]!.did])
  return { chain, dids }
}

/** The owner key of a DID opened once for synchronous signing (through QuorumSigner's key slot). */
async function openOwner (d: CreatedDid): Promise<QuorumSigner> {
  return await QuorumSigner.open({ doc: { ...didDocumentOf(d), files: { ...d.publicFiles, 'quorumPubKey.pem': d.publicFiles['pubKey.pem']! } }, quorumKey: d.privateFiles['pvtKey.pem'], pvtShare: d.privateFiles['pvtShare.png'] }, { quorumPassword: PASSWORD })
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) console.log(`${k}  ${String(v)}`)
}

