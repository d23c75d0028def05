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
 * (the new pledge pieces' own blocks and contents).
 *
 * Bounded by a stated number of blocks and contents: the digests of the `keep` used last are remembered
 * (a block remembered is not read again to know it is stored); once the collection holds more than
 * twice that, the blocks neither remembered nor named by an open transfer's record are deleted.
 * The check of what is stored, the commit naming the blocks, and that pruning run one at a time,
 * so a block is never deleted between the check that found it and the commit that names it.
 */
const EVIDENCE = 'cs-evidence'
/** Evidence blocks and contents remembered as stored; the collection is pruned past twice this. */
export const EVIDENCE_KEEP = 2048

export class EvidenceStore {
  private readonly known: BoundedSet
  /** blocks in cs-evidence, counted on first use */
  private count: number | undefined
  private readonly lock = new KeyedMutex()

  constructor (private readonly ledger: Ledger, readonly keep = EVIDENCE_KEEP) {
    this.known = new BoundedSet(keep)
  }

  /** Blocks in cs-evidence as this process counts them (undefined before its first commit). */
  get stored (): number | undefined { return this.count }

  /**
   * One commit: `build`'s writes (the record naming `ref`) and the blocks of `evidence` not stored
   * yet. Without evidence, `build` alone.
   */
  async commit (evidence: ChainBundle | undefined, build: (w: LedgerWriter, ref: EvidenceRef | undefined) => void): Promise<void> {
    if (evidence === undefined) { await this.ledger.commit((w) => { build(w, undefined) }); return }
    const ref: EvidenceRef = { chains: {}, contents: {} }
    // stored values by key: a block's base64 under `b<digest>`, a token content's text under `c<digest>`
    const items = new Map<string, () => string>()
    for (const [id, chain] of Object.entries(evidence.chains)) {
      ref.chains[id] = chain.map((b) => { const h = sha3Hex(b); items.set(`b${h}`, () => b64(b)); return h })
    }
    for (const [id, text] of Object.entries(evidence.contents)) {
      const h = sha3Hex(text)
      items.set(`c${h}`, () => text)
      ref.contents[id] = h
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

  /** The evidence `ref` names, or undefined when a block or content of it is not stored. */
  async bundle (ref: EvidenceRef): Promise<ChainBundle | undefined> {
    const keys = [...new Set([...Object.values(ref.chains).flat().map((h) => `b${h}`), ...Object.values(ref.contents).map((h) => `c${h}`)])]
    const found = await this.ledger.recordsByKey<string>(EVIDENCE, keys)
    const byKey = new Map<string, string>()
    for (const [i, k] of keys.entries()) {
      const v = found[i]
      if (v === undefined) return undefined
      byKey.set(k, v)
    }
    return {
      chains: Object.fromEntries(Object.entries(ref.chains).map(([id, hs]) => [id, hs.map((h) => unb64(byKey.get(`b${h}`)!))])),
      contents: Object.fromEntries(Object.entries(ref.contents).map(([id, h]) => [id, byKey.get(`c${h}`)!]))
    }
  }

  /**
   * Deletes the blocks neither remembered as used lately nor named by an open transfer's record
   * (one whose evidence a delivery may still need); returns how many.
   */
  async prune (): Promise<number> {
    return await this.lock.run(EVIDENCE, async () => {
      const named = new Set<string>()
      for (const r of await openOutgoing(this.ledger)) {
        for (const hs of Object.values(r.evidence?.chains ?? {})) for (const h of hs) named.add(`b${h}`)
        for (const h of Object.values(r.evidence?.contents ?? {})) named.add(`c${h}`)
      }
      const gone: string[] = []
      let count = 0
      for await (const [h] of this.ledger.records(EVIDENCE)) {
        count++
        if (!named.has(h) && !this.known.has(h)) gone.push(h)
      }
      if (gone.length > 0) await this.ledger.commit((w) => { for (const h of gone) w.delRecord(EVIDENCE, h) })
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
