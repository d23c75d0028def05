/**
 * Token-chain benchmark: building/encoding/hashing blocks and validating whole chains with real
 * P-256 signatures. `run()` returns the figures; executed directly it prints them.
 *
 * Two signature set-ups:
 * - node:crypto with cached KeyObjects (sign/verify SHA-256 of the 32 signed bytes): the fastest
 *   verifier available in Node, but node:crypto cannot do ECDSA over a raw digest, so this variant
 *   is not wire-compatible with the reference;
 * - noble-curves raw ECDSA over the leftmost 32 ASCII bytes (what the reference does).
 * And the same raw rule on secp256k1 (lite DIDs' keys) through the wallet's signer and verifier,
 * once per secp256k1 backend (src/wallet/secp-backend.ts): `secp_<backend>_*`.
 *
 * `chain_validate_blocks_per_s`: a 1,000-block reference-compatible chain of lite DIDs (type 4:
 * secp256k1 keys, as reference BIP wallets and lite quorums make them; genesis and 999 transfers,
 * 5 quorums, 11 signatures a transfer block) validated from cold (no validated-block cache, no DID
 * document or key parsed yet, a new pool) the way the node validates it: through the
 * chain-validation pool (src/tokens/chain-validation-pool.ts: cores − 1 workers plus the calling
 * thread while they are busy), against DID documents from a resolver. The pool's threads are
 * started (one tiny job) before the clock starts, as in a running node.
 * `chain_validate_blocks_per_s_inline`: the same chain, same cold start, on the calling thread only.
 * `lru_evicting_set_us_100k`: µs per insert into the memo of verified envelopes held full at its
 * 100,000 keys (every insert evicts one; docs/decisions/0018-lru-cache.md).
 * `chain_validate_blocks_per_s_p256`: a 1,000-block chain signed with raw-digest P-256 keys (as
 * non-lite DIDs' quorum keys sign; noble, 7 signatures a block), on the calling thread;
 * `chain_validate_blocks_per_s_secp_<backend>`: secp256k1 keys without DID documents, per backend.
 */
import { createBlock, encodeBlockEnvelope, nextTokenEntry, setSignature, testTokenGenesis, type Block, type BlockContent } from '../src/tokenchain/block.js'
import { validateChain } from '../src/tokenchain/validate.js'
import { TransactionType } from '../src/tokenchain/types.js'
import { buildTestTokenChain, KeyRing, LiteDidRing, type TestChain } from '../test/unit/tokenchain/fixtures.js'
import { ChainValidationPool } from '../src/tokens/chain-validation-pool.js'
import { didSignatureVerifier } from '../src/tokens/verifier.js'
import { clearDidCaches } from '../src/wallet/did-crypto.js'
import { nativeBackend, setSecpBackend, type SecpBackendName } from '../src/wallet/secp-backend.js'
import { BoundedSet } from '../src/util/lru.js'
import { VERIFIED_MEMO } from '../src/consensus/ports.js'

const r1 = (x: number): number => Math.round(x * 10) / 10

function buildEncodeHash (n: number): { ms: number, bytes: number } {
  const tokenId = 'QmfYNyAyGD8xHE9XgctX8WnfJ627edkM2EkAcijEutoJmH'
  const did = (i: number): string => 'bafybmi' + String(i).padStart(52, 'a').replace(/[0189]/g, 'b')
  const sig = '30440220' + 'ab'.repeat(32) + '0220' + 'cd'.repeat(32)
  const contract = new Uint8Array(340).fill(7)
  const quorums = [1, 2, 3, 4, 5].map(i => did(1000 + i))
  const t = performance.now()
  let bytes = 0
  let prev: Block = createBlock(testTokenGenesis({ tokenId, owner: did(0) }))
  bytes += encodeBlockEnvelope(prev).length
  for (let i = 1; i < n; i++) {
    const content: BlockContent = {
      transactionType: TransactionType.TRANSFERRED,
      owner: did(i),
      transInfo: { sender: did(i - 1), receiver: did(i), tid: 'ef'.repeat(32), tokens: { [tokenId]: nextTokenEntry(prev, tokenId) } },
      smartContract: contract,
      quorumSignatures: quorums.map(q => ({ did: q, hash: '', signType: '0', signature: '', privSignature: sig })),
      tokenValue: 1,
      childTokens: [],
      initiatorSignature: { hash: '12'.repeat(32), signType: 0, initiatorDid: did(i - 1), privSignature: sig, nlssShareSignature: '' },
      epoch: 1_700_000_000 + i
    }
    let b = createBlock(content)
    for (const q of quorums) b = setSignature(b, q, sig)
    bytes += encodeBlockEnvelope(b).length
    prev = b
  }
  return { ms: performance.now() - t, bytes }
}

