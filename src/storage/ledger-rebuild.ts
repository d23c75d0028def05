/**
 * Rebuilds the records the token ledger derives from the token records (owner index, free-FT
 * index, balances) after a repair: the token records are the truth, the derived ones are made to
 * agree with them, and what the balances said before is reported against what the tokens now sum to.
 */
import type { BatchOp, KvStore } from './kv-store.js'
import {
  Collections, FREE_FT_INDEX_VERSION_KEY, emptyBalance, familyOf, freeFtKeyOf, ownerKey,
  type BalanceRecord, type OwnerIndexEntry, type TokenFamily, type TokenRecord, type TokenStatus
} from './token-records.js'

export interface BalanceChange {
  did: string
  family: TokenFamily
  status: TokenStatus
  /** what the stored balance said (milli-RBT for RBT) */
  before: number
  /** what the stored tokens sum to */
  after: number
}

export interface RebuildReport {
  /** derived records written or removed, by collection */
  written: { ownerIndex: number, freeFts: number, balances: number }
  removed: { ownerIndex: number, freeFts: number, balances: number }
  balanceChanges: BalanceChange[]
}

/** JSON with keys sorted at every level and zero counters dropped: equal records compare equal whatever their key order. */
function canonical (v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v)
  if (Array.isArray(v)) return `[${v.map(canonical).join(',')}]`
  const entries = Object.entries(v as Record<string, unknown>).filter(([, x]) => x !== undefined && x !== 0).sort(([a], [b]) => a < b ? -1 : a > b ? 1 : 0)
  return `{${entries.map(([k, x]) => `${JSON.stringify(k)}:${canonical(x)}`).join(',')}}`
}
const same = (a: unknown, b: unknown): boolean => canonical(a) === canonical(b)

export async function rebuildDerivedRecords (store: KvStore): Promise<RebuildReport> {
  const owner = new Map<string, OwnerIndexEntry>()
  const freeFts = new Map<string, number>()
  const balances = new Map<string, BalanceRecord>()
  const now = Date.now()
  for await (const [, t] of store.collection<TokenRecord>(Collections.tokens).entries()) {
    owner.set(ownerKey(t.owner, familyOf(t.kind), t.status, t.tokenId), { value: t.value, tokenType: t.tokenType, kind: t.kind })
    const fk = freeFtKeyOf(t)
    if (fk !== undefined) freeFts.set(fk, t.value)
    let b = balances.get(t.owner)
    if (b === undefined) { b = { ...emptyBalance(t.owner), updatedAt: now }; balances.set(t.owner, b) }
    const fam = familyOf(t.kind)
    const s = (b.sums[fam] ??= {}); s[t.status] = (s[t.status] ?? 0) + t.value
    const c = (b.counts[fam] ??= {}); c[t.status] = (c[t.status] ?? 0) + 1
    if (fam === 'ft' && t.status === 'Free') {
      const g = `${t.ftName ?? ''}\u0000${t.creator ?? ''}`
      const cur = (b.ftGroups[g] ??= { name: t.ftName ?? '', creator: t.creator ?? '', count: 0, value: 0 })
      cur.count++
      cur.value += t.value
    }
  }
  const ops: BatchOp[] = []
  const report: RebuildReport = { written: { ownerIndex: 0, freeFts: 0, balances: 0 }, removed: { ownerIndex: 0, freeFts: 0, balances: 0 }, balanceChanges: [] }

  for await (const [k, v] of store.collection<OwnerIndexEntry>(Collections.ownerIndex).entries()) {
    const want = owner.get(k)
    if (want === undefined) { ops.push({ type: 'del', collection: Collections.ownerIndex, key: k }); report.removed.ownerIndex++ } else if (same(want, v)) owner.delete(k)
  }
  for (const [k, v] of owner) { ops.push({ type: 'put', collection: Collections.ownerIndex, key: k, value: v }); report.written.ownerIndex++ }

  for await (const [k, v] of store.collection<number>(Collections.freeFts).entries()) {
    if (k === FREE_FT_INDEX_VERSION_KEY) continue
    const want = freeFts.get(k)
    if (want === undefined) { ops.push({ type: 'del', collection: Collections.freeFts, key: k }); report.removed.freeFts++ } else if (want === v) freeFts.delete(k)
  }
  for (const [k, v] of freeFts) { ops.push({ type: 'put', collection: Collections.freeFts, key: k, value: v }); report.written.freeFts++ }
  ops.push({ type: 'put', collection: Collections.freeFts, key: FREE_FT_INDEX_VERSION_KEY, value: 1 })

  const stored = new Map<string, BalanceRecord>()
  for await (const [k, v] of store.collection<BalanceRecord>(Collections.balances).entries()) stored.set(k, v)
  for (const did of new Set([...stored.keys(), ...balances.keys()])) {
    const have = stored.get(did) ?? emptyBalance(did)
    const want = balances.get(did)
    for (const fam of new Set([...Object.keys(have.sums), ...Object.keys(want?.sums ?? {})]) as Set<TokenFamily>) {
      const h = have.sums[fam] ?? {}
      const w = want?.sums[fam] ?? {}
      for (const st of new Set([...Object.keys(h), ...Object.keys(w)]) as Set<TokenStatus>) {
        if ((h[st] ?? 0) !== (w[st] ?? 0)) report.balanceChanges.push({ did, family: fam, status: st, before: h[st] ?? 0, after: w[st] ?? 0 })
      }
    }
    if (want === undefined) { ops.push({ type: 'del', collection: Collections.balances, key: did }); report.removed.balances++; continue }
    const { updatedAt: _a, ...haveRest } = have
    const { updatedAt: _b, ...wantRest } = want
    if (!stored.has(did) || !same(haveRest, wantRest)) { ops.push({ type: 'put', collection: Collections.balances, key: did, value: want }); report.written.balances++ }
  }
  await store.batch(ops, { sync: true })
  return report
}
