/**
 * The node's transaction and quorum API: binds the consensus service to identity, the two-step
 * engine and the token repositories, and maps records onto the HTTP contract's shapes.
 */
import { ok, type Envelope, type PendingSignature } from '../../api/contract/envelope.js'
import type { TxResult } from '../../api/contract/routes.js'
import { parseTransferAmount } from '../../tokenchain/amount.js'
import type { TokenRepositories } from '../../storage/token-repositories.js'
import type { TransactionRecord } from '../../storage/token-records.js'
import type { OutgoingRecord } from '../../consensus/records.js'
import { ErrorCode, RbtError, isRbtError } from '../../util/errors.js'
import { isValidDid } from '../../wallet/did-string.js'
import type { SignPrompt } from '../../wallet/did-crypto.js'
import type { ConsensusService } from './consensus-service.js'
import type { QuorumRegistry } from './quorum-registry.js'
import type { ConsensusApi, TransferBody, TransferOutcome, TxFilters } from '../../api/server/services.js'
import type { SelfTransferResult } from '../../api/contract/operator-results.js'
export type { ConsensusApi, TransferBody, TransferOutcome, TxFilters } from '../../api/server/services.js'

/** A transaction as the API shows it (the contract's TxResult). */
export type TxView = TxResult

export interface ConsensusApiDeps {
  service: () => ConsensusService
  registry: QuorumRegistry
  repos: TokenRepositories
  identity: { record: (did: string) => Promise<{ type: number } | undefined>, isLocal: (did: string) => Promise<boolean> }
  twoStep: {
    start: <T>(did: string, mode: number, op: (prompt: SignPrompt) => Promise<Envelope<T>>, operation?: string) => Promise<Envelope<T | PendingSignature>>
    /** the engine's per-DID backoff around a password check made outside a challenge */
    checkPassword?: <T>(did: string, check: () => Promise<T>) => Promise<T>
  }
  remoteQuorumStatus: (did: string) => Promise<boolean>
  requestFaucet: (did: string, count: number, prompt: SignPrompt) => Promise<{ txid: string, count: number }>
  /**
   * The self transfer of `did` (docs/protocol.md, "Self transfer"): a transfer whose sender and
   * receiver are the same DID is this, with its answers, as in the reference.
   */
  selfTransfer: (did: string) => Promise<Envelope<SelfTransferResult | PendingSignature>>
}

const TRANSFER_KINDS = new Set(['transfer', 'receive', 'pledge'])

export function txView (t: TransactionRecord): TxView {
  const extra = (t.extra ?? {}) as { quorums?: string[], tokenType?: string }
  return {
    transactionID: t.txId,
    transaction_type: t.kind,
    token_type: extra.tokenType ?? (TRANSFER_KINDS.has(t.kind) ? 'rbt' : t.kind),
    sender: t.initiator,
    receiver: t.receiver ?? '',
    amount: t.amount / 1000,
    tokens: t.tokens,
    quorums: extra.quorums ?? [],
    memo: t.comment ?? '',
    epoch: t.epoch,
    block_ids: t.blockIds,
    status: t.status
  }
}

/**
 * What `GET /svc/v1/tx/{tx_id}` says of a transfer this node sent before it is committed
 * (docs/protocol.md, "States of a transfer").
 */
export const OUTGOING_STATUS: Record<OutgoingRecord['state'], string> = {
  PREPARING: 'preparing',
  SIGNING: 'signing',
  COMMITTING: 'delivery_pending',
  COMMITTED: 'committed',
  ABORTED: 'aborted'
}

function outgoingView (r: OutgoingRecord): TxView {
  return {
    transactionID: r.txid,
    transaction_type: 'transfer',
    token_type: r.nft !== undefined ? (r.nft.sc !== undefined ? 'smartContract' : 'nft') : r.fts !== undefined ? 'ft' : 'rbt',
    sender: r.sender,
    receiver: r.receiver,
    amount: r.amountMilli / 1000,
    tokens: r.tokens,
    quorums: r.signers,
    memo: r.memo,
    epoch: r.epoch,
    block_ids: [],
    status: OUTGOING_STATUS[r.state] ?? r.state.toLowerCase(),
    ...(r.reason !== undefined && r.state === 'ABORTED' ? { reason: r.reason } : {})
  }
}

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/
function dayStart (s: string, what: string): number {
  const ms = Date.parse(`${s}T00:00:00Z`)
  if (!DATE_RE.test(s) || Number.isNaN(ms)) throw new RbtError(ErrorCode.INVALID_INPUT, `${what} must be in YYYY-MM-DD format`)
  return Math.floor(ms / 1000)
}

/** Applies the platform-1.0.3 filters: inclusive date (UTC) and epoch ranges, then the N most recent. */
export function applyTxFilters (list: TxView[], f: TxFilters): TxView[] {
  let lo = -Infinity
  let hi = Infinity
  if (f.start_date !== undefined) lo = Math.max(lo, dayStart(f.start_date, 'start_date'))
  if (f.end_date !== undefined) hi = Math.min(hi, dayStart(f.end_date, 'end_date') + 86_399)
  if (f.start_epoch !== undefined) lo = Math.max(lo, f.start_epoch)
  if (f.end_epoch !== undefined) hi = Math.min(hi, f.end_epoch)
  let out = list.filter((t) => t.epoch >= lo && t.epoch <= hi).sort((a, b) => b.epoch - a.epoch || (a.transactionID < b.transactionID ? -1 : 1))
  if (f.latest !== undefined) out = out.slice(0, f.latest)
  return out
}

