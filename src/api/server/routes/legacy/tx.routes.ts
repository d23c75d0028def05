import { ok } from '../../../contract/envelope.js'
import type { TxResult } from '../../../contract/routes.js'
import type { ApiServices } from '../../services.js'
import { ErrorCode, isRbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { didOf, withKeys } from './answer.js'

/** The reference's `TransactionDetails` (Go field names, no JSON tags) of a transaction of this node. */
export interface LegacyTxnDetails {
  TransactionID: string
  TransactionType: string
  BlockID: string
  /** 0 sent, 1 received, 2 deployed, 3 executed (the reference's modes), 0 for the other kinds */
  Mode: number
  SenderDID: string
  ReceiverDID: string
  Amount: number
  TotalTime: number
  Comment: string
  DateTime: string
  Status: boolean
  DeployerDID: string
  Epoch: number
}

const MODES: Record<string, number> = { transfer: 0, receive: 1, deploy: 2, execute: 3 }

export function txnDetails (t: TxResult): LegacyTxnDetails {
  return {
    TransactionID: t.transactionID,
    TransactionType: t.transaction_type,
    BlockID: t.block_ids[0] ?? '',
    Mode: MODES[t.transaction_type] ?? 0,
    SenderDID: t.sender,
    ReceiverDID: t.receiver,
    Amount: t.amount,
    // this node does not keep how long a transaction took
    TotalTime: 0,
    Comment: t.memo,
    DateTime: new Date(t.epoch * 1000).toISOString(),
    Status: t.status === 'committed',
    DeployerDID: t.transaction_type === 'deploy' ? t.sender : '',
    Epoch: t.epoch
  }
}

/**
 * Legacy /api transaction endpoints, served by the same services as /svc/v1/tx. The queries answer
 * the reference's `TxnDetails` list beside the /svc/v1 result.
 */
export function legacyTxRoutes (r: Registrar, s: ApiServices): void {
  r.on('legacyInitiateRbtTransfer', async ({ body }) => await s.consensus.transfer({
    initiator: didOf(body.sender), owner: didOf(body.receiver), rbt: body.tokenCOunt, memo: body.comment, referenceMessage: true
  }))
  r.on('legacyGetByTxnId', async ({ query }) => {
    try {
      const tx = await s.consensus.transaction(query.txnID)
      return withKeys(ok('Retrieved Txn Details', tx), { TxnDetails: [txnDetails(tx)] })
    } catch (e) {
      // as the reference: an unknown id is an empty answer, not an error
      if (!isRbtError(e, ErrorCode.NOT_FOUND)) throw e
      return withKeys(ok(`no records present for this Transaction ID : ${query.txnID}`, null as unknown as TxResult), { TxnDetails: [] })
    }
  })
  r.on('legacyGetByComment', async ({ query }) => {
    const list = await s.consensus.byComment(query.Comment)
    return withKeys(ok(list.length === 0 ? `no records present for the comment : ${query.Comment}` : 'Retrieved Txn Details', list), { TxnDetails: list.map(txnDetails) })
  })
  r.on('legacyGetByDid', async ({ query }) => {
    const role = query.Role === 'sender' ? ['Sender' as const] : query.Role === 'receiver' ? ['Receiver' as const] : ['Sender' as const, 'Receiver' as const]
    const seen = new Set<string>()
    const list: TxResult[] = []
    for (const r of role) {
      for (const t of await s.consensus.byDidRole(query.DID, r)) if (!seen.has(t.transactionID)) { seen.add(t.transactionID); list.push(t) }
    }
    return withKeys(ok(list.length === 0 ? `no records present for this DID : ${query.DID}` : 'Retrieved Txn Details', list), { TxnDetails: list.map(txnDetails) })
  })
}