async function validateFigures (mode: 'node-sha256' | 'raw' | 'raw-secp256k1', blocks: number, prefix: string, out: Record<string, string | number>, built?: { ring: KeyRing, chain: TestChain }): Promise<void> {
  const ring = built?.ring ?? new KeyRing(mode)
  const t0 = performance.now()
  const chain = built?.chain ?? buildTestTokenChain(ring, blocks - 1, 5)
  if (built === undefined) out[`${prefix}_build_and_sign_ms`] = r1(performance.now() - t0)
  ring.clearVerifierCache()
  const ctx = { tokenId: chain.tokenId, verifier: ring.verifier, tokenContent: chain.tokenContent }
  const t1 = performance.now()
  const r = await validateChain(chain.envelopes, ctx)
  const ms = performance.now() - t1
  out[`${prefix}_validate_${blocks}_blocks_ms`] = r1(ms)
  out[`${prefix}_signatures_verified`] = r.signaturesVerified
  out[`${prefix}_per_block_us`] = Math.round(ms * 1000 / blocks)
  const cache = new Set<string>()
  await validateChain(chain.envelopes, { ...ctx, cache })
  const t2 = performance.now()
  await validateChain(chain.envelopes, { ...ctx, cache })
  out[`${prefix}_revalidate_cached_ms`] = r1(performance.now() - t2)
}

export async function run (): Promise<Record<string, string | number>> {
  const out: Record<string, string | number> = {}
  buildEncodeHash(50) // warm-up
  const b = buildEncodeHash(1000)
  out.build_encode_hash_1000_blocks_ms = r1(b.ms)
  out.build_encode_hash_per_block_us = Math.round(b.ms)
  out.envelope_bytes_avg = Math.round(b.bytes / 1000)
  out.lru_evicting_set_us_100k = lruEvictingSetUs(VERIFIED_MEMO)
  await validateFigures('node-sha256', 1000, 'nodecrypto', out)
  await validateFigures('raw', 100, 'noble_raw', out)
  const backends: SecpBackendName[] = nativeBackend() !== undefined ? ['noble', 'native'] : ['noble']
  try {
    setSecpBackend(backends[backends.length - 1])
    const ring = new KeyRing('raw-secp256k1')
    const chain = buildTestTokenChain(ring, 99, 5)
    for (const b of backends) {
      setSecpBackend(b)
      await validateFigures('raw-secp256k1', 100, `secp_${b}`, out, { ring, chain })
    }
    out.chain_validate_blocks_per_s_p256 = await coldBlocksPerSecond('raw', 1000)
    setSecpBackend(undefined)
    Object.assign(out, await liteChainFigures(1000))
    for (const b of backends) {
      setSecpBackend(b)
      out[`chain_validate_blocks_per_s_secp_${b}`] = await coldBlocksPerSecond('raw-secp256k1', 1000)
    }
  } finally {
    setSecpBackend(undefined)
  }
  return out
}

/**
 * µs per insert into a full bounded memo of `size` keys (each insert evicts the least recently
 * used): the memo of verified envelopes, at its bound, on a node that has verified that many.
 */
function lruEvictingSetUs (size: number): number {
  const s = new BoundedSet(size)
  const key = (i: number): string => `${i.toString(16).padStart(8, '0')}${'e'.repeat(56)}`
  for (let i = 0; i < size; i++) s.add(key(i))
  const n = size * 2
  const t = performance.now()
  for (let i = size; i < size + n; i++) s.add(key(i))
  return Math.round((performance.now() - t) * 1000 / n * 100) / 100
}

