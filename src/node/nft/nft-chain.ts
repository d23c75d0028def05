/**
 * One NFT state as GET /svc/v1/nfts/{id}/chain shows it, read from the block envelope. The API and
 * the explorer's NFT state rows both go through this, so they cannot drift apart.
 */
import type { NftChainItem } from '../../api/contract/nft-results.js'
import { decodeBlockEnvelope } from '../../tokenchain/block.js'

export function nftChainItem (nftId: string, envelope: Uint8Array): NftChainItem {
  const b = decodeBlockEnvelope(envelope)
  const e = b.content.transInfo.tokens[nftId]
  return {
    transactionId: b.content.transInfo.tid ?? '',
    initiator: b.content.initiatorSignature?.initiatorDid ?? b.content.transInfo.sender ?? b.content.owner,
    owner: b.content.owner,
    epoch: b.content.epoch ?? 0,
    data: b.content.nftData ?? '',
    block_id: `${e?.blockNumber ?? '0'}-${b.hash}`,
    transaction_type: b.content.transactionType,
    value: b.content.tokenValue ?? 0
  }
}
