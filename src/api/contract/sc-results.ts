/** Result shapes of the smart-contract routes (docs/contracts.md). */
export interface ScListItem {
  smartContractToken: string
  deployer: string
  value: number
  status: string
  latest_block_id: string
  /** the latest state, or null before the deploy */
  state: string | null
  has_files: boolean
}

export interface ScChainItem {
  transactionId: string
  initiator: string
  epoch: number
  /** the call's input (the deploy's data for block 0) */
  data: string
  block_id: string
  transaction_type: string
  state: string
  output: string
  stateHash: string
}

export interface ScTxResult {
  transactionID: string
  smartContractToken: string
  blockId: string
  state: string
  output: string
}

/** The JSON a registered callback URL receives once per new contract state. */
export interface ScCallbackEvent {
  event: 'smart_contract_state'
  smart_contract_hash: string
  smartContractToken: string
  type: 'deploy' | 'execute'
  blockId: string
  blockNumber: number
  transactionId: string
  initiator: string
  data: string
  state: string
  stateHash: string
  output: string
  /** the REST port of the node that sends the event */
  port: number
}
