/**
 * A quorum's pledges after its vote is committed: released when their period ends, when a valid
 * block proves the backed tokens moved on, by a proof of work for one token (the release-2.6
 * unpledge), and the operator's release of a Locked token no live transaction holds. Every change
 * runs under the pledging quorum's lock, the one its votes take (`locks`, shared with
 * QuorumService), and lands in one commit with the pledge index.
 */
import { decodeBlockEnvelope, formatBlockId, parseBlockId, tokenEntry, type DecodedBlock } from '../tokenchain/block.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { TransactionType } from '../tokenchain/types.js'
import { validateExtension, type VerifiedBlockCache } from '../tokenchain/validate.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { BoundedSet } from '../util/lru.js'
import type { ChainSource } from './chain-sync.js'
import type { KeyedMutex } from './keyed-mutex.js'
import type { Clock, KeyRange, Ledger, Verifier } from './ports.js'
import { prefixRange } from './ports.js'
import { PLEDGE_INDEX_VERSION_KEY, pledgeDuePrefix, pledgeDueUntil, pledgeIndexKeys, pledgeStatePrefix, voteKey, type PledgeRecord, type VoteRecord } from './records.js'
import { verifyProof, type UnpledgeProof } from './unpledge-pow.js'

/** Blocks that move a token on from a state and carry quorum signatures (a pledge's release needs one). */
const MOVING_ON = new Set<string>([TransactionType.TRANSFERRED, TransactionType.EXECUTED, TransactionType.PINNED_AS_SERVICE])

export interface PledgeReleaseOptions {
  ledger: Ledger
  clock: Clock
  log: Logger
  /** the quorums' locks (by quorum DID), shared with their votes */
  locks: KeyedMutex
  verifier: Verifier
  /** envelopes whose signatures this node verified */
  cache: VerifiedBlockCache
}

export class PledgeReleases {
  constructor (private readonly o: PledgeReleaseOptions) {}

  /** Releases the pledges whose period ended by `now`. */
  async releaseDue (now: number): Promise<void> {
    await this.unpledge(this.indexed([{ gte: pledgeDuePrefix, lt: pledgeDueUntil(now) }]), (p) => p.releaseAt <= now)
  }

  /**
   * A claim that tokens moved on again (a transaction announcement, or this node's own commit)
   * releases the pledges that backed their previous state, but only once a valid block proves
   * it: a block that continues the token from exactly the backed state, carrying the sender's
   * signature and at least five quorum signatures that verify (see provenSpend). The block is
   * read from this node's ledger, else from `source` (the announcing peer). Claims that match no
   * pledge held here cost an index read and nothing else; unproven claims change nothing.
   */
  async tokensMovedOn (spentStates: readonly string[], source?: Pick<ChainSource, 'chain'>): Promise<void> {
    if (spentStates.length === 0) return
    const set = new Set(spentStates)
    const claimed = (p: PledgeRecord): boolean => p.newBlockIds.some((s) => set.has(s))
    await this.unpledge(this.indexed([...set].map((s) => prefixRange(pledgeStatePrefix(s)))), claimed, async (p) => {
      for (const s of p.newBlockIds) {
        if (!set.has(s)) continue
        const problem = await this.provenSpend(s, source).catch((e) => errorMessage(e))
        if (problem === undefined) return true
        this.o.log.debug(`pledge ${p.quorumDid}/${p.txid} kept: the claim that ${s} moved on is not proven (${problem})`)
      }
      return false
    })
  }

  /** Spending blocks found invalid for a state (`<state>|<envelope digest>`): not verified again. */
  private readonly refutedSpends = new BoundedSet(10_000)

