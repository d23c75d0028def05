/**
 * `recover_1000_tokens_s`: a wallet of 1,000 tokens, each with a 20-block chain (genesis and 19
 * transfers, 5 quorums, 11 signatures a transfer block: 211 signatures a token), rebuilt from a
 * fullnode: `SyncService.recover` on a fresh node against a fullnode, two in-process libp2p hosts
 * on 127.0.0.1 (test-net swarm key), from the challenge to the one ledger commit. The recovering
 * node validates every chain through the chain-validation pool, as the node does.
 *
 * How the history is made: making 20,000 blocks through real consensus would take hours, so the
 * chains are built directly, with real keys and valid signatures (lite DIDs: secp256k1, as reference
 * BIP wallets make them), by the same builder the token-chain tests use, and written into the
 * fullnode's ledger the way its archive commits do (token records, blocks, token contents). Owners
 * and quorums come from a set of 40 DIDs; the last transfer of every chain goes to the recovering
 * DID. Signers' DID documents come from a local resolver on both sides (a node would fetch them
 * from its peers once and keep them).
 *
 * `RECOVER_TOKENS` / `RECOVER_BLOCKS` change the size (the figure's name stays the same only for
 * the defaults). Run alone: `node dist/bench/recover.bench.js`.
 */
import '../src/util/polyfill.js'
import { performance } from 'node:perf_hooks'
import { TokenStatus } from '../src/storage/token-records.js'
import {
  createBlock, createRac, decodeBlockEnvelope, encodeBlockEnvelope, encodeRacEnvelope, formatBlockId, racTokenContent, racTokenId,
  RacType, setSignature, testTokenGenesis, type Block
} from '../src/tokenchain/index.js'
import { blockRecordOf } from '../src/tokens/token-service.js'
import { ChainValidationPool } from '../src/tokens/chain-validation-pool.js'
import { didSignatureVerifier } from '../src/tokens/verifier.js'
import { silentLogger, type Logger } from '../src/util/logger.js'
import { LiteDidRing, transferBlock } from '../test/unit/tokenchain/fixtures.js'
import { isMain } from './stats.js'
import { startSyncPair } from './sync-pair.js'

interface Token { tokenId: string, content: string, envelopes: Uint8Array[], last: Block }

/** One token's chain: genesis by `owners[0]`, transfers along `owners`, the last one to `to`. */
function buildToken (ring: LiteDidRing, n: number, owners: string[], to: string, quorums: string[]): Token {
  const rac = createRac({ type: RacType.TEST_TOKEN, version: 1, did: owners[0]!, tokenNumber: n, totalSupply: 1_000_000, timestamp: '2025-01-01 00:00:00 +0000 UTC' })
  rac.signature = ring.sign(owners[0]!, rac.hash)
  const racEnv = encodeRacEnvelope(rac)
  const tokenId = racTokenId(racEnv)
  let block = createBlock(testTokenGenesis({ tokenId, owner: owners[0]!, comment: 'bench token' }))
  block = setSignature(block, owners[0]!, ring.sign(owners[0]!, block.hash))
  const envelopes = [encodeBlockEnvelope(block)]
  for (let i = 1; i < owners.length; i++) {
    block = transferBlock(ring, tokenId, block, owners[i - 1]!, owners[i]!, quorums, 1_700_000_000 + n * 100 + i)
    envelopes.push(encodeBlockEnvelope(block))
  }
  block = transferBlock(ring, tokenId, block, owners[owners.length - 1]!, to, quorums, 1_700_000_000 + n * 100 + owners.length)
  envelopes.push(encodeBlockEnvelope(block))
  return { tokenId, content: racTokenContent(racEnv), envelopes, last: block }
}

