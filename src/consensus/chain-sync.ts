/**
 * Chain sync as domain code: gathers the chains of a set of tokens (and, for part tokens, their
 * ancestors and the siblings' contents) from a `ChainSource`, reusing whatever prefix is already
 * held locally, then validates every token of the bundle before a caller stores anything. The
 * source is an interface: the node binds it to the `sync.chain` / `sync.contents` rpc methods of a
 * peer (docs/protocol.md, "Recovery"). No libp2p, no storage.
 */
import { decodeBlockEnvelope } from '../tokenchain/block.js'
import type { ChainTip, VerifiedBlockCache } from '../tokenchain/validate.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { isFtGenesis, MAX_ANCESTRY, validateBundleToken } from './bundle.js'
import type { ChainBundle } from './messages.js'
import type { Verifier } from './ports.js'

/** Chains fetched at the same time. */
const FETCH_LANES = 8

/** Where chains come from (a peer, in practice). */
export interface ChainSource {
  /** Blocks of `tokenId` from block number `fromNumber` on, oldest first, in pages. */
  chain: (tokenId: string, fromNumber: number) => AsyncIterable<Uint8Array[]>
  /** Token contents (RAC hex text) the source holds, by token id; unknown ids are left out. */
  contents: (tokenIds: string[]) => Promise<Record<string, string>>
}

/** What this node already holds. */
export interface HeldChains {
  chain: (tokenId: string) => Promise<Uint8Array[]>
  content: (tokenId: string) => Promise<string | undefined>
}

export interface FetchLimits {
  /** Largest chain accepted for one token (blocks). Default 1 000 000. */
  maxBlocks?: number
}

/** A gathered bundle plus how many blocks actually crossed the wire. */
export interface FetchedBundle {
  bundle: ChainBundle
  /** tokenId → number of blocks this node held before (they were not fetched again). */
  held: Record<string, number>
  fetchedBlocks: number
}

type Genesis = ReturnType<typeof decodeBlockEnvelope>

/** A part token's parent, as its genesis names it. */
const parentOf = (tokenId: string, genesis: Genesis): string | undefined => {
  const g = genesis.content.genesis
  const p = g?.info[tokenId]?.parentId
  return p !== undefined && p !== '' && g?.type === '' ? p : undefined
}

/** The backing tokens an FT's genesis names (undefined for any other token). */
const ftBackingOf = (tokenId: string, genesis: Genesis): string[] | undefined => {
  if (!isFtGenesis(genesis, tokenId)) return undefined
  return (genesis.content.genesis?.info[tokenId]?.parentId ?? '').split(',').filter((x) => x !== '')
}

/**
 * Collects the chains of `tokenIds` (ancestors included) from `source`. Blocks already held are not
 * fetched again: the source is asked only for what follows the held tip. Nothing is validated
 * here; call `validateBundleTokens` before storing.
 */
export async function fetchBundle (source: ChainSource, held: HeldChains, tokenIds: readonly string[], limits: FetchLimits = {}): Promise<FetchedBundle> {
  const maxBlocks = limits.maxBlocks ?? 1_000_000
  const out: FetchedBundle = { bundle: { chains: {}, contents: {} }, held: {}, fetchedBlocks: 0 }
  const wantContents = new Set<string>()
  const fetchChain = async (id: string, depth: number): Promise<void> => {
    if (depth > MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${id}: part-token ancestry deeper than ${MAX_ANCESTRY}`)
    const mine = await held.chain(id)
    const chain = [...mine]
    try {
      for await (const page of source.chain(id, mine.length)) {
        for (const b of page) {
          if (!(b instanceof Uint8Array)) throw new RbtError(ErrorCode.PROTOCOL, `token ${id}: a block arrived that is not bytes`)
          chain.push(b)
        }
        if (chain.length > maxBlocks) throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `token ${id}: chain longer than ${maxBlocks} blocks`)
      }
    } catch (e) {
      // a source that has nothing beyond what is held answers NOT_FOUND only when it holds nothing at all
      if (!(e instanceof RbtError && e.code === ErrorCode.NOT_FOUND && mine.length > 0)) throw e
    }
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `no chain found for token ${id}`)
    out.held[id] = mine.length
    out.fetchedBlocks += chain.length - mine.length
    out.bundle.chains[id] = chain
    wantContents.add(id)
    let genesis: Genesis
    try {
      genesis = decodeBlockEnvelope(chain[0]!)
    } catch (e) {
      throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${id}: genesis block does not decode: ${errorMessage(e)}`)
    }
    const parentId = parentOf(id, genesis)
    if (parentId !== undefined) {
      await visit(parentId, depth + 1)
      const parentChain = out.bundle.chains[parentId]!
      for (const sibling of decodeBlockEnvelope(parentChain[parentChain.length - 1]!).content.childTokens) wantContents.add(sibling)
    }
    // an FT is checked against its backing: the tokens its genesis names and every token of the
    // burn block they end with (bundle.ts, validateFtBacking)
    const backing = ftBackingOf(id, genesis)
    if (backing !== undefined && backing.length > 0) {
      await Promise.all(backing.map(async (p) => { await visit(p, depth + 1) }))
      const first = out.bundle.chains[backing[0]!]!
      const burnt = Object.keys(decodeBlockEnvelope(first[first.length - 1]!).content.transInfo.tokens)
      await Promise.all(burnt.map(async (t) => { await visit(t, depth + 1) }))
    }
  }
  // each chain is fetched once, also when two tokens being fetched at the same time share an ancestor
  const visiting = new Map<string, Promise<void>>()
  const visit = async (id: string, depth: number): Promise<void> => {
    if (out.bundle.chains[id] !== undefined) return
    let p = visiting.get(id)
    if (p === undefined) { p = fetchChain(id, depth); visiting.set(id, p) }
    await p
  }
  // several chains at a time (each is a round trip to the source); the error is that of the
  // first token, in the given order, whose chain could not be fetched
  const errors: unknown[] = []
  let next = 0
  let failedAt = Infinity
  const lane = async (): Promise<void> => {
    for (let i = next++; i < tokenIds.length && i < failedAt; i = next++) {
      try { await visit(tokenIds[i]!, 0) } catch (e) { errors[i] = e; failedAt = Math.min(failedAt, i) }
    }
  }
  await Promise.all(Array.from({ length: Math.min(FETCH_LANES, tokenIds.length) }, lane))
  if (failedAt !== Infinity) throw errors[failedAt]
  const missing: string[] = []
  for (const id of wantContents) {
    const c = await held.content(id)
    if (c !== undefined) out.bundle.contents[id] = c
    else missing.push(id)
  }
  for (let i = 0; i < missing.length; i += 500) {
    const got = await source.contents(missing.slice(i, i + 500))
    for (const id of missing.slice(i, i + 500)) {
      const c = got[id]
      if (typeof c === 'string') out.bundle.contents[id] = c
    }
  }
  return out
}

