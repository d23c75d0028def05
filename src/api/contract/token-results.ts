/** Result payloads of the token and balance routes (types only: the client imports them). */

export interface RbtBalanceResult { balance: number, locked: number, pledged: number, pinned: number }
export interface FtBalanceResult { name: string, creator: string, count: number, value: number }
export interface NftBalanceResult { nft_id: string, value: number }

export interface BalancesResult {
  did: string
  /** One entry: this node's view of the DID's RBT. */
  rbt_balance: RbtBalanceResult[]
  ft_balance: FtBalanceResult[]
  nft_balance: NftBalanceResult[]
}

export interface AccountInfoResult { did: string, did_type: number, rbt_amount: number, pledged_rbt: number, locked_rbt: number, pinned_rbt: number }

export interface MintLocalRbtResult { did: string, tx_id: string, count: number, start_index: number, token_ids: string[] }

export interface TokenListItemResult {
  token_id: string
  token_type: number
  kind: string
  token_value: number
  token_status: string
  token_status_code: number
  did: string
  parent_token_id: string
  transaction_id: string
  latest_block_id: string
}

export interface ChainBlockResult {
  number: number
  block_id: string
  hash: string
  type: string
  type_name: string
  owner: string
  signers: string[]
  tx_id: string
  sender?: string
  receiver?: string
  comment?: string
  value?: number
  child_tokens?: string[]
  epoch?: number
  time: string
  /** base64 of the block envelope */
  envelope: string
  /** with `maps=true`: the block as the reference's dump.json holds it (numeric keys, "98" hash, "99" signatures; bytes as hex) */
  map?: Record<string, unknown>
}

export interface TokenChainResult {
  token_id: string
  token_type: number
  kind: string
  owner: string
  status: string
  value: number
  length: number
  blocks: ChainBlockResult[]
  /** id of the last block returned when more follow (pass it as block_id), else "" */
  next_block_id: string
}
