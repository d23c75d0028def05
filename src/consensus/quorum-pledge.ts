import { errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { splitToken, type SplitResult } from './part-split.js'
import type { KeyedMutex } from './keyed-mutex.js'
import type { Clock, ConsensusSigner, Ledger, LedgerWriter, TokenState } from './ports.js'
import { freeTokensById, isFreeOf } from './wallet-tokens.js'

export interface QuorumPledgeOptions {
  ledger: Ledger
  clock: Clock
  log: Logger
  /** the quorums' locks (the votes run under them) */
  locks: KeyedMutex
  /** the quorum DID's own key (to split a token so it pledges exactly its share); optional */
  ownerSignerFor?: (quorumDid: string) => ConsensusSigner | undefined
}

/**
 * A quorum's pledges at PREPARE: which of its Free tokens it locks for a vote (a piece of exactly
 * the share, found from what it last read of its holdings, or a token split for it), and the
 * background refill of pieces of the last share pledged. Split from the quorum service: the vote
 * asks `pledgeTokens` under the quorum's lock and stores the split it returns with the vote.
 */
export class QuorumPledges {
  private readonly ledger: Ledger
  private readonly clock: Clock
  private readonly log: Logger
  private readonly locks: KeyedMutex
  /** background refills of pledge pieces under way, one per quorum */
  private readonly refilling = new Map<string, Promise<void>>()
  /** what waits for a vote to end (by vote key): a refill */
  private readonly voteEnds = new Map<string, Array<() => void>>()
  /**
   * Per quorum, its Free tokens as this node last read them (the refill reads them after every
   * vote, off the sender's path), minus the pieces pledged since: where a PREPARE looks for a
   * piece of exactly the share before reading the holdings' range again. That read is one trip
   * through the storage thread pool, 3 to 35 ms of a loaded PREPARE, the longest part of its pledge.
   */
  private readonly freeHint = new Map<string, Array<{ tokenId: string, valueMilli: number }>>()

  constructor (private readonly opts: QuorumPledgeOptions) {
    this.ledger = opts.ledger
    this.clock = opts.clock
    this.log = opts.log
    this.locks = opts.locks
  }

  /** The vote `key` ended here: a refill waiting for it starts. */
  voteEnded (key: string): void {
    for (const wake of this.voteEnds.get(key) ?? []) wake()
    this.voteEnds.delete(key)
  }

  /**
   * Free tokens of the quorum covering `share`: a piece of exactly the share; else the smallest
   * piece worth at most twice the share, pledged whole; else a larger token split so exactly the
   * share is pledged. A split cuts several parts of the share at once (PLEDGE_PIECES), so the next
   * transfers of the same size find an exact part and sign no split of their own; after a piece
   * pledged whole, the refill cuts them once the transaction is over. Tokens are chosen from the
   * quorum's holdings (the owner index, or what the refill last read of it): only the chosen ones
   * are read. A split is built, not stored: the caller stores it with its vote.
   */
  async pledgeTokens (quorumDid: string, share: number, txid: string): Promise<{ tokens: TokenState[], split?: SplitResult } | undefined> {
    const hinted = await this.hintedPiece(quorumDid, share)
    if (hinted !== undefined) return { tokens: [hinted] }
    // a share with no exact piece (the first of its size): chosen among the tokens the refill read
    // after the last vote, each checked by its record; the range read (3 to 20 ms of a loaded
    // PREPARE, a quorum holding some 140 pieces) only when they offer nothing that is still Free
    const hint = this.freeHint.get(quorumDid)
    if (hint !== undefined && hint.length > 0) {
      const chosen = await this.choosePledge(quorumDid, hint, share, txid, false)
      if (chosen !== undefined) return chosen
    }
    const t0 = Date.now()
    const held = await this.ledger.holdings(quorumDid, 'Free')
    this.log.debug(`prepare ${txid.slice(0, 12)}: pledge holdings read in ${Date.now() - t0} ms (${held.length} free)`)
    return await this.choosePledge(quorumDid, held, share, txid, true)
  }

  /**
   * The pledge chosen among `held` (see pledgeTokens). `read`: `held` is the owner index as just
   * read, so its tokens are Free; otherwise it is the hint, and a choice that is no longer Free
   * gives undefined (the caller reads the index).
   */
  private async choosePledge (quorumDid: string, held: ReadonlyArray<{ tokenId: string, valueMilli: number }>, share: number, txid: string, read: boolean): Promise<{ tokens: TokenState[], split?: SplitResult } | undefined> {
    const t1 = Date.now()
    // a split while the sender waits cost each quorum 10 to 80 ms of a PREPARE; a piece a little
    // larger locks at most the share again until the pledge is released
    const piece = held.find((h) => h.valueMilli === share) ??
      held.filter((h) => h.valueMilli > share && h.valueMilli <= NEAR_PLEDGE_FACTOR * share).sort((a, b) => a.valueMilli - b.valueMilli)[0]
    this.freeHint.set(quorumDid, held.filter((h) => h !== piece))
    if (piece !== undefined) {
      if (read) return { tokens: [...(await freeTokensById(this.ledger, quorumDid, [piece.tokenId])).values()] }
      const t = await this.stillFree(quorumDid, piece)
      return t === undefined ? undefined : { tokens: [t] }
    }
    const split = await this.splitForPledge(quorumDid, held, share)
    if (split !== undefined) {
      this.log.debug(`prepare ${txid.slice(0, 12)}: pledge split in ${Date.now() - t1} ms`)
      return { tokens: [split.result.parts[0].token], split: split.result }
    }
    if (!read) return undefined
    const ids = pickPledge(held, share)
    return ids === undefined ? undefined : { tokens: [...(await freeTokensById(this.ledger, quorumDid, ids)).values()] }
  }

  /**
   * A Free piece of exactly `share` among those this node last read (see freeHint), checked by its
   * own record; each one looked at leaves the hint (pledged now, or no longer Free).
   */
  private async hintedPiece (quorumDid: string, share: number): Promise<TokenState | undefined> {
    const hint = this.freeHint.get(quorumDid) ?? []
    for (;;) {
      const i = hint.findIndex((h) => h.valueMilli === share)
      if (i < 0) return undefined
      const t = await this.stillFree(quorumDid, hint.splice(i, 1)[0])
      if (t !== undefined) return t
    }
  }

  /** The record of a token the hint names, when it is still Free for the quorum and of that value. */
  private async stillFree (quorumDid: string, h: { tokenId: string, valueMilli: number }): Promise<TokenState | undefined> {
    const [t] = await this.ledger.tokensById([h.tokenId])
    return t !== undefined && isFreeOf(t, quorumDid) && t.valueMilli === h.valueMilli ? t : undefined
  }

  /**
   * Cuts PLEDGE_PIECES parts of `share` from the largest Free token, the rest in two halves (built,
   * not stored). A pledged part travels with its whole ancestry as the receiver's evidence, so the
   * quorum's split tokens form a balanced tree, its depth growing with the logarithm of the number
   * of splits: cutting from the smallest larger token, the rest of the last split, made one line
   * one level deeper for every PLEDGE_PIECES pledges, and every delivery carried all of it.
   */
  private async splitForPledge (quorumDid: string, held: ReadonlyArray<{ tokenId: string, valueMilli: number }>, share: number): Promise<{ result: SplitResult, parent: TokenState } | undefined> {
    const owner = this.opts.ownerSignerFor?.(quorumDid)
    const bigger = held.filter((h) => h.valueMilli > share).sort((a, b) => b.valueMilli - a.valueMilli)[0]
    if (owner === undefined || bigger === undefined) return undefined
    // the background refill reads outside the quorum's lock: a token pledged meanwhile is left alone
    const [parent] = await this.ledger.tokensById([bigger.tokenId])
    if (parent === undefined || !isFreeOf(parent, quorumDid)) return undefined
    const chain = await this.ledger.chain(parent.tokenId)
    return { result: await splitToken(parent, chain[chain.length - 1], share, owner, this.clock.now(), PLEDGE_PIECES, 2), parent }
  }

  /** One commit: the parent burnt, its parts Free with their genesis blocks. */
  private async storeSplit (res: SplitResult): Promise<void> {
    await this.ledger.commit((w) => { writeSplit(w, res) })
  }

  /**
   * Keeps a few Free pieces of the share just pledged, so the next PREPAREs of that size find one
   * instead of splitting a token while the sender waits (a split cost 100-250 ms of a PREPARE under
   * load). It starts once the vote `key` is over (committed or released), or REFILL_WAIT_MS after
   * the vote at the latest, so its split does not take the CPU the rest of that transaction needs.
   * The split is built outside the quorum's lock and stored under it only if the parent token is
   * still Free at the same block; otherwise it is dropped, nothing having been written.
   */
  refillPledgePieces (quorumDid: string, share: number, key: string): void {
    if (this.refilling.has(quorumDid)) return
    const run = (async () => {
      await this.voteOver(key, REFILL_WAIT_MS)
      // a piece pledged while this read runs may stay in the hint: it is checked at use
      const held = await this.ledger.holdings(quorumDid, 'Free')
      this.freeHint.set(quorumDid, [...held])
      if (held.filter((h) => h.valueMilli === share).length >= PLEDGE_RESERVE) return
      const split = await this.splitForPledge(quorumDid, held, share)
      if (split === undefined) return
      const before = split.parent
      await this.locks.run(quorumDid, async () => {
        const now = await this.ledger.token(before.tokenId)
        if (now === undefined || !isFreeOf(now, quorumDid) || now.latestBlockId !== before.latestBlockId) return
        await this.storeSplit(split.result)
        const hint = this.freeHint.get(quorumDid)?.filter((h) => h.tokenId !== before.tokenId) ?? []
        this.freeHint.set(quorumDid, [...hint, ...split.result.parts.map((p) => ({ tokenId: p.token.tokenId, valueMilli: p.token.valueMilli }))])
      })
    })().catch((e) => { this.log.debug(`refilling pledge pieces of ${quorumDid}: ${errorMessage(e)}`) })
      .finally(() => { this.refilling.delete(quorumDid) })
    this.refilling.set(quorumDid, run)
  }

  /** Resolves once the vote `key` has ended here (see `ended`), or after `ms`. */
  private async voteOver (key: string, ms: number): Promise<void> {
    let timer: NodeJS.Timeout | undefined
    await new Promise<void>((resolve) => {
      const waiting = this.voteEnds.get(key) ?? []
      waiting.push(resolve)
      this.voteEnds.set(key, waiting)
      timer = setTimeout(resolve, ms)
      timer.unref?.()
    })
    clearTimeout(timer)
    this.voteEnds.delete(key)
  }

  /** Settles when the background refills under way are done (tests, shutdown). */
  async refills (): Promise<void> {
    await Promise.all([...this.refilling.values()])
  }
}

/** The writes of a split: the parent burnt, its parts Free with their genesis blocks. */
export function writeSplit (w: LedgerWriter, res: SplitResult): void {
  w.putToken(res.parent)
  w.putBlock(res.parent.tokenId, res.burnBlock.number, res.burnBlock.envelope)
  for (const p of res.parts) { w.putToken(p.token); w.putBlock(p.token.tokenId, 0, p.genesis) }
}

/** How many parts of a pledge share one split of a quorum token cuts. */
const PLEDGE_PIECES = 8
/** Free pieces of the last pledged share a quorum keeps ready (refilled in the background). */
const PLEDGE_RESERVE = 2
/** A piece worth up to this many times the share is pledged whole rather than a token split. */
const NEAR_PLEDGE_FACTOR = 2
/** Longest a refill waits for the end of the vote that started it. */
const REFILL_WAIT_MS = 2000

/** Ids of Free tokens covering `share` when no split is possible: the smallest one large enough, else the largest first. */
function pickPledge (held: ReadonlyArray<{ tokenId: string, valueMilli: number }>, share: number): string[] | undefined {
  const single = held.filter((h) => h.valueMilli >= share).sort((a, b) => a.valueMilli - b.valueMilli)[0]
  if (single !== undefined) return [single.tokenId]
  const out: string[] = []
  let sum = 0
  for (const h of [...held].sort((a, b) => b.valueMilli - a.valueMilli)) {
    out.push(h.tokenId); sum += h.valueMilli
    if (sum >= share) return out
  }
  return undefined
}

