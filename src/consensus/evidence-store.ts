import { sha3Hex } from '../tokenchain/hash.js'
import { BoundedSet } from '../util/lru.js'
import { KeyedMutex } from './keyed-mutex.js'
import type { ChainBundle } from './messages.js'
import type { Ledger, LedgerWriter } from './ports.js'
import { b64, openOutgoing, unb64, type EvidenceRef } from './records.js'

/**
 * The signers' pledge evidence of a sender's decided transfers, kept by block (cs-evidence, key:
 * `b` and the sha3-256 hex digest of the block's bytes, value: the block in base64; a token
 * content the same way, under `c` and the digest of its text) and named from the transfer's record
 * by digest. A delivery after a restart needs it (the receiver checks the
 * signers' pledges with it), so it is written with the decision, in the same commit.
 *
 * The same quorums pledge pieces of the same split tokens, so one payment's evidence is mostly the
 * ancestry the last one carried: written whole with each record it was about 52 KB of the 95 KB a
 * paying node wrote per one-part payment; by block, only the blocks not stored yet are written
 * (the new pledge pieces' own blocks). The record names the pledged tokens' blocks, and the rest
 * of each signer's evidence (its pledged pieces' ancestry and the contents of the parts of each
 * split: some 20 tokens' digests) by one digest: the same for all the pieces of one split, so it
 * too is written once per split rather than once per payment.
 *
 * Bounded by a stated number of entries: the digests of the `keep` used last are remembered
 * (a block remembered is not read again to know it is stored); once the collection holds more than
 * twice that, the blocks neither remembered nor named by an open transfer's record are deleted.
 * The check of what is stored, the commit naming the blocks, and that pruning run one at a time,
 * so a block is never deleted between the check that found it and the commit that names it.
 */
const EVIDENCE = 'cs-evidence'
/** Evidence entries remembered as stored; the collection is pruned past twice this. */
export const EVIDENCE_KEEP = 1024

/** One signer's pledge evidence: its bundle, and the tokens it pledged (the rest is their ancestry). */
export interface EvidencePart { bundle: ChainBundle, pledged: readonly string[] }

interface Named { chains: Record<string, string[]>, contents: Record<string, string> }

export class EvidenceStore {
  private readonly known: BoundedSet
  /** entries in cs-evidence, counted on first use */
  private count: number | undefined
  private readonly lock = new KeyedMutex()

  constructor (private readonly ledger: Ledger, readonly keep = EVIDENCE_KEEP) {
    this.known = new BoundedSet(keep)
  }

  /** Entries in cs-evidence as this process counts them (undefined before its first commit). */
  get stored (): number | undefined { return this.count }

  /**
   * One commit: `build`'s writes (the record naming the evidence by `ref`) and the entries of the
   * evidence not stored yet. Without evidence, `build` alone.
   */
  async commit (parts: readonly EvidencePart[], build: (w: LedgerWriter, ref: EvidenceRef | undefined) => void): Promise<void> {
    if (parts.length === 0) { await this.ledger.commit((w) => { build(w, undefined) }); return }
    const ref: EvidenceRef = { chains: {}, contents: {}, ancestry: [] }
    // entries by key: a block's base64 under `b<digest>`, a token content's text under `c<digest>`,
    // a signer's ancestry named by digest (JSON) under `a<digest>`
    const items = new Map<string, () => string>()
    for (const part of parts) {
      const pledged = new Set(part.pledged)
      const ancestry: Named = { chains: {}, contents: {} }
      for (const id of Object.keys(part.bundle.chains).sort()) {
        const hs = part.bundle.chains[id].map((b) => { const h = sha3Hex(b); items.set(`b${h}`, () => b64(b)); return h })
        ;(pledged.has(id) ? ref : ancestry).chains[id] = hs
      }
      // every content goes with the ancestry: a pledged piece's is among its parent's parts' (the
      // same set for all the pieces of one split), so a sibling pledged later names the same ancestry
      for (const id of Object.keys(part.bundle.contents).sort()) {
        const text = part.bundle.contents[id]
        const h = sha3Hex(text)
        items.set(`c${h}`, () => text)
        ancestry.contents[id] = h
      }
      if (Object.keys(ancestry.chains).length + Object.keys(ancestry.contents).length > 0) {
        const text = JSON.stringify(ancestry)
        const h = sha3Hex(text)
        items.set(`a${h}`, () => text)
        ref.ancestry!.push(h)
      }
    }
    const prune = await this.lock.run(EVIDENCE, async () => {
      const count = this.count ?? await this.countStored()
      const unknown = [...items.keys()].filter((k) => !this.known.has(k))
      const found = unknown.length > 0 ? await this.ledger.recordsByKey<string>(EVIDENCE, unknown) : []
      const missing = unknown.filter((_, i) => found[i] === undefined)
      await this.ledger.commit((w) => {
        for (const k of missing) w.putRecord(EVIDENCE, k, items.get(k)!())
        build(w, ref)
      })
      for (const k of items.keys()) this.known.add(k)
      this.count = count + missing.length
      return this.count > 2 * this.keep
    })
    if (prune) await this.prune()
  }