/** `chain_validate_blocks_per_s` (through the pool) and `_inline`, best of three cold runs each, alternating. */
async function liteChainFigures (blocks: number): Promise<Record<string, number | string>> {
  const ring = new LiteDidRing()
  const chain = buildTestTokenChain(ring, blocks - 1, 5)
  const pooled: number[] = []
  const inline: number[] = []
  // CPU of the whole process (every thread) per validation: what the pool costs beyond the work itself
  const pooledCpu: number[] = []
  const inlineCpu: number[] = []
  const cpuMs = (u: NodeJS.CpuUsage): number => (u.user + u.system) / 1000
  let workers = 0
  for (let round = 0; round < 3; round++) {
    const pool = new ChainValidationPool()
    workers = pool.workers
    try {
      // start the worker threads and let their compiler see the validation code, with a chain of
      // other DIDs: a running node's threads are started and warm (keys and documents stay cold)
      const warm = new LiteDidRing()
      const w = buildTestTokenChain(warm, 199, 5)
      await validateChain(w.envelopes, { tokenId: w.tokenId, verifier: didSignatureVerifier(warm.resolver, { pool }), tokenContent: w.tokenContent })
      clearDidCaches()
      // fresh copies: decoded blocks are memoised per byte array, and a cold run decodes every block
      const envelopes = chain.envelopes.map((e) => e.slice())
      const cp = process.cpuUsage()
      const tp = performance.now()
      const r = await validateChain(envelopes, { tokenId: chain.tokenId, verifier: didSignatureVerifier(ring.resolver, { pool }), tokenContent: chain.tokenContent })
      pooled.push(blocks * 1000 / (performance.now() - tp))
      pooledCpu.push(cpuMs(process.cpuUsage(cp)))
      if (r.length !== blocks) throw new Error(`validated ${r.length} blocks, expected ${blocks}`)
    } finally {
      await pool.close()
    }
    clearDidCaches()
    const envelopes = chain.envelopes.map((e) => e.slice())
    const ci = process.cpuUsage()
    const ti = performance.now()
    await validateChain(envelopes, { tokenId: chain.tokenId, verifier: didSignatureVerifier(ring.resolver), tokenContent: chain.tokenContent })
    inline.push(blocks * 1000 / (performance.now() - ti))
    inlineCpu.push(cpuMs(process.cpuUsage(ci)))
  }
  return {
    chain_validate_blocks_per_s: Math.round(Math.max(...pooled)),
    chain_validate_blocks_per_s_inline: Math.round(Math.max(...inline)),
    chain_validate_cpu_us_per_block: `pool ${Math.round(1000 * Math.min(...pooledCpu) / blocks)}, inline ${Math.round(1000 * Math.min(...inlineCpu) / blocks)} (all threads)`,
    chain_validate_runs: `pool ${pooled.map(Math.round).join(', ')}; inline ${inline.map(Math.round).join(', ')} (${workers} worker(s) + the calling thread)`
  }
}

/** Blocks per second validating a fresh `blocks`-block chain from cold (new keys, no caches). */
async function coldBlocksPerSecond (mode: 'raw' | 'raw-secp256k1', blocks: number): Promise<number> {
  const ring = new KeyRing(mode)
  const chain = buildTestTokenChain(ring, blocks - 1, 5)
  ring.clearVerifierCache()
  const envelopes = chain.envelopes.map((e) => e.slice())
  const t = performance.now()
  const r = await validateChain(envelopes, { tokenId: chain.tokenId, verifier: ring.verifier, tokenContent: chain.tokenContent })
  const ms = performance.now() - t
  if (r.length !== blocks) throw new Error(`validated ${r.length} blocks, expected ${blocks}`)
  return Math.round(blocks * 1000 / ms)
}

if (process.argv[1] !== undefined && import.meta.url === new URL(`file://${process.argv[1]}`).href) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) process.stdout.write(`${k.padEnd(40)} ${String(v)}\n`)
}
