import { expect } from 'chai'
import { burntBlock, createBlock, encodeBlockEnvelope, setSignature } from '../../../src/tokenchain/block.js'
import { sha3Hex } from '../../../src/tokenchain/hash.js'
import { validateChain, type ChainValidationContext, type ChainValidationResult } from '../../../src/tokenchain/validate.js'
import { ChainValidationPool } from '../../../src/tokens/chain-validation-pool.js'
import { didSignatureVerifier } from '../../../src/tokens/verifier.js'
import { clearDidCaches } from '../../../src/wallet/did-crypto.js'
import { RbtError } from '../../../src/util/errors.js'
import { buildTestTokenChain, LiteDidRing, tamperedEnvelope, transferBlock, type TestChain } from '../tokenchain/fixtures.js'

/** The outcome of a validation: its result, or its error's code, message and details. */
async function outcome (p: Promise<ChainValidationResult>): Promise<{ ok: ChainValidationResult } | { error: { code: string, message: string, details: unknown } }> {
  try {
    return { ok: await p }
  } catch (e) {
    expect(e).to.be.instanceOf(RbtError)
    const r = e as RbtError
    return { error: { code: r.code, message: r.message, details: r.details } }
  }
}

/** Flips a hex digit inside the first signature of block `i`'s signature map. */
function tamperSignature (env: Uint8Array[], i: number): void {
  env[i] = tamperedEnvelope(env[i]!)
}