  /**
   * Whether a valid block spends `state` (`<tokenId>@<n>-<hash>`): undefined when one does, else
   * why not. The backed block (number n) must hash to the state's block id; the spending block
   * (number n + 1) must link to it, be a quorum-signed consensus block with the initiator's
   * signature, and validate as an extension of the backed state (owner link, contract, sender and
   * every quorum signature, through the verified-block cache).
   */
  private async provenSpend (state: string, source?: Pick<ChainSource, 'chain'>): Promise<string | undefined> {
    const at = state.indexOf('@')
    if (at <= 0) return 'not a token state'
    const tokenId = state.slice(0, at)
    const blockId = state.slice(at + 1)
    let n: number
    try { n = parseBlockId(blockId).number } catch { return 'not a block id' }
    let backed: DecodedBlock | undefined
    let spend: DecodedBlock | undefined
    const consider = (b: DecodedBlock): void => {
      const e = tokenEntry(b, tokenId)
      if (e === undefined) return
      const num = Number(e.blockNumber)
      if (num === n && formatBlockId(n, b.hash) === blockId) backed ??= b
      else if (num === n + 1 && e.previousBlockId === blockId) spend ??= b
    }
    const local = await this.o.ledger.chain(tokenId)
    for (let i = local.length - 1; i >= 0 && (backed === undefined || spend === undefined); i--) {
      const env = local[i]
      if (env === undefined) continue
      const b = decodeBlockEnvelope(env)
      consider(b)
      const e = tokenEntry(b, tokenId)
      if (e !== undefined && Number(e.blockNumber) < n) break
    }
    if ((backed === undefined || spend === undefined) && source !== undefined) {
      const from = backed === undefined ? n : n + 1
      let pages = 0
      for await (const page of source.chain(tokenId, from)) {
        for (const env of page) {
          if (!(env instanceof Uint8Array)) continue
          try { consider(decodeBlockEnvelope(env)) } catch { return 'a fetched block does not decode' }
        }
        if ((backed !== undefined && spend !== undefined) || ++pages >= 2) break
      }
    }
    if (backed === undefined) return 'the backed block is not known'
    if (spend === undefined) return 'no block spends it'
    const refuted = `${state}|${sha3Hex(spend.envelopeBytes)}`
    if (this.refutedSpends.has(refuted)) return 'the spending block was found invalid before'
    const type = spend.content.transactionType
    const init = spend.content.initiatorSignature
    if (!MOVING_ON.has(type) || init === undefined) {
      this.refutedSpends.add(refuted)
      return `block type "${type}" is not a signed transaction`
    }
    // the owner's signature first, alone: a block nobody who holds the token signed costs one
    // verification, not a lookup of every DID it names as a quorum
    if (init.initiatorDid !== backed.content.owner) {
      this.refutedSpends.add(refuted)
      return `signed by ${init.initiatorDid}, the owner at that state is ${backed.content.owner}`
    }
    let ownerSigned: boolean
    try {
      ownerSigned = init.signType === 0
        ? await this.o.verifier.verify(init.initiatorDid, init.hash, init.privSignature, 'owner')
        : await this.o.verifier.verifyNlss?.(init.initiatorDid, init.hash, init.nlssShareSignature, init.privSignature, 'owner') ?? false
    } catch (e) {
      return `the owner's signature could not be checked: ${errorMessage(e)}`
    }
    if (!ownerSigned) {
      this.refutedSpends.add(refuted)
      return 'the owner\'s signature does not verify'
    }
    try {
      await validateExtension(blockId, [spend.envelopeBytes], {
        tokenId, verifier: this.o.verifier, cache: this.o.cache, tipOwner: backed.content.owner, tipTokenType: tokenEntry(backed, tokenId)!.tokenType
      })
    } catch (e) {
      // a signer whose keys could not be found now may be found later: only a definite failure is remembered
      const message = errorMessage(e)
      if (!message.includes('could not be checked')) this.refutedSpends.add(refuted)
      return message
    }
    return undefined
  }

  /** The pledge index entries in `ranges` (after indexing the pledges of an older data dir once). */
  private async * indexed (ranges: readonly KeyRange[]): AsyncIterable<[string, string]> {
    this.pledgeIndexReady ??= this.indexOldPledges().catch((e) => { this.pledgeIndexReady = undefined; throw e })
    await this.pledgeIndexReady
    for (const range of ranges) yield * this.o.ledger.records<string>('cs-pledge-index', range)
  }