  /** The evidence `ref` names, or undefined when an entry of it is not stored. */
  async bundle (ref: EvidenceRef): Promise<ChainBundle | undefined> {
    const named = await this.named(ref)
    if (named === undefined) return undefined
    const keys = [...new Set([...Object.values(named.chains).flat().map((h) => `b${h}`), ...Object.values(named.contents).map((h) => `c${h}`)])]
    const found = await this.ledger.recordsByKey<string>(EVIDENCE, keys)
    const byKey = new Map<string, string>()
    for (const [i, k] of keys.entries()) {
      const v = found[i]
      if (v === undefined) return undefined
      byKey.set(k, v)
    }
    return {
      chains: Object.fromEntries(Object.entries(named.chains).map(([id, hs]) => [id, hs.map((h) => unb64(byKey.get(`b${h}`)!))])),
      contents: Object.fromEntries(Object.entries(named.contents).map(([id, h]) => [id, byKey.get(`c${h}`)!]))
    }
  }

  /** Every token's digests `ref` names, its signers' ancestries read in. */
  private async named (ref: EvidenceRef): Promise<Named | undefined> {
    const out: Named = { chains: { ...ref.chains }, contents: { ...ref.contents } }
    const ancestry = ref.ancestry ?? []
    const found = ancestry.length > 0 ? await this.ledger.recordsByKey<string>(EVIDENCE, ancestry.map((h) => `a${h}`)) : []
    for (const text of found) {
      if (text === undefined) return undefined
      const a = JSON.parse(text) as Named
      Object.assign(out.chains, a.chains)
      Object.assign(out.contents, a.contents)
    }
    return out
  }

  /**
   * Deletes the entries neither remembered as used lately nor named by an open transfer's record
   * (one whose evidence a delivery may still need); returns how many.
   */
  async prune (): Promise<number> {
    return await this.lock.run(EVIDENCE, async () => {
      const named = new Set<string>()
      for (const r of await openOutgoing(this.ledger)) {
        if (r.evidence === undefined) continue
        for (const h of r.evidence.ancestry ?? []) named.add(`a${h}`)
        const all = await this.named(r.evidence)
        for (const hs of Object.values(all?.chains ?? r.evidence.chains)) for (const h of hs) named.add(`b${h}`)
        for (const h of Object.values(all?.contents ?? r.evidence.contents)) named.add(`c${h}`)
      }
      const gone: string[] = []
      let count = 0
      for await (const [k] of this.ledger.records(EVIDENCE)) {
        count++
        if (!named.has(k) && !this.known.has(k)) gone.push(k)
      }
      if (gone.length > 0) await this.ledger.commit((w) => { for (const k of gone) w.delRecord(EVIDENCE, k) })
      this.count = count - gone.length
      return gone.length
    })
  }

  private async countStored (): Promise<number> {
    let n = 0
    for await (const _ of this.ledger.records(EVIDENCE)) n++
    return n
  }
}