describe('tokens/chain-validation-pool', function () {
  this.timeout(60_000)
  const ring = new LiteDidRing()
  let chain: TestChain
  const pools: ChainValidationPool[] = []
  const poolOf = (o: ConstructorParameters<typeof ChainValidationPool>[0]): ChainValidationPool => {
    const p = new ChainValidationPool({ workers: 1, inlineBelow: 1, callerHelps: false, ...o })
    pools.push(p)
    return p
  }
  let pool: ChainValidationPool

  before(() => {
    chain = buildTestTokenChain(ring, 29, 5)
    pool = poolOf({ sliceBlocks: 7 })
  })
  after(async () => { for (const p of pools) await p.close() })

  const ctxOf = (verifier: ChainValidationContext['verifier'], extra: Partial<ChainValidationContext> = {}): ChainValidationContext =>
    ({ tokenId: chain.tokenId, verifier, tokenContent: chain.tokenContent, ...extra })

  /** Validates `blocks` inline and through `p`; both outcomes must be the same. */
  async function same (blocks: Uint8Array[], p = pool, extra: Partial<ChainValidationContext> = {}): Promise<Awaited<ReturnType<typeof outcome>>> {
    clearDidCaches()
    const inline = await outcome(validateChain(blocks, ctxOf(didSignatureVerifier(ring.resolver), extra)))
    clearDidCaches()
    const before = p.stats().pooled
    const pooled = await outcome(validateChain(blocks, ctxOf(didSignatureVerifier(ring.resolver, { pool: p }), extra)))
    expect(pooled).to.deep.equal(inline)
    expect(p.stats().pooled, 'validated through the pool').to.equal(before + 1)
    return pooled
  }

  it('a valid chain: the same result as inline, from slices validated on a worker', async () => {
    const before = pool.stats().pool!.completed
    const r = await same(chain.envelopes)
    expect('ok' in r && r.ok.length).to.equal(30)
    expect('ok' in r && r.ok.signaturesVerified).to.equal(1 + 1 + 29 * 11)
    expect(pool.stats().pool!.completed - before).to.equal(4)
  })

  it('the first bad block, as inline: a bad signature, a missing block, a later failure behind an earlier one', async () => {
    for (const i of [3, 14, 15, 29]) {
      const env = [...chain.envelopes]
      tamperSignature(env, i)
      const r = await same(env)
      expect('error' in r && r.error.details).to.deep.include({ blockNumber: i, check: 'signature' })
    }
    for (const i of [1, 8, 22]) {
      const env = [...chain.envelopes]
      env.splice(i, 1)
      const r = await same(env)
      expect('error' in r && r.error.details).to.deep.include({ blockNumber: i, check: 'block-number' })
    }
    const env = [...chain.envelopes]
    tamperSignature(env, 20)
    env.splice(5, 1)
    tamperSignature(env, 9)
    const r = await same(env)
    expect('error' in r && r.error.details).to.deep.include({ blockNumber: 5, check: 'block-number' })
  })

  it('a block that does not decode, at a slice boundary', async () => {
    const env = [...chain.envelopes]
    env[14] = env[14]!.slice(0, 40)
    const r = await same(env)
    expect('error' in r && r.error.details).to.deep.include({ blockNumber: 14, check: 'decode' })
  })

  it('a signer whose DID document cannot be found', async () => {
    const stranger = new LiteDidRing()
    const s = stranger.newDid()
    // block 12 moves the token to a DID this resolver does not know; block 13 is signed by it
    const blocks = chain.blocks.slice(0, 12)
    const env = blocks.map(encodeBlockEnvelope)
    const mixed = { newDid: () => s, sign: (did: string, m: string) => did === s ? stranger.sign(did, m) : ring.sign(did, m) }
    const toStranger = transferBlock(mixed, chain.tokenId, blocks[11]!, chain.owners[11]!, s, chain.quorums)
    env.push(encodeBlockEnvelope(toStranger))
    env.push(encodeBlockEnvelope(transferBlock(mixed, chain.tokenId, toStranger, s, chain.owners[0]!, chain.quorums)))
    const r = await same(env)
    expect('error' in r && r.error.message).to.match(/block 13: signature check failed: .* is unknown/)
  })

  it('a block after a burn, when the burn ends one slice and the next slice starts after it', async () => {
    const owner = chain.owners[15]!
    let burn = createBlock(burntBlock(chain.blocks[15]!, chain.tokenId, owner, 1, ['QmChildA', 'QmChildB']))
    burn = setSignature(burn, owner, ring.sign(owner, burn.hash))
    const after = transferBlock(ring, chain.tokenId, burn, owner, chain.owners[16]!, chain.quorums)
    const env = [...chain.envelopes.slice(0, 16), encodeBlockEnvelope(burn), encodeBlockEnvelope(after)]
    const onePerSlice = poolOf({ sliceBlocks: 1 })
    const r = await same(env, onePerSlice)
    expect('error' in r && r.error.details).to.deep.include({ blockNumber: 17, check: 'transaction' })
    const ok = await same(env.slice(0, 17), onePerSlice)
    expect('ok' in ok && ok.ok.tip).to.deep.include({ burnt: true, blockNumber: 16 })
    expect(onePerSlice.stats().slices).to.equal(18 + 17)
  })

  it('fills the caller\'s verified-block cache; blocks it holds are not verified again', async () => {
    const cachePooled = new Set<string>()
    const r = await validateChain(chain.envelopes, ctxOf(didSignatureVerifier(ring.resolver, { pool }), { cache: cachePooled }))
    expect([...cachePooled].sort()).to.deep.equal(chain.envelopes.map((e) => sha3Hex(e)).sort())
    expect(r.cacheHits).to.equal(0)
    const again = await validateChain(chain.envelopes, ctxOf(didSignatureVerifier(ring.resolver, { pool }), { cache: cachePooled }))
    expect(again.cacheHits).to.equal(30)
    expect(again.signaturesVerified).to.equal(1, 'the token content (RAC) signature only')
    // half cached: the other half goes to the worker and only it is verified
    const half = new Set([...cachePooled].filter((_, i) => i % 2 === 0))
    const mixed = await validateChain(chain.envelopes, ctxOf(didSignatureVerifier(ring.resolver, { pool }), { cache: half }))
    expect(mixed.cacheHits).to.equal(15)
    expect(half.size).to.equal(30)
  })

  it('short chains stay on the calling thread; a closed pool validates inline', async () => {
    const p = poolOf({ inlineBelow: 8 })
    const v = didSignatureVerifier(ring.resolver, { pool: p })
    await validateChain(chain.envelopes.slice(0, 7), ctxOf(v))
    expect(p.stats()).to.deep.include({ inline: 1, pooled: 0 })
    await p.close()
    const r = await validateChain(chain.envelopes, ctxOf(v))
    expect(r.length).to.equal(30)
    expect(p.stats()).to.deep.include({ inline: 2, pooled: 0 })
  })

  it('with callerHelps, the calling thread validates slices too and the result is the same', async () => {
    const helping = poolOf({ sliceBlocks: 3, callerHelps: true })
    await same(chain.envelopes, helping)
    const env = [...chain.envelopes]
    tamperSignature(env, 25)
    await same(env, helping)
    expect(helping.stats().pool!.inline).to.be.above(0)
  })
})
