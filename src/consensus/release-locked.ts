/**
 * release-all-locked-tokens: frees the tokens a transaction that can no longer complete left
 * Locked, deciding by the two-phase records (docs/protocol.md, "States of a transfer"):
 * - a sender record PREPARING (stale, driven by no run of this process) or ABORTED: the sender's
 *   abort path (tokens Free, quorums told ABORT);
 * - a sender record SIGNING, COMMITTING or COMMITTED: kept, the tokens are or may become the
 *   receiver's;
 * - no sender record: a quorum's pledge whose vote is RELEASED or unknown, or a lock no record
 *   explains, is freed; an open vote keeps it (the quorum's sweep asks the sender).
 */
import type { TokenState } from './ports.js'
import type { QuorumService } from './quorum.js'
import type { TransferSender } from './sender.js'

export interface LockedTokenOutcome {
  token: string
  owner: string
  value_milli: number
  /** the transaction that locked it, when the token names one */
  txid: string | null
  /** the sender record's state, or UNKNOWN when this node sent no such transaction */
  record_state: string
  reason: string
}

export type LockedToken = Pick<TokenState, 'tokenId' | 'owner' | 'valueMilli' | 'txid'>

export interface LockedRelease {
  released: LockedTokenOutcome[]
  kept: LockedTokenOutcome[]
}

/** A PREPARING transfer younger than this may still be running somewhere; the periodic recovery uses one minute. */
export const DEFAULT_RELEASE_MIN_AGE_MS = 60_000

export async function releaseLockedTokens (deps: {
  sender: Pick<TransferSender, 'releaseStuck' | 'record'>
  quorum: Pick<QuorumService, 'releaseOrphanLock'>
  /** every Locked token of the node's DIDs */
  locked: readonly LockedToken[]
  minAgeMs?: number
}): Promise<LockedRelease> {
  const out: LockedRelease = { released: [], kept: [] }
  const minAgeMs = deps.minAgeMs ?? DEFAULT_RELEASE_MIN_AGE_MS
  const byTx = new Map<string, LockedToken[]>()
  const loose: LockedToken[] = []
  for (const t of deps.locked) {
    if (t.txid === undefined) loose.push(t)
    else byTx.set(t.txid, [...(byTx.get(t.txid) ?? []), t])
  }
  const report = (t: LockedToken, released: boolean, state: string, reason: string): void => {
    (released ? out.released : out.kept).push({ token: t.tokenId, owner: t.owner, value_milli: t.valueMilli, txid: t.txid ?? null, record_state: state, reason })
  }
  for (const [txid, tokens] of byTx) {
    const rec = await deps.sender.record(txid)
    // only the sender's own tokens are the sender record's; a quorum's pledge for its own transfer cannot share a txid
    const own = rec === undefined ? [] : tokens.filter((t) => rec.tokens.includes(t.tokenId))
    const rest = rec === undefined ? tokens : tokens.filter((t) => !rec.tokens.includes(t.tokenId))
    if (own.length > 0) {
      const r = await deps.sender.releaseStuck(txid, minAgeMs)
      for (const t of own) report(t, r.released, r.state, r.why)
    }
    for (const t of rest) {
      const r = await deps.quorum.releaseOrphanLock(t.tokenId)
      report(t, r.released, rec?.state ?? 'UNKNOWN', r.why)
    }
  }
  for (const t of loose) {
    const r = await deps.quorum.releaseOrphanLock(t.tokenId)
    report(t, r.released, 'UNKNOWN', r.why)
  }
  return out
}
