import { blockIdFor, decodeBlockEnvelope, tokenEntry } from '../tokenchain/block.js'
import { floatToMilliExact } from '../tokenchain/amount.js'
import { racFromTokenContent } from '../tokenchain/rac.js'
import { cidV0ForContent } from '../tokenchain/cid.js'
import { validateChain, validateExtension, type ChainTip, type VerifiedBlockCache } from '../tokenchain/validate.js'
import type { Verifier } from './ports.js'
import type { ChainBundle } from './messages.js'
import type { Ledger } from './ports.js'
import { ErrorCode, RbtError } from '../util/errors.js'
import { TokenType, TransactionType } from '../tokenchain/types.js'
import { ftBackingProblem, ftNameOfComment, type Backing } from '../tokens/ft.js'

const MAX_ANCESTRY = 64

/** Collects the chains and token contents a validator needs for `tokenIds` (ancestors included). */
export async function buildBundle (ledger: Ledger, tokenIds: readonly string[]): Promise<ChainBundle> {
  const bundle: ChainBundle = { chains: {}, contents: {} }
  const addContent = async (id: string): Promise<void> => {
    if (bundle.contents[id] !== undefined) return
    const c = (await ledger.token(id))?.content ?? await ledger.record<string>('cs-contents', id)
    if (c !== undefined) bundle.contents[id] = c
  }
  const visit = async (id: string, depth: number): Promise<void> => {
    if (bundle.chains[id] !== undefined) return
    if (depth > MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${id}: part-token ancestry deeper than ${MAX_ANCESTRY}`)
    const chain = await ledger.chain(id)
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `no chain stored for token ${id}`)
    bundle.chains[id] = chain
    const genesis = decodeBlockEnvelope(chain[0])
    // FTs have no token content
    if (!isFtGenesis(genesis, id)) await addContent(id)
    const parentId = genesis.content.genesis?.info[id]?.parentId
    if (isFtGenesis(genesis, id)) {
      // an FT: the backing tokens it names, and every token burnt with them for the mint
      for (const p of (parentId ?? '').split(',').filter((x) => x !== '')) {
        await visit(p, depth + 1)
        const pc = bundle.chains[p]
        for (const other of Object.keys(decodeBlockEnvelope(pc[pc.length - 1]).content.transInfo.tokens)) await visit(other, depth + 1)
      }
    } else if (parentId !== undefined && parentId !== '' && genesis.content.genesis?.type === '') {
      await visit(parentId, depth + 1)
      const parentChain = bundle.chains[parentId]
      const burn = decodeBlockEnvelope(parentChain[parentChain.length - 1])
      for (const sibling of burn.content.childTokens) await addContent(sibling)
    }
  }
  for (const id of tokenIds) await visit(id, 0)
  return bundle
}

/**
 * Validates one token of a bundle: its whole chain, and for a part token the parent's chain (burnt
 * into exactly the children whose values add up to the parent's value), recursively.
 */
export async function validateBundleToken (bundle: ChainBundle, tokenId: string, verifier: Verifier, cache?: VerifiedBlockCache, depth = 0): Promise<ChainTip> {
  if (depth > MAX_ANCESTRY) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: part-token ancestry too deep`)
  const chain = bundle.chains[tokenId]
  if (chain === undefined || chain.length === 0) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: no chain supplied`)
  const res = await validateChain(chain, { tokenId, verifier, cache, tokenContent: bundle.contents[tokenId] })
  if (res.kind === 'ft') await validateFtBacking(bundle, tokenId, chain[0], verifier, cache, depth)
  if (res.kind === 'part') {
    const genesis = decodeBlockEnvelope(chain[0])
    const parentId = genesis.content.genesis?.info[tokenId]?.parentId
    if (parentId === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `part token ${tokenId} names no parent`)
    const parentTip = await validateBundleToken(bundle, parentId, verifier, cache, depth + 1)
    if (!parentTip.burnt) throw new RbtError(ErrorCode.CHAIN_INVALID, `parent token ${parentId} of ${tokenId} is not burnt`)
    const parentChain = bundle.chains[parentId]
    const burn = decodeBlockEnvelope(parentChain[parentChain.length - 1])
    if (!burn.content.childTokens.includes(tokenId)) throw new RbtError(ErrorCode.CHAIN_INVALID, `parent token ${parentId} was not burnt into ${tokenId}`)
    if (burn.content.owner !== res.genesisOwner) throw new RbtError(ErrorCode.CHAIN_INVALID, `part token ${tokenId} was created by ${String(res.genesisOwner)}, the parent belonged to ${burn.content.owner}`)
    let sum = 0
    for (const child of burn.content.childTokens) {
      const content = bundle.contents[child]
      if (content === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `content of part ${child} (sibling of ${tokenId}) not supplied`)
      if (cidV0ForContent(content) !== child) throw new RbtError(ErrorCode.CHAIN_INVALID, `content supplied for part ${child} does not hash to its id`)
      const rac = racFromTokenContent(content)
      if (rac.content.partInfo?.parentId !== parentId) throw new RbtError(ErrorCode.CHAIN_INVALID, `part ${child} does not name ${parentId} as its parent`)
      sum += floatToMilliExact(rac.content.partInfo.value) ?? NaN
    }
    const parentValue = floatToMilliExact(parentTip.value ?? NaN)
    if (parentValue === undefined || sum !== parentValue) {
      throw new RbtError(ErrorCode.CHAIN_INVALID, `parts of ${parentId} add up to ${sum / 1000} RBT, the parent was worth ${String(parentTip.value)}`)
    }
  }
  return res.tip
}

/**
 * validate-token-chain with a block count (the reference counts from the latest block back): the
 * newest `blockCount` blocks of the token's chain, each checked for its number, its link to the block
 * before it, its transition and its signatures, starting from the stored block just before them,
 * taken as it is. `blockCount` 0, negative, or at least the chain's length: the whole chain with its
 * ancestry (validateBundleToken). Returns how many blocks of the token's chain were validated.
 */
export async function validateNewestBlocks (bundle: ChainBundle, tokenId: string, verifier: Verifier, blockCount: number): Promise<number> {
  const chain = bundle.chains[tokenId]
  if (chain === undefined || chain.length === 0) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: no chain supplied`)
  if (!Number.isSafeInteger(blockCount) || blockCount <= 0 || blockCount >= chain.length) {
    await validateBundleToken(bundle, tokenId, verifier)
    return chain.length
  }
  const anchorAt = chain.length - blockCount - 1
  const anchor = decodeBlockEnvelope(chain[anchorAt])
  const entry = tokenEntry(anchor, tokenId)
  if (entry === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId} block ${anchorAt}: block does not carry this token`, { details: { tokenId, blockNumber: anchorAt, check: 'token-entry' } })
  await validateExtension(blockIdFor(anchor, tokenId), chain.slice(anchorAt + 1), { tokenId, verifier, tipOwner: anchor.content.owner, tipTokenType: entry.tokenType })
  return blockCount
}

const isFtGenesis = (genesis: ReturnType<typeof decodeBlockEnvelope>, id: string): boolean =>
  genesis.content.transInfo.tokens[id]?.tokenType === TokenType.FT

/** Backing tokens of one mint ("13" block hash → tokens with their values), per bundle: checked once. */
const burnMemo = new WeakMap<ChainBundle, Map<string, Promise<Backing[]>>>()

/**
 * An FT's backing (docs/protocol.md, "FTs"): the parents its genesis names end with one "13" block
 * of the creator that burns, for this FT name and number range, RBT worth exactly the mint's FTs;
 * every token of that block has a valid chain; the parents are the ones the FT's value slice overlaps.
 */
async function validateFtBacking (bundle: ChainBundle, ftId: string, genesisBytes: Uint8Array, verifier: Verifier, cache: VerifiedBlockCache | undefined, depth: number): Promise<void> {
  const bad = (msg: string): never => { throw new RbtError(ErrorCode.CHAIN_INVALID, msg) }
  const genesis = decodeBlockEnvelope(genesisBytes)
  const info = genesis.content.genesis?.info[ftId]
  const parents = (info?.parentId ?? '').split(',').filter((x) => x !== '')
  const name = ftNameOfComment(genesis.content.transInfo.comment)
  const valueMilli = floatToMilliExact(genesis.content.tokenValue ?? NaN)
  if (info === undefined || parents.length === 0 || name === undefined || valueMilli === undefined) return bad(`FT ${ftId}: the genesis does not state its backing`)
  const firstChain = bundle.chains[parents[0]]
  if (firstChain === undefined || firstChain.length === 0) return bad(`FT ${ftId}: the chain of its backing token ${parents[0]} was not supplied`)
  const burn = decodeBlockEnvelope(firstChain[firstChain.length - 1])
  if (burn.content.transactionType !== TransactionType.BURNT_FOR_FT) return bad(`FT ${ftId}: backing token ${parents[0]} was not burnt for FTs`)
  let memo = burnMemo.get(bundle)
  if (memo === undefined) { memo = new Map(); burnMemo.set(bundle, memo) }
  let pending = memo.get(burn.hash)
  if (pending === undefined) {
    pending = (async () => {
      const out: Backing[] = []
      for (const id of Object.keys(burn.content.transInfo.tokens)) {
        const chain = bundle.chains[id]
        if (chain === undefined || chain.length === 0) bad(`FT ${ftId}: the chain of backing token ${id} was not supplied`)
        if (decodeBlockEnvelope(chain[chain.length - 1]).hash !== burn.hash) bad(`FT ${ftId}: backing token ${id} does not end with the mint's burn`)
        const tip = await validateBundleToken(bundle, id, verifier, cache, depth + 1)
        const v = floatToMilliExact(tip.value ?? NaN)
        if (v === undefined || (tip.tokenType !== TokenType.RBT && tip.tokenType !== TokenType.TEST_RBT && tip.tokenType !== TokenType.PART && tip.tokenType !== TokenType.TEST_PART)) bad(`FT ${ftId}: backing token ${id} is not an RBT token with a value`)
        out.push({ tokenId: id, valueMilli: v! })
      }
      return out
    })()
    memo.set(burn.hash, pending)
  }
  const backing = await pending
  for (const p of parents) if (!backing.some((b) => b.tokenId === p)) bad(`FT ${ftId}: parent ${p} was not burnt with the mint's backing`)
  const problem = ftBackingProblem({ ftId, creator: genesis.content.owner, name, index: info.number, valueMilli, parents }, { owner: burn.content.owner, comment: burn.content.transInfo.comment, backing })
  if (problem !== undefined) bad(problem)
}
