/**
 * FTs in the transfer protocol (docs/protocol.md, "FTs"): FT tokens ride in ordinary transfer
 * blocks next to RBT; quorums and receivers validate each FT's whole chain and its backing
 * (bundle.ts). These helpers name what a block carries and what an FT is.
 */
import type { Block } from '../tokenchain/block.js'
import { TokenType } from '../tokenchain/types.js'
import { ftNameOfComment } from '../tokens/ft.js'

/** Does the block move at least one FT? */
export const carriesFt = (block: Block): boolean => Object.values(block.content.transInfo.tokens).some((e) => e.tokenType === TokenType.FT)

/** Name and creator of an FT, read from its genesis block (empty for other tokens). */
export function ftIdentity (tokenId: string, tokenType: number, genesis: Block): { ftName?: string, creator?: string } {
  if (tokenType !== TokenType.FT || genesis.content.transInfo.tokens[tokenId] === undefined) return {}
  const name = ftNameOfComment(genesis.content.transInfo.comment)
  return name === undefined ? {} : { ftName: name, creator: genesis.content.owner }
}
