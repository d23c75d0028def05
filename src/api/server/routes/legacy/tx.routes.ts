import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { Registrar } from '../../registrar.js'

/** Legacy /api transaction endpoints, served by the same services as /svc/v1/tx. */
export function legacyTxRoutes (r: Registrar, s: ApiServices): void {
  r.on('legacyInitiateRbtTransfer', async ({ body }) => await s.consensus.transfer({
    initiator: body.sender, owner: body.receiver, rbt: body.tokenCOunt, memo: body.comment
  }))
  r.on('legacyGetByTxnId', async ({ query }) => ok('Got the transaction', await s.consensus.transaction(query.txnID)))
  r.on('legacyGetByComment', async ({ query }) => ok('Got transactions', await s.consensus.byComment(query.Comment)))
  r.on('legacyGetByDid', async ({ query }) => ok('Got transactions', await s.consensus.byDidRole(query.DID, query.Role)))
}
