import { expect } from 'chai'
import { fetchAndValidate, fetchBundle, validateBundleTokens, type ChainSource, type HeldChains } from '../../../src/consensus/chain-sync.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import { buildTestTokenChain, KeyRing, withTamperedSignature, type TestChain } from '../tokenchain/fixtures.js'

/** A source over chains held in memory; `missing` ids answer NOT_FOUND. */
function memorySource (chains: Map<string, { envelopes: Uint8Array[], content: string }>, missing = new Set<string>()): ChainSource & { requests: number } {
  const src = {
    requests: 0,
    chain: async function * (id: string, from: number): AsyncIterable<Uint8Array[]> {
      src.requests++
      if (missing.has(id) || !chains.has(id)) throw new RbtError(ErrorCode.NOT_FOUND, `token ${id} has no chain on this node`)
      yield chains.get(id)!.envelopes.slice(from)
    },
    contents: async (ids: string[]): Promise<Record<string, string>> => Object.fromEntries(ids.filter((id) => chains.has(id)).map((id) => [id, chains.get(id)!.content]))
  }
  return src
}

const nothingHeld: HeldChains = { chain: async () => [], content: async () => undefined }


async function failure (p: Promise<unknown>): Promise<RbtError> {
  try { await p } catch (e) { expect(e).to.be.instanceOf(RbtError); return e as RbtError }
  expect.fail('should fail')
}

describe('consensus/chain-sync: fetchAndValidate (batches validated while the next is fetched)', function () {
  this.timeout(60_000)
  const ring = new KeyRing('raw-secp256k1')
  let tokens: TestChain[]
  before(() => { tokens = Array.from({ length: 7 }, () => buildTestTokenChain(ring, 2, 5)) })
  const mapOf = (list: Array<{ tokenId: string, envelopes: Uint8Array[], tokenContent: string }>): Map<string, { envelopes: Uint8Array[], content: string }> =>
    new Map(list.map((t) => [t.tokenId, { envelopes: t.envelopes, content: t.tokenContent }]))

  it('gives the chains, contents and tips of fetchBundle then validateBundleTokens', async () => {
    const ids = tokens.map((t) => t.tokenId)
    const whole = await fetchBundle(memorySource(mapOf(tokens)), nothingHeld, ids)
    const wholeTips = await validateBundleTokens(whole.bundle, ids, ring.verifier)
    const src = memorySource(mapOf(tokens))
    const { fetched, tips } = await fetchAndValidate(src, nothingHeld, ids, ring.verifier, undefined, { batch: 3 })
    expect(fetched).to.deep.equal(whole)
    expect([...tips.entries()]).to.deep.equal([...wholeTips.entries()])
    expect(src.requests).to.equal(7)
  })

  it('fails on the first invalid token in order, as the two calls would', async () => {
    // tokens 2 and 6: the second failure is in the last batch, which no later batch waits on
    const bad = tokens.map((t, i) => i === 2 || i === 6 ? { ...t, envelopes: withTamperedSignature(t.envelopes, 1) } : t)
    const ids = bad.map((t) => t.tokenId)
    const whole = await fetchBundle(memorySource(mapOf(bad)), nothingHeld, ids)
    const expected = await failure(validateBundleTokens(whole.bundle, ids, ring.verifier))
    // a later batch fails too, after the call has already failed: nothing may be left unhandled
    const unhandled: unknown[] = []
    const onUnhandled = (e: unknown): void => { unhandled.push(e) }
    process.on('unhandledRejection', onUnhandled)
    try {
      const got = await failure(fetchAndValidate(memorySource(mapOf(bad)), nothingHeld, ids, ring.verifier, undefined, { batch: 2 }))
      expect(got.message).to.equal(expected.message)
      expect(got.message).to.contain(ids[2])
      await new Promise((resolve) => setTimeout(resolve, 200))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).to.deep.equal([])
  })

  it('a chain that cannot be fetched fails the whole call, before any invalid chain', async () => {
    const bad = tokens.map((t, i) => i === 1 ? { ...t, envelopes: withTamperedSignature(t.envelopes, 1) } : t)
    const ids = bad.map((t) => t.tokenId)
    const e = await failure(fetchAndValidate(memorySource(mapOf(bad), new Set([ids[6]!])), nothingHeld, ids, ring.verifier, undefined, { batch: 2 }))
    expect(e.code).to.equal(ErrorCode.NOT_FOUND)
  })
})
