/**
 * The node's sync API: binds the sync service to identity (the local DID and its signer) and to
 * the two-step engine, for POST /svc/v1/sync and POST /svc/v1/sync-transaction-chain.
 */
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import { bytesToHex } from '../../tokenchain/hash.js'
import { isDid } from '../../tokenchain/index.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { PEER_ADDRESS_HINT, isPeerAddress } from '../../api/contract/patterns.js'
import type { TokenIdentityPort, TwoStepPort } from '../tokens/token-api.js'
import type { RecoverySummary, SyncService, TxChainResult } from './sync-service.js'
import type { SyncApi, TxChainRequest } from '../../api/server/services.js'
export type { SyncApi } from '../../api/server/services.js'

/** A fullnode named by the caller must be a peer id or a multiaddr ending with one: checked before any network call. */
function checkFullnode (fullnode: string | undefined): void {
  if (fullnode !== undefined && fullnode !== '' && !isPeerAddress(fullnode)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid fullnode: expected ${PEER_ADDRESS_HINT}`)
}

const typeLine = (s: RecoverySummary): string => Object.entries(s.by_type).map(([k, v]) => `${v.count} ${k} (${v.value})`).join(', ')

export function createSyncApi (sync: SyncService, identity: TokenIdentityPort, twoStep: TwoStepPort): SyncApi {
  return {
    recover: async ({ did, fullnode }) => {
      if (!isDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
      checkFullnode(fullnode)
      const rec = await identity.record(did)
      if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${did} is not hosted on this node (create it from its mnemonic or key files first)`)
      return await twoStep.start(did, rec.type, async (prompt) => {
        const signer = await identity.signerFor(did, prompt)
        const summary = await sync.recover(did, async (digest) => bytesToHex(await signer.pvtSign(digest)), fullnode)
        return ok(summary.tokens === 0
          ? `Wallet synced from fullnode ${summary.fullnode}: no tokens owned by ${did}`
          : `Wallet synced from fullnode ${summary.fullnode}: ${summary.tokens} token(s) recovered: ${typeLine(summary)}`, summary)
      }, 'sync')
    },
    transactionChains: async (input) => { checkFullnode(input.fullnode); return await sync.transactionChains(input) }
  }
}