  private pledgeIndexReady?: Promise<void>
  private async indexOldPledges (): Promise<void> {
    if (await this.o.ledger.record('cs-pledge-index', PLEDGE_INDEX_VERSION_KEY) !== undefined) return
    const pledges: PledgeRecord[] = []
    for await (const [, p] of this.o.ledger.records<PledgeRecord>('cs-pledges')) pledges.push(p)
    await this.o.ledger.commit((w) => {
      for (const p of pledges) for (const k of pledgeIndexKeys(p)) w.putRecord('cs-pledge-index', k, voteKey(p.quorumDid, p.txid))
      w.putRecord('cs-pledge-index', PLEDGE_INDEX_VERSION_KEY, 1)
    })
    if (pledges.length > 0) this.o.log.info(`indexed ${pledges.length} pledge(s) kept from before the pledge index`)
  }

  /**
   * Releases the pledges the index `entries` name that are `due`. `proven`, when given, must also
   * hold; it runs before the quorum's lock is taken (it may fetch blocks from a peer), and a
   * pledge record never changes its backed states, so the answer still holds under the lock.
   */
  private async unpledge (entries: AsyncIterable<[string, string]>, due: (p: PledgeRecord) => boolean, proven?: (p: PledgeRecord) => Promise<boolean>): Promise<void> {
    const todo = new Map<string, string[]>()
    for await (const [indexKey, key] of entries) todo.set(key, [...(todo.get(key) ?? []), indexKey])
    for (const [key, indexKeys] of todo) {
      const quorumDid = key.slice(0, key.lastIndexOf('/'))
      if (proven !== undefined) {
        const p = await this.o.ledger.record<PledgeRecord>('cs-pledges', key)
        if (p !== undefined && (!due(p) || !await proven(p))) continue
      }
      await this.o.locks.run(quorumDid, async () => {
        const p = await this.o.ledger.record<PledgeRecord>('cs-pledges', key)
        if (p === undefined) {
          // an entry left by a pledge released before (a crash cannot leave one: both go in one commit)
          await this.o.ledger.commit((w) => { for (const k of indexKeys) w.delRecord('cs-pledge-index', k) })
          return
        }
        if (!due(p)) return
        const tokens = await Promise.all(p.tokens.map(async (id) => await this.o.ledger.token(id)))
        const now = this.o.clock.now()
        await this.o.ledger.commit((w) => {
          for (const t of tokens) if (t !== undefined && t.status === 'Pledged' && t.txid === p.txid) w.putToken({ ...t, status: 'Free', updatedAt: now })
          w.delRecord('cs-pledges', key)
          for (const k of pledgeIndexKeys(p)) w.delRecord('cs-pledge-index', k)
        })
      })
    }
  }

  /** The committed pledge that holds `tokenId` on this node, while the token is still Pledged for it. */
  async pledgeHolding (tokenId: string): Promise<PledgeRecord | undefined> {
    const t = await this.o.ledger.token(tokenId)
    if (t === undefined || t.status !== 'Pledged' || t.txid === undefined) return undefined
    const p = await this.o.ledger.record<PledgeRecord>('cs-pledges', voteKey(t.owner, t.txid))
    return p !== undefined && p.tokens.includes(tokenId) ? p : undefined
  }

