import type { BlockRecord, TokenRecord, TransactionRecord } from '../../storage/token-records.js'
import { txView } from '../consensus/consensus-api.js'
import type { SqlValue } from './sql.js'
import type { NftChainItem } from '../../api/contract/nft-results.js'

/** Maps the node's records onto explorer rows (column name → value). */
export type Row = Record<string, SqlValue | undefined>

export interface DidInfo { did: string, type?: number, createdAt?: number }

export const didRow = (d: DidInfo): Row => ({ did: d.did, did_type: d.type ?? null, created_at: d.createdAt ?? null })

export const tokenRow = (t: TokenRecord): Row => ({
  token_id: t.tokenId,
  kind: t.kind,
  token_type: t.tokenType,
  value_milli: t.value,
  owner: t.owner,
  status: t.status,
  parent_token_id: t.parent,
  latest_block_id: t.latestBlockId,
  latest_block_number: t.latestBlockNumber,
  tx_id: t.txId,
  ft_name: t.ftName,
  creator: t.creator,
  created_at: t.createdAt,
  updated_at: t.updatedAt
})

/** The NFT, FT or smart-contract state row of a token of that kind; undefined for RBT. An NFT's creator is passed in (from its genesis block). */
export function assetRow (t: TokenRecord, nftCreator?: string): { table: string, row: Row } | undefined {
  const state: Row = {
    token_id: t.tokenId,
    owner: t.owner,
    value_milli: t.value,
    status: t.status,
    latest_block_id: t.latestBlockId,
    latest_block_number: t.latestBlockNumber,
    tx_id: t.txId,
    updated_at: t.updatedAt
  }
  switch (t.kind) {
    case 'nft': return { table: 'explorer_nfts', row: { ...state, creator: nftCreator ?? t.creator } }
    case 'ft': return { table: 'explorer_fts', row: { ...state, ft_name: t.ftName, creator: t.creator } }
    case 'sc': return { table: 'explorer_contracts', row: { ...state, deployer: t.creator } }
    default: return undefined
  }
}

/** Transaction row plus its token and quorum link rows; derived through the API's own view. */
export function txRows (t: TransactionRecord): { tx: Row, tokens: Row[], quorums: Row[] } {
  const v = txView(t)
  return {
    tx: {
      tx_id: t.txId,
      tx_type: v.transaction_type,
      block_tx_type: t.transactionType,
      token_type: v.token_type,
      sender: v.sender,
      receiver: t.receiver,
      amount_milli: t.amount,
      memo: t.comment,
      epoch: t.epoch,
      status: t.status,
      quorums: JSON.stringify(v.quorums),
      block_ids: JSON.stringify(t.blockIds),
      created_at: t.createdAt,
      updated_at: t.updatedAt
    },
    tokens: [...new Set(t.tokens)].map((id) => ({ tx_id: t.txId, token_id: id })),
    quorums: [...new Set(v.quorums)].map((q) => ({ tx_id: t.txId, quorum_did: q }))
  }
}

export const blockRow = (b: BlockRecord): Row => ({
  token_id: b.tokenId,
  block_number: b.number,
  block_id: b.blockId,
  block_hash: b.hash,
  block_tx_type: b.transactionType,
  owner: b.owner,
  sender: b.sender,
  receiver: b.receiver,
  tx_id: b.txId,
  memo: b.comment,
  value_milli: b.value,
  epoch: b.epoch,
  signers: JSON.stringify(b.signers),
  stored_at: b.storedAt
})

/** One state of an NFT (explorer_nft_states), from the same view as the NFT chain API. */
export const nftStateRow = (tokenId: string, blockNumber: number, s: NftChainItem): Row => ({
  token_id: tokenId,
  block_number: blockNumber,
  block_id: s.block_id,
  tx_id: s.transactionId === '' ? null : s.transactionId,
  tx_type: s.transaction_type,
  initiator: s.initiator,
  owner: s.owner,
  data: s.data,
  value_milli: Math.round(s.value * 1000),
  epoch: s.epoch
})
