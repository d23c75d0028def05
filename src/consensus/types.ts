/**
 * The shapes the transfer protocol's modules share (messages, records, NFT and smart-contract
 * operations). They live here, below those modules, so that none of them imports another for a type.
 */

/** Chain material a validator needs: the token's whole chain, and for part tokens its ancestors. */
export interface ChainBundle {
  /** tokenId → block envelopes, genesis first */
  chains: Record<string, Uint8Array[]>
  /** tokenId → hex RAC token content, for RAC-backed tokens */
  contents: Record<string, string>
}

export type NftOpKind = 'deploy' | 'execute'

/** What an NFT transaction does; kept in the sender's outgoing record and the quorums' votes. */
export interface NftOp {
  op: NftOpKind
  nftId: string
  valueMilli: number
  data: string
  /** deploy of a child NFT: the parent it is linked to (the initiator must own the parent) */
  parentId?: string
  /** deploy of a top-level NFT: proves the deployer created it (the id commits to DID + artifact hash) */
  artifactHash?: string
  /** deploy of a child NFT: the nonce its id commits to */
  nonce?: string
  /** set when the token is a smart contract (consensus/smart-contract.ts): the proposed state record */
  sc?: ScOpPart
}

/** The smart-contract part of an operation (NftOp.sc). */
export interface ScOpPart {
  /** the state record the initiator computed (block key "9") */
  record: string
  /** the block id the record was computed on ("" for a deploy) */
  base: string
}

/** Files a quorum needs to run the contract: the descriptor (its CID is the contract id) and the binary. */
export interface ScCode { descriptor: string, binary: Uint8Array }

/** A token state: the token and the block it was spent or created at. */
export const stateKey = (tokenId: string, blockId: string): string => `${tokenId}@${blockId}`
