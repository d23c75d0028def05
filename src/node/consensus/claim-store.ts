import type { ClaimRecord, ClaimStore } from '../../consensus/claims.js'
import type { BatchOp, KvStore } from '../../storage/kv-store.js'

/**
 * The arbiter's table on the node's store: open claims in `claims`, those whose transaction
 * committed in `claims-spent` (kept for good, never scanned by the sweep), so the sweep's cost
 * follows the claims in flight, not the node's history.
 */
export function claimStoreOn (store: KvStore): ClaimStore {
  const open = store.collection<ClaimRecord>('claims')
  const spent = store.collection<ClaimRecord>('claims-spent')
  return {
    getMany: async (hashes) => {
      const [o, s] = await Promise.all([open.getMany(hashes), spent.getMany(hashes)])
      return hashes.map((_h, i) => s[i] ?? o[i])
    },
    write: async (puts, dels) => {
      const ops: BatchOp[] = []
      for (const [k, r] of puts) {
        if (r.committed === true) { ops.push({ type: 'put', collection: 'claims-spent', key: k, value: r }, { type: 'del', collection: 'claims', key: k }) } else ops.push({ type: 'put', collection: 'claims', key: k, value: r })
      }
      for (const k of dels) ops.push({ type: 'del', collection: 'claims', key: k })
      await store.batch(ops)
    },
    entries: () => open.entries()
  }
}