export function createConsensusApi (d: ConsensusApiDeps): ConsensusApi {
  const localMode = async (did: string): Promise<number> => {
    const rec = await d.identity.record(did)
    if (rec === undefined) throw new RbtError(ErrorCode.FORBIDDEN, `DID does not have an access: ${did} is not hosted on this node`)
    return rec.type
  }
  const view = async (txid: string): Promise<TxView> => {
    const t = await d.repos.transactions.get(txid)
    if (t !== undefined) return txView(t)
    // a transfer this node sent that is not finished yet (or was aborted): its sender record
    let rec: OutgoingRecord | undefined
    try {
      rec = await d.service().sender.record(txid)
    } catch (e) {
      // the core is not started: the stored transactions are all there is
      if (!isRbtError(e, ErrorCode.NOT_RUNNING)) throw e
    }
    if (rec === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `failed to get transactions details for tx: ${txid}`)
    return outgoingView(rec)
  }
  const all = async (): Promise<TxView[]> => (await d.repos.transactions.list()).map(txView)
  return {
    quorumsAdd: async (did) => { await d.registry.add([did]) },
    quorumsList: () => d.registry.list(),
    quorumsRemoveAll: async () => { await d.registry.removeAll() },
    quorumsSetup: async (did, password, priv) => {
      // the setup opens the DID's keys with the passwords given: wrong ones slow down like a challenge's
      const setup = async (): Promise<void> => { await d.service().setupQuorum(did, password, priv) }
      if (d.twoStep.checkPassword !== undefined) await d.twoStep.checkPassword(did, setup)
      else await setup()
    },
    quorumStatus: async (did) => await d.identity.isLocal(did) ? d.service().isQuorumSetUp(did) : await d.remoteQuorumStatus(did),
    transfer: async (body) => {
      if (body.hasNft === true || body.hasSmartContract === true) {
        throw new RbtError(ErrorCode.INVALID_INPUT, 'NFT and smart-contract transactions are not available through this call; send tokens.rbt and tokens.ft only')
      }
      const fts = (body.ft ?? []).map((f) => ({ name: f.ftName, creator: f.creatorDID, count: f.numberOfFts }))
      if (!isValidDid(body.initiator)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID: initiator')
      if (!isValidDid(body.owner)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID: owner')
      if (body.initiator === body.owner) {
        // as the reference (isSelfRBTTransfer): a transfer to oneself is the self transfer; the amount is not used
        if (fts.length > 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'an FT transfer needs a receiver other than the sender')
        return await d.selfTransfer(body.initiator) as Envelope<TransferOutcome | PendingSignature>
      }
      const amountMilli = fts.length > 0 && (body.rbt === 0 || body.rbt === '0' || body.rbt === '') ? 0 : parseTransferAmount(body.rbt)
      const mode = await localMode(body.initiator)
      return await d.twoStep.start(body.initiator, mode, async (prompt) => {
        const t0 = Date.now()
        const r = await d.service().transfer({ initiator: body.initiator, owner: body.owner, amountMilli, memo: body.memo ?? '', ...(fts.length > 0 ? { fts } : {}) }, prompt)
        // success means the receiver holds the tokens: the consensus service throws DELIVERY_PENDING otherwise
        const message = body.referenceMessage === true
          ? `${fts.length > 0 ? 'FT ' : ''}Transfer finished successfully in ${((Date.now() - t0) / 1000).toFixed(1)}s with trnxid ${r.txid}`
          : `Transaction ${r.txid} completed successfully`
        return ok<TransferOutcome>(message, { transactionID: r.txid, mintedNFTChildren: null })
      }, 'transfer')
    },
    transactions: all,
    transaction: view,
    byDid: async (did, tokenType, f) => {
      const type = tokenType.toLowerCase() === 'smartcontract' ? 'smartContract' : tokenType.toLowerCase()
      const list = (await d.repos.transactions.byDid(did)).map(txView).filter((t) => t.token_type === type)
      return applyTxFilters(list, f)
    },
    byComment: async (comment) => (await all()).filter((t) => t.memo === comment),
    byDidRole: async (did, role) => (await d.repos.transactions.byDid(did)).map(txView).filter((t) => role === 'Sender' ? t.sender === did : t.receiver === did),
    faucet: async (did, count) => {
      if (!Number.isSafeInteger(count) || count <= 0 || count > 100) throw new RbtError(ErrorCode.INVALID_INPUT, 'token_count must be a whole number from 1 to 100')
      const mode = await localMode(did)
      return await d.twoStep.start(did, mode, async (prompt) => {
        const r = await d.requestFaucet(did, count, prompt)
        return ok(`Faucet sent ${r.count} test RBT in transaction ${r.txid}`, { transactionID: r.txid, count: r.count })
      }, 'faucet')
    }
  }
}
