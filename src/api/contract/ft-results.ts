/** Result payloads of the FT routes (types only: the client imports them). */

export interface FtMintResult {
  did: string
  tx_id: string
  ft_name: string
  ft_count: number
  /** value of one FT in RBT */
  ft_value: number
  ft_num_start_index: number
  /** RBT tokens burnt for the FTs */
  backing_tokens: string[]
  first_ft_id: string
  last_ft_id: string
}

export interface FtListItemResult {
  ft_name: string
  creator_did: string
  /** total supply when minted on this node, else null */
  ft_count: number | null
  ft_value: number
  /** Free FTs of this kind per DID of this node */
  holders: Array<{ did: string, count: number }>
}