export async function run (): Promise<Record<string, string | number>> {
  const TOKENS = Number(process.env.RECOVER_TOKENS ?? 1000)
  const BLOCKS = Number(process.env.RECOVER_BLOCKS ?? 20)
  const ring = new LiteDidRing()
  const people = Array.from({ length: 35 }, () => ring.newDid())
  const quorums = Array.from({ length: 5 }, () => ring.newDid())
  const wallet = ring.newDid()
  const tBuild = performance.now()
  const tokens: Token[] = []
  for (let n = 0; n < TOKENS; n++) {
    // BLOCKS − 1 owners before the wallet, never the same DID twice in a row
    const owners = Array.from({ length: BLOCKS - 1 }, (_, i) => people[(n * 7 + i * 3) % people.length]!)
    tokens.push(buildToken(ring, n, owners, wallet, quorums))
  }
  const buildS = (performance.now() - tBuild) / 1000

  // when the recovering side's log says a phase ended (challenge; owned list, chains fetched and validated)
  const phases: Array<{ what: string, at: number }> = []
  const note = (msg: string): void => {
    if (msg.includes('issued a challenge')) phases.push({ what: 'challenge', at: performance.now() })
    else if (msg.includes('chains valid')) phases.push({ what: 'list, fetch + validate', at: performance.now() })
  }
  const phaseLog: Logger = { debug: note, info: note, warn: () => {}, error: () => {}, child: () => phaseLog }
  const pool = new ChainValidationPool()
  // side 0 is the fullnode; the recovering side 1 validates through the pool, as the node does
  const pair = await startSyncPair('recover', (i) => i === 0
    ? { verifier: didSignatureVerifier(ring.resolver), fullnode: true, log: silentLogger }
    : { verifier: didSignatureVerifier(ring.resolver, { pool }), fullnode: false, log: phaseLog }).catch(async (e) => { await pool.close(); throw e })
  const { sides, hosts } = pair
  try {
    // the fullnode's archive: 100 tokens a commit, as archive commits write them
    const now = Date.now()
    for (let i = 0; i < tokens.length; i += 100) {
      const batch = tokens.slice(i, i + 100)
      await sides[0].ledger.commit({
        tokens: batch.map((t) => ({
          record: { tokenId: t.tokenId, kind: 'rbt' as const, tokenType: 3, value: 1000, owner: wallet, status: TokenStatus.Free, latestBlockId: formatBlockId(t.envelopes.length - 1, t.last.hash), latestBlockNumber: t.envelopes.length - 1, createdAt: now, updatedAt: now }
        })),
        blocks: batch.flatMap((t) => t.envelopes.map((e) => ({ record: blockRecordOf(t.tokenId, decodeBlockEnvelope(e), now), envelope: e }))),
        contents: Object.fromEntries(batch.map((t) => [t.tokenId, t.content]))
      })
    }
    // start the pool's threads, as in a running node (a recovery never starts a node from scratch)
    await pool.start()
    const fullnodePeer = hosts[0].peerId
    const cpu0 = process.cpuUsage()
    const t0 = performance.now()
    const summary = await sides[1].sync.recover(wallet, async (digest) => ring.sign(wallet, digest), fullnodePeer)
    const secs = (performance.now() - t0) / 1000
    const cpu = process.cpuUsage(cpu0)
    if (summary.tokens !== TOKENS) throw new Error(`recovered ${summary.tokens} tokens, expected ${TOKENS}`)
    const stats = pool.stats()
    const end = t0 + secs * 1000
    let prev = t0
    const split = [...phases, { what: 'commit', at: end }].map((p) => { const d = (p.at - prev) / 1000; prev = p.at; return `${p.what} ${d.toFixed(1)}` }).join(', ')
    return {
      recover_1000_tokens_s: Math.round(secs * 10) / 10,
      'recover: tokens, blocks fetched and stored': `${summary.tokens}, ${summary.blocks_fetched}, ${summary.blocks_stored}`,
      'recover: blocks per second (fetch + validate + commit)': Math.round(summary.blocks_fetched / secs),
      'recover: phases (s)': split,
      'recover: CPU of this process (both sides, all threads)': `${((cpu.user + cpu.system) / 1e6).toFixed(1)} s`,
      'recover: chain validations inline / through the pool (slices, of which run by the calling thread)': `${stats.inline} / ${stats.pooled} (${stats.slices}, ${stats.pool?.inline ?? 0})`,
      'recover: building the history (signing)': `${buildS.toFixed(1)} s`
    }
  } finally {
    await pool.close()
    await pair.close()
  }
}

if (isMain(import.meta.url)) {
  const figures = await run()
  for (const [k, v] of Object.entries(figures)) console.log(`${k}: ${String(v)}`)
}