/**
 * Validates every named token of a bundle (whole chains, every signature; part tokens with their
 * ancestors). Throws CHAIN_INVALID naming the first token that fails; nothing partial is returned.
 */
export async function validateBundleTokens (bundle: ChainBundle, tokenIds: readonly string[], verifier: Verifier, cache?: VerifiedBlockCache): Promise<Map<string, ChainTip>> {
  // several tokens at a time, so that a verifier validating chains on worker threads keeps them busy;
  // the error is still that of the first token (in the given order) that fails
  const outcomes: Array<{ tip: ChainTip } | { error: unknown }> = []
  let next = 0
  let failedAt = Infinity
  const lane = async (): Promise<void> => {
    for (let i = next++; i < tokenIds.length && i < failedAt; i = next++) {
      try {
        outcomes[i] = { tip: await validateBundleToken(bundle, tokenIds[i]!, verifier, cache) }
      } catch (error) {
        outcomes[i] = { error }
        failedAt = Math.min(failedAt, i)
      }
    }
  }
  await Promise.all(Array.from({ length: Math.min(BUNDLE_LANES, tokenIds.length) }, lane))
  const tips = new Map<string, ChainTip>()
  for (let i = 0; i < tokenIds.length; i++) {
    const id = tokenIds[i]!
    const o = outcomes[i]
    if (o === undefined) continue
    if ('error' in o) {
      const e = o.error
      if (e instanceof RbtError && e.code === ErrorCode.CHAIN_INVALID) throw e
      throw new RbtError(ErrorCode.CHAIN_INVALID, `chain of token ${id} is invalid: ${errorMessage(e)}`, { cause: e })
    }
    tips.set(id, o.tip)
  }
  return tips
}

/** Tokens of a bundle validated at the same time. */
const BUNDLE_LANES = 6

/**
 * `fetchBundle` then `validateBundleTokens`, in batches of `batch` tokens, each batch validated
 * while the next is fetched (for large sets: a wallet recovery). Fails as the two calls in a row
 * would: a chain that could not be fetched first, then the first token, in order, that is invalid.
 */
export async function fetchAndValidate (source: ChainSource, held: HeldChains, tokenIds: readonly string[], verifier: Verifier, cache?: VerifiedBlockCache, opts: FetchLimits & { batch?: number } = {}): Promise<{ fetched: FetchedBundle, tips: Map<string, ChainTip> }> {
  const batch = Math.max(1, opts.batch ?? 100)
  const fetched: FetchedBundle = { bundle: { chains: {}, contents: {} }, held: {}, fetchedBlocks: 0 }
  const tips = new Map<string, ChainTip>()
  const validations: Array<Promise<Map<string, ChainTip>>> = []
  // chains and contents of earlier batches count as held (an ancestor two batches share is fetched once)
  const heldSoFar: HeldChains = {
    chain: async (id) => fetched.bundle.chains[id] ?? await held.chain(id),
    content: async (id) => fetched.bundle.contents[id] ?? await held.content(id)
  }
  try {
    for (let i = 0; i < tokenIds.length; i += batch) {
      const ids = tokenIds.slice(i, i + batch)
      const part = await fetchBundle(source, heldSoFar, ids, opts)
      Object.assign(fetched.bundle.chains, part.bundle.chains)
      Object.assign(fetched.bundle.contents, part.bundle.contents)
      for (const [id, n] of Object.entries(part.held)) fetched.held[id] ??= n
      fetched.fetchedBlocks += part.fetchedBlocks
      // one batch validating at a time, in order; the next is fetched meanwhile
      const previous = validations[validations.length - 1]
      const validation = (async () => {
        await previous?.catch(() => undefined)
        return await validateBundleTokens(part.bundle, ids, verifier, cache)
      })()
      // awaited below in order; a batch after the first failing one is never awaited
      validation.catch(() => undefined)
      validations.push(validation)
    }
  } catch (e) {
    await Promise.allSettled(validations)
    throw e
  }
  for (const v of validations) for (const [id, tip] of await v) tips.set(id, tip)
  return { fetched, tips }
}
