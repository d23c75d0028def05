/**
 * The operator features of the reference's CLI (docs/api.md, "Operator features"), each a thin
 * binding of services that already exist: the release of Locked tokens over the sender's abort
 * path and the quorum's pledge records.
 */
import type { LockedTokenItem, ReleaseLockedResult } from '../api/contract/operator-results.js'
import { releaseLockedTokens, DEFAULT_RELEASE_MIN_AGE_MS, type LockedTokenOutcome } from '../consensus/release-locked.js'
import type { TokenRepositories } from '../storage/token-repositories.js'
import type { TokenFamily } from '../storage/token-records.js'
import type { ConsensusService } from './consensus/consensus-service.js'

export interface OperatorApi {
  /** release-all-locked-tokens; `minAgeMs`: how long a PREPARING transfer must have been idle */
  releaseLocked: (opts?: { minAgeMs?: number }) => Promise<ReleaseLockedResult>
}

export interface OperatorApiDeps {
  consensus: () => ConsensusService
  repos: TokenRepositories
  localDids: () => Promise<string[]>
}

const FAMILIES: readonly TokenFamily[] = ['rbt', 'ft', 'nft', 'sc']

const item = (o: LockedTokenOutcome): LockedTokenItem => ({
  token: o.token, did: o.owner, value: o.value_milli / 1000, transaction_id: o.txid, record_state: o.record_state, reason: o.reason
})

export function createOperatorApi (d: OperatorApiDeps): OperatorApi {
  return {
    releaseLocked: async (opts = {}) => {
      const cs = d.consensus()
      // every Locked token of the node's DIDs, from the owner index (one prefix read per DID and family)
      const ids: string[] = []
      for (const did of await d.localDids()) {
        for (const f of FAMILIES) for (const e of await d.repos.owners.list(did, f, 'Locked')) ids.push(e.tokenId)
      }
      const recs = ids.length === 0 ? [] : await d.repos.tokens.getMany(ids)
      const locked = recs.flatMap((r) => r === undefined || r.status !== 'Locked'
        ? []
        : [{ tokenId: r.tokenId, owner: r.owner, valueMilli: r.value, ...(r.txId !== undefined ? { txid: r.txId } : {}) }])
      const out = await releaseLockedTokens({ sender: cs.sender, quorum: cs.quorum, locked, minAgeMs: opts.minAgeMs ?? DEFAULT_RELEASE_MIN_AGE_MS })
      return { released: out.released.map(item), kept: out.kept.map(item) }
    }
  }
}
