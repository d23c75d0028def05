import { decodeBlockEnvelope } from '../tokenchain/block.js'
import type { PeerSeal } from './claim-proofs.js'
import type { ChainBundle } from './messages.js'
import type { Ledger } from './ports.js'

/**
 * Certificates kept with the chain (docs/security.md, "Carried certificates"): the verified seals
 * of every block a node accepted or sent, keyed by the transaction they seal the states to, so the
 * node's later deliveries carry them for the blocks before the new one. A later receiver counts
 * them as the earlier blocks' own certificates: one lying arbiter's word cannot outweigh q(n) seals.
 */
export const ACCEPTED_CERTS = 'cs-certs'

/** Seals kept for one holder: a certificate needs q(n) of n seats; more than this is padding. */
export const CERT_SEALS_MAX = 64

/** Holders whose certificates one delivery carries, the latest blocks first. */
export const CARRIED_HOLDERS_MAX = 256

/** Groups seals by the transaction they seal to. */
export function byHolder (seals: readonly PeerSeal[]): Map<string, PeerSeal[]> {
  const out = new Map<string, PeerSeal[]>()
  for (const g of seals) {
    const l = out.get(g.holder)
    if (l === undefined) out.set(g.holder, [g]); else l.push(g)
  }
  return out
}

/**
 * The records to write so that `seals` are kept beside what is kept already: per holder, the union
 * (one entry per peer and signature, at most CERT_SEALS_MAX), only where it grew.
 */
export async function certificatesToKeep (ledger: Pick<Ledger, 'recordsByKey'>, seals: readonly PeerSeal[]): Promise<Array<[string, PeerSeal[]]>> {
  const grouped = byHolder(seals)
  if (grouped.size === 0) return []
  const holders = [...grouped.keys()]
  const stored = await ledger.recordsByKey<PeerSeal[]>(ACCEPTED_CERTS, holders)
  const out: Array<[string, PeerSeal[]]> = []
  holders.forEach((holder, i) => {
    const before = Array.isArray(stored[i]) ? stored[i] : []
    const merged = new Map(before.map((g) => [`${g.peer}|${g.sig}`, g]))
    for (const g of grouped.get(holder)!) if (merged.size < CERT_SEALS_MAX) merged.set(`${g.peer}|${g.sig}`, g)
    if (merged.size > before.length) out.push([holder, [...merged.values()]])
  })
  return out
}

/**
 * The seals a delivery carries for the blocks of its chains: each block's transaction (and block
 * hash, under which a block that is not its transaction's own is checked), the latest blocks first,
 * looked up among the certificates this node kept. Blocks with none kept are left to the
 * receiver's questions to their arbiters.
 */
export async function carriedFor (ledger: Pick<Ledger, 'recordsByKey'>, bundle: ChainBundle): Promise<PeerSeal[]> {
  const holders = new Set<string>()
  for (const chain of Object.values(bundle.chains)) {
    for (let i = chain.length - 1; i >= 1 && holders.size < CARRIED_HOLDERS_MAX; i--) {
      try {
        const b = decodeBlockEnvelope(chain[i]!)
        if ((b.content.quorumSignatures ?? []).length === 0) continue
        const tid = b.content.transInfo.tid
        if (tid !== undefined && tid !== '') holders.add(tid)
        holders.add(b.hash)
      } catch { /* a block that does not decode is the receiver's to refuse */ }
    }
  }
  if (holders.size === 0) return []
  const keys = [...holders]
  const stored = await ledger.recordsByKey<PeerSeal[]>(ACCEPTED_CERTS, keys)
  return stored.flatMap((l, i) => Array.isArray(l) ? l.filter((g) => g.holder === keys[i]) : [])
}

/**
 * A seal naming states outside the items of its holder is kept (and counted first) only up to a
 * request's batch of states: an honest arbiter's seal names the states it was asked in one request,
 * or those of the transaction; a longer one is an arbiter's padding.
 */
export const INEXACT_SEAL_STATES_MAX = 64

/**
 * `seals` best first for certifying `items`: those naming only states of their holder's items
 * (longest first: fewer cover more), then the others (shortest first); seals naming more than
 * INEXACT_SEAL_STATES_MAX states outside that are left out.
 */
export function rankSeals (items: ReadonlyArray<{ stateHash: string, holder: string }>, seals: readonly PeerSeal[]): PeerSeal[] {
  const statesOf = new Map<string, Set<string>>()
  for (const it of items) {
    let s = statesOf.get(it.holder)
    if (s === undefined) { s = new Set(); statesOf.set(it.holder, s) }
    s.add(it.stateHash)
  }
  const exact = new Map(seals.map((g) => [g, g.states.every((st) => statesOf.get(g.holder)?.has(st) === true)]))
  return seals.filter((g) => exact.get(g) === true || g.states.length <= INEXACT_SEAL_STATES_MAX)
    .sort((a, b) => Number(exact.get(b)) - Number(exact.get(a)) || (exact.get(a) === true ? b.states.length - a.states.length : a.states.length - b.states.length))
}

/** The positions of `items` by `state|holder` (a state may be asked about more than once). */
export function itemIndex (items: ReadonlyArray<{ stateHash: string, holder: string }>): Map<string, number[]> {
  const index = new Map<string, number[]>()
  items.forEach((it, i) => { const k = `${it.stateHash}|${it.holder}`; const l = index.get(k); if (l === undefined) index.set(k, [i]); else l.push(i) })
  return index
}

/**
 * The certificate to keep of `items` from verified `seals` (docs/security.md, "Carried
 * certificates"): per item and arbiter counted for it (`arbiters[i]`), one seal, the best ranked
 * (rankSeals); what a node keeps and carries is bounded by its items and seats, whatever an
 * arbiter chose to sign beside them.
 */
export function certificateCover (items: ReadonlyArray<{ stateHash: string, holder: string }>, arbiters: ReadonlyArray<ReadonlySet<string>>, seals: readonly PeerSeal[]): PeerSeal[] {
  const index = itemIndex(items)
  const covered = new Set<string>()
  const out: PeerSeal[] = []
  for (const g of rankSeals(items, seals)) {
    const adds = g.states.flatMap((st) => (index.get(`${st}|${g.holder}`) ?? []).filter((i) => arbiters[i]?.has(g.peer) === true).map((i) => `${i}|${g.peer}`)).filter((k) => !covered.has(k))
    if (adds.length === 0) continue
    for (const k of adds) covered.add(k)
    out.push(g)
  }
  return out
}
