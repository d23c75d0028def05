/**
 * Building a split: a token becomes part tokens (the amount needed, optionally repeated, and the
 * rest when something is left). The parent
 * gets a burn block ("08") naming both children; each child gets a signed RAC descriptor (its
 * content, hence its id) and a signed genesis ("05"). Everything is signed by the owner. Nothing
 * is stored here: callers commit the result atomically in their own way.
 */
import { burntBlock, createBlock, decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, partTokenGenesis, setSignature, type Block } from '../tokenchain/block.js'
import { createRac, encodeRacEnvelope, racTokenContent, racTokenId } from '../tokenchain/rac.js'
import { RacType, TokenType } from '../tokenchain/types.js'
import { ErrorCode, RbtError } from '../util/errors.js'

export interface SplitParent {
  tokenId: string
  tokenType: number
  /** milli-RBT */
  valueMilli: number
  owner: string
  /** the parent's own parent, when it is itself a part */
  parentId?: string
}

/** Signs the ASCII of a hex hash; returns a hex DER signature. */
export interface SplitSigner {
  readonly did: string
  sign: (hashHex: string) => Promise<string>
}

export interface BuiltPart {
  tokenId: string
  tokenType: number
  valueMilli: number
  /** hex RAC descriptor: the token's content */
  content: string
  block: Block
  genesis: Uint8Array
  blockId: string
}

export interface BuiltSplit {
  burn: { number: number, blockId: string, block: Block, envelope: Uint8Array }
  /** the parts of `partMilli` first (as many as asked), then the rest when there is one */
  parts: BuiltPart[]
}

export interface SplitOptions {
  /** test-network parts (token type 5) rather than main-net parts (1); default: from the parent's type */
  test?: boolean
  /** RAC timestamp text */
  timestamp: string
  partComment?: string
  burnComment?: string
  /** how many parts of `partMilli` to cut (default 1; fewer when the parent is too small) */
  pieces?: number
  /** in how many parts of about the same value the rest is cut (default 1; fewer when it is too small) */
  restParts?: number
}

/**
 * Values of the parts of a split: `partMilli` repeated up to `pieces` times, then the rest (if any),
 * in up to `restParts` parts that differ by at most 1 milli-RBT.
 */
export function splitValues (parentMilli: number, partMilli: number, pieces = 1, restParts = 1): number[] {
  const n = Math.max(1, Math.min(Math.floor(pieces), Math.floor(parentMilli / partMilli)))
  const values = Array.from({ length: n }, () => partMilli)
  const rest = parentMilli - n * partMilli
  if (rest <= 0) return values
  const k = Math.max(1, Math.min(Math.floor(restParts), rest))
  for (let i = 0; i < k; i++) values.push(Math.floor(rest / k) + (i < rest % k ? 1 : 0))
  return values
}

export async function buildSplit (parent: SplitParent, latestBlock: Uint8Array, partMilli: number, signer: SplitSigner, opts: SplitOptions): Promise<BuiltSplit> {
  if (signer.did !== parent.owner) throw new RbtError(ErrorCode.FORBIDDEN, `token ${parent.tokenId} is owned by ${parent.owner}, not ${signer.did}`)
  if (!Number.isSafeInteger(partMilli) || partMilli <= 0 || partMilli >= parent.valueMilli) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `cannot split ${parent.valueMilli} milli-RBT into ${String(partMilli)} and the rest`)
  }
  const test = opts.test ?? (parent.tokenType === TokenType.TEST_RBT || parent.tokenType === TokenType.TEST_PART)
  const partType = test ? TokenType.TEST_PART : TokenType.PART
  const values = splitValues(parent.valueMilli, partMilli, opts.pieces, opts.restParts)
  const parts: BuiltPart[] = []
  for (let i = 0; i < values.length; i++) {
    const value = values[i] / 1000
    const rac = createRac({
      type: test ? RacType.TEST_PART_TOKEN : RacType.PART_TOKEN,
      version: 1,
      did: parent.owner,
      tokenNumber: 0,
      totalSupply: 1,
      timestamp: opts.timestamp,
      partInfo: { parentId: parent.tokenId, partNumber: i, value }
    })
    rac.signature = await signer.sign(rac.hash)
    const env = encodeRacEnvelope(rac)
    const tokenId = racTokenId(env)
    let g = createBlock(partTokenGenesis({
      tokenId,
      owner: parent.owner,
      parentId: parent.tokenId,
      grandParentIds: parent.parentId !== undefined ? [parent.parentId] : [],
      value,
      tokenType: partType,
      comment: opts.partComment
    }))
    g = setSignature(g, parent.owner, await signer.sign(g.hash))
    parts.push({ tokenId, tokenType: partType, valueMilli: values[i], content: racTokenContent(env), block: g, genesis: encodeBlockEnvelope(g), blockId: formatBlockId(0, g.hash) })
  }
  const prev = decodeBlockEnvelope(latestBlock)
  let burn = createBlock(burntBlock(prev, parent.tokenId, parent.owner, parent.valueMilli / 1000, parts.map((p) => p.tokenId), opts.burnComment))
  burn = setSignature(burn, parent.owner, await signer.sign(burn.hash))
  const number = Number(prev.content.transInfo.tokens[parent.tokenId]?.blockNumber ?? '0') + 1
  return { burn: { number, blockId: formatBlockId(number, burn.hash), block: burn, envelope: encodeBlockEnvelope(burn) }, parts }
}
