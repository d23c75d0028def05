import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { SyncApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'

/** Wallet recovery from a fullnode and transaction-chain sync. */
export function syncRoutes (r: Registrar, s: ApiServices): void {
  const api = (): SyncApi => {
    if (s.sync === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'sync is not served by this node')
    return s.sync
  }
  r.on('sync', async ({ body }) => await api().recover(body))
  r.on('syncTransactionChain', async ({ body }) => {
    const res = await api().transactionChains(body)
    return ok(res.next_cursor === ''
      ? `Transaction chains of ${res.chains.length} token(s)`
      : `Transaction chains: ${res.count} block(s) in this page, send next_cursor for the rest`, res)
  })
}
