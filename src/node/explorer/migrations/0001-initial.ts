import { column as c, type Table } from '../schema.js'

/**
 * Migration 1: the initial explorer schema. Never edit a released migration: add the next file
 * (0002-...) and list it in index.ts.
 */
const tokenState = [
  c('owner', 'key'), c('value_milli', 'bigint'), c('status', 'key'),
  c('latest_block_id', 'key'), c('latest_block_number', 'int'), c('tx_id', 'key', true), c('updated_at', 'bigint')
]

export const tables: Table[] = [
  {
    name: 'explorer_dids',
    columns: [c('did', 'key'), c('did_type', 'int', true), c('created_at', 'bigint', true)],
    primaryKey: ['did']
  },
  {
    name: 'explorer_tokens',
    columns: [
      c('token_id', 'key'), c('kind', 'key'), c('token_type', 'int'), c('value_milli', 'bigint'), c('owner', 'key'), c('status', 'key'),
      c('parent_token_id', 'key', true), c('latest_block_id', 'key'), c('latest_block_number', 'int'), c('tx_id', 'key', true),
      c('ft_name', 'key', true), c('creator', 'key', true), c('created_at', 'bigint'), c('updated_at', 'bigint')
    ],
    primaryKey: ['token_id'],
    indexes: [['owner'], ['status']]
  },
  {
    name: 'explorer_transactions',
    columns: [
      c('tx_id', 'key'), c('tx_type', 'key'), c('block_tx_type', 'key'), c('token_type', 'key'), c('sender', 'key'), c('receiver', 'key', true),
      c('amount_milli', 'bigint'), c('memo', 'text', true), c('epoch', 'bigint'), c('status', 'key'),
      c('quorums', 'text'), c('block_ids', 'text'), c('created_at', 'bigint'), c('updated_at', 'bigint')
    ],
    primaryKey: ['tx_id'],
    indexes: [['sender'], ['receiver'], ['epoch']]
  },
  {
    name: 'explorer_tx_tokens',
    columns: [c('tx_id', 'key'), c('token_id', 'key')],
    primaryKey: ['tx_id', 'token_id'],
    indexes: [['token_id']]
  },
  {
    name: 'explorer_tx_quorums',
    columns: [c('tx_id', 'key'), c('quorum_did', 'key')],
    primaryKey: ['tx_id', 'quorum_did'],
    indexes: [['quorum_did']]
  },
  {
    name: 'explorer_blocks',
    columns: [
      c('token_id', 'key'), c('block_number', 'int'), c('block_id', 'key'), c('block_hash', 'key'), c('block_tx_type', 'key'), c('owner', 'key'),
      c('sender', 'key', true), c('receiver', 'key', true), c('tx_id', 'key', true), c('memo', 'text', true), c('value_milli', 'bigint', true),
      c('epoch', 'bigint', true), c('signers', 'text'), c('stored_at', 'bigint', true)
    ],
    primaryKey: ['token_id', 'block_number'],
    indexes: [['tx_id'], ['block_id']]
  },
  {
    name: 'explorer_nfts',
    columns: [c('token_id', 'key'), c('creator', 'key', true), ...tokenState],
    primaryKey: ['token_id'],
    indexes: [['owner']]
  },
  {
    name: 'explorer_fts',
    columns: [c('token_id', 'key'), c('ft_name', 'key', true), c('creator', 'key', true), ...tokenState],
    primaryKey: ['token_id'],
    indexes: [['owner'], ['ft_name', 'creator']]
  },
  {
    name: 'explorer_contracts',
    columns: [c('token_id', 'key'), c('deployer', 'key', true), ...tokenState],
    primaryKey: ['token_id'],
    indexes: [['owner']]
  },
  {
    name: 'explorer_sync_state',
    columns: [c('name', 'key'), c('value', 'text'), c('updated_at', 'bigint')],
    primaryKey: ['name']
  }
]
