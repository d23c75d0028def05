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
import { validateBundleToken } from './bundle.js'
import type { ChainBundle } from './messages.js'
import type { Verifier } from './ports.js'

const MAX_ANCESTRY = 64

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

const parentOf = (tokenId: string, genesis: Uint8Array): string | undefined => {
  const g = decodeBlockEnvelope(genesis).content.genesis
  const p = g?.info[tokenId]?.parentId
  return p !== undefined && p !== '' && g?.type === '' ? p : undefined
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
  const visit = async (id: string, depth: number): Promise<void> => {
    if (out.bundle.chains[id] !== undefined) return
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
    let parentId: string | undefined
    try {
      parentId = parentOf(id, chain[0]!)
    } catch (e) {
      throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${id}: genesis block does not decode: ${errorMessage(e)}`)
    }
    if (parentId !== undefined) {
      await visit(parentId, depth + 1)
      const parentChain = out.bundle.chains[parentId]!
      for (const sibling of decodeBlockEnvelope(parentChain[parentChain.length - 1]!).content.childTokens) wantContents.add(sibling)
    }
  }
  for (const id of tokenIds) await visit(id, 0)
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
