import { decodeBlockEnvelope } from '../tokenchain/block.js'
import { floatToMilliExact } from '../tokenchain/amount.js'
import { racFromTokenContent } from '../tokenchain/rac.js'
import { cidV0ForContent } from '../tokenchain/cid.js'
import { validateChain, type ChainTip, type VerifiedBlockCache } from '../tokenchain/validate.js'
import type { Verifier } from './ports.js'
import type { ChainBundle } from './messages.js'
import type { Ledger } from './ports.js'
import { ErrorCode, RbtError } from '../util/errors.js'

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
    await addContent(id)
    const genesis = decodeBlockEnvelope(chain[0])
    const parentId = genesis.content.genesis?.info[id]?.parentId
    if (parentId !== undefined && parentId !== '' && genesis.content.genesis?.type === '') {
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
