import type { Block } from '../../tokenchain/block.js'
import { TransactionType } from '../../tokenchain/types.js'
import type { TransactionRecord } from '../../storage/token-records.js'

/**
 * The record of a transaction this node learned from a validated chain rather than took part in
 * (kind 'ingest'), naming `tokenId` and its block: `known` extended, or a new one built from the
 * transaction's block `last`. Every token record's txId then names a stored transaction.
 */
export function ingestedTransaction (known: TransactionRecord | undefined, txId: string, last: Block, tip: { owner: string, blockId: string }, tokenId: string, valueMilli: number, now: number): TransactionRecord {
  const tx = known ?? {
    txId, kind: 'ingest' as const, transactionType: last.content.transactionType || TransactionType.TRANSFERRED,
    initiator: last.content.transInfo.sender ?? tip.owner, ...(last.content.transInfo.receiver !== undefined ? { receiver: last.content.transInfo.receiver } : {}),
    tokens: [], amount: 0, comment: last.content.transInfo.comment, status: 'committed' as const, blockIds: [],
    epoch: last.content.epoch ?? Math.floor(now / 1000), createdAt: now, updatedAt: now
  }
  if (!tx.tokens.includes(tokenId)) { tx.tokens = [...tx.tokens, tokenId]; if (tx.kind === 'ingest') tx.amount += valueMilli }
  if (!tx.blockIds.includes(tip.blockId)) tx.blockIds = [...tx.blockIds, tip.blockId]
  return tx
}
