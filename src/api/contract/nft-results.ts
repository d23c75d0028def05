/** Result shapes of the NFT routes. */
export interface NftListItem {
  nft_id: string
  owner: string
  value: number
  status: string
  latest_block_id: string
  parent_nft_id: string | null
}

export interface NftChainItem {
  transactionId: string
  initiator: string
  owner: string
  epoch: number
  data: string
  block_id: string
  transaction_type: string
  value: number
}

export interface NftTxResult {
  transactionID: string
  mintedNFTChildren: Array<{ parentNFTId: string, childNFTId: string }> | null
}