  /**
   * Early release of one pledged token by a proof of work (the release-2.6 unpledge): the proof
   * must be for the pledge that holds the token now and verify at `minLevel` or above. In one
   * commit the token becomes Free, leaves its pledge record (deleted when it was the last token)
   * and the proof is stored (cs-pow-proofs, key `<token>/<txid>`). The period and moved-on
   * releases of the rest of the pledge are unchanged.
   */
  async releaseByProof (proof: UnpledgeProof, minLevel: number): Promise<void> {
    await this.o.locks.run(proof.pledger, async () => {
      const t = await this.o.ledger.token(proof.token)
      if (t === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `token ${proof.token} is not on this node`)
      if (t.status !== 'Pledged') throw new RbtError(ErrorCode.CONFLICT, `token ${proof.token} is not pledged (status ${t.status})`)
      const p = await this.o.ledger.record<PledgeRecord>('cs-pledges', voteKey(t.owner, t.txid ?? ''))
      if (p === undefined || !p.tokens.includes(proof.token) || t.owner !== proof.pledger || t.txid !== proof.txid) {
        throw new RbtError(ErrorCode.CONFLICT, `token ${proof.token} is not held by a pledge of ${proof.pledger} for transaction ${proof.txid}`)
      }
      const v = verifyProof(proof, { token: t.tokenId, pledger: t.owner, txid: p.txid }, { minLevel })
      if (!v.valid) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `unpledge proof rejected: ${v.reason ?? 'invalid'}`)
      const now = this.o.clock.now()
      const rest = p.tokens.filter((x) => x !== proof.token)
      await this.o.ledger.commit((w) => {
        w.putToken({ ...t, status: 'Free', updatedAt: now })
        if (rest.length > 0) w.putRecord('cs-pledges', voteKey(p.quorumDid, p.txid), { ...p, tokens: rest })
        else {
          w.delRecord('cs-pledges', voteKey(p.quorumDid, p.txid))
          for (const k of pledgeIndexKeys(p)) w.delRecord('cs-pledge-index', k)
        }
        w.putRecord('cs-pow-proofs', `${proof.token}/${proof.txid}`, proof)
      })
    })
  }

  /** A stored unpledge proof of `token` (for `txid`, or any when absent). */
  async storedProof (token: string, txid?: string): Promise<UnpledgeProof | undefined> {
    if (txid !== undefined) return await this.o.ledger.record<UnpledgeProof>('cs-pow-proofs', `${token}/${txid}`)
    let found: UnpledgeProof | undefined
    for await (const [, v] of this.o.ledger.records<UnpledgeProof>('cs-pow-proofs', prefixRange(`${token}/`))) found = v
    return found
  }

  /**
   * The operator's release of a Locked token no live transaction holds (release-all-locked-tokens):
   * no sender record of its transaction on this node (the sender's own Locked tokens are released
   * through `TransferSender.releaseStuck`), and no open vote of its owner for it: a vote RELEASED,
   * or none at all, frees it. A RESERVED or SIGNED vote keeps it (the sender's outcome decides, see
   * sweep), and so does a COMMITTED one. Under the owner's lock, as every pledge change.
   */
  async releaseOrphanLock (tokenId: string): Promise<{ released: boolean, why: string }> {
    const first = await this.o.ledger.token(tokenId)
    if (first === undefined || first.status !== 'Locked') return { released: false, why: 'not Locked any more' }
    return await this.o.locks.run(first.owner, async () => {
      const t = await this.o.ledger.token(tokenId)
      if (t === undefined || t.status !== 'Locked') return { released: false, why: 'not Locked any more' }
      const txid = t.txid
      if (txid !== undefined && await this.o.ledger.record('cs-outgoing', txid) !== undefined) return { released: false, why: 'held by a transfer this node sent' }
      const vote = txid === undefined ? undefined : await this.o.ledger.record<VoteRecord>('cs-votes', voteKey(t.owner, txid))
      if (vote !== undefined && vote.state !== 'RELEASED') {
        return { released: false, why: vote.state === 'COMMITTED' ? 'pledge of a committed vote' : `pledge of an open vote (${vote.state}): the sender's outcome decides` }
      }
      await this.o.ledger.commit((w) => { w.putToken({ ...t, status: 'Free', updatedAt: this.o.clock.now() }) })
      return { released: true, why: txid === undefined ? 'locked by no transaction' : vote === undefined ? 'no record of its transaction' : 'pledge of a released vote' }
    })
  }

  /** Pledged totals for reporting. */
  async pledgeSummary (): Promise<Array<{ quorumDid: string, txid: string, tokens: string[] }>> {
    const out: Array<{ quorumDid: string, txid: string, tokens: string[] }> = []
    for await (const [, p] of this.o.ledger.records<PledgeRecord>('cs-pledges')) out.push({ quorumDid: p.quorumDid, txid: p.txid, tokens: p.tokens })
    return out
  }
}
