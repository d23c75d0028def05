import { buildSplit } from '../tokens/part-split.js'
import type { ConsensusSigner, TokenState } from './ports.js'

export interface SplitResult {
  parent: TokenState
  burnBlock: { number: number, envelope: Uint8Array }
  parts: Array<{ token: TokenState, genesis: Uint8Array }>
}

/** A split (tokens/part-split.ts) expressed in the consensus ledger's token states; nothing is stored here. */
export async function splitToken (parent: TokenState, latestBlock: Uint8Array, partMilli: number, signer: ConsensusSigner, now: number, pieces = 1, restParts = 1): Promise<SplitResult> {
  const built = await buildSplit(parent, latestBlock, partMilli, { did: signer.did, sign: signer.pvtSign }, { timestamp: new Date(now).toISOString(), burnComment: 'split into parts', pieces, restParts })
  return {
    parent: { ...parent, status: 'Burnt', latestBlockId: built.burn.blockId, updatedAt: now },
    burnBlock: { number: built.burn.number, envelope: built.burn.envelope },
    parts: built.parts.map((p) => ({
      genesis: p.genesis,
      token: { tokenId: p.tokenId, tokenType: p.tokenType, valueMilli: p.valueMilli, owner: parent.owner, status: 'Free' as const, latestBlockId: p.blockId, parentId: parent.tokenId, content: p.content, updatedAt: now }
    }))
  }
}
