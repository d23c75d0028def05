import { column as c, type Table } from '../schema.js'

/**
 * Migration 2: the history of data-carrying tokens, one row per state (block). NFT states are what
 * GET /svc/v1/nfts/{id}/chain answers; the contract table has the same shape for smart-contract
 * deploys and executions. (FT states are the token rows of explorer_fts: FTs carry no data.)
 * Never edit a released migration: add the next file and list it in index.ts.
 */
const state = [
  c('token_id', 'key'), c('block_number', 'int'), c('block_id', 'key'), c('tx_id', 'key', true), c('tx_type', 'key'),
  c('initiator', 'key'), c('owner', 'key'), c('data', 'text', true), c('value_milli', 'bigint'), c('epoch', 'bigint')
]

export const tables: Table[] = [
  { name: 'explorer_nft_states', columns: state, primaryKey: ['token_id', 'block_number'], indexes: [['owner'], ['tx_id']] },
  { name: 'explorer_contract_states', columns: state, primaryKey: ['token_id', 'block_number'], indexes: [['owner'], ['tx_id']] }
]
