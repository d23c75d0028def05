import { ErrorCode, RbtError, errorMessage, undecidedWrite } from '../util/errors.js'
import { buildBundle, mergeBundles } from './bundle.js'
import type { TokenChains, TxChains } from './tx-chains.js'
import type { ChainBundle, PrepareReply } from './messages.js'
import { MIN_QUORUM_SIGNATURES, preferQuorums } from './quorum-selection.js'
import type { OutgoingRecord } from './records.js'
import type { NftOp } from './nft.js'
import { notify } from './observe.js'
import { SenderPart, contractBytes, spentStates, type Vote } from './sender-context.js'
import type { ClaimResult } from './claims.js'

type No = Extract<PrepareReply, { vote: 'no' }>

/** The error a claim refusal ends a transfer with: its code, the other transaction when known. */
function claimError (r: No | undefined): RbtError | undefined {
  if (r?.code === 'STATE_CLAIMED') return new RbtError(ErrorCode.STATE_CLAIMED, `transfer refused before any signature: ${r.reason}`, { details: r.holder !== undefined ? { claimedBy: r.holder } : {} })
  if (r?.code === 'CLAIM_UNREACHABLE') return new RbtError(ErrorCode.CLAIM_UNREACHABLE, `transfer refused before any signature: ${r.reason}`)
  return undefined
}

/** Rounds in which a quorum or receiver may ask for ancestors it lacks (each answer names all it lacks at once). */
export const ANCESTRY_ROUNDS = 3
/** How a validator from before the missing-ancestors answer refuses a bundle without the older ancestors. */
export const NO_CHAIN = /: no chain supplied/
/** Levels of ancestry sent in the first answer to a validator that lacks ancestors. */
const ANCESTRY_FIRST_LEVELS = 8
/**
 * How often, and after how long (times the attempt), a quorum that answered a conflict is asked
 * again while the anchor held the state for this transfer (the other transaction, refused at the
 * anchor, aborts and releases it).
 */
const CONFLICT_RETRIES = 6
const CONFLICT_RETRY_MS = 150

/**
 * The sender's prepare round: the PREPARE call to each quorum (the chains it lacks, the ancestors it
 * asks for), the anchor and the four others at once, the replacements, up to the SIGNING record.
 */
export class PrepareRound extends SenderPart {
  /** Transfers whose SIGNING write failed before any signature was asked for: recovery aborts them. */
  readonly unsentSigning = new Set<string>()

  /**
   * The PREPARE call of a transaction (bundle and contract built once), to any quorum of its list,
   * and the order in which to ask quorums after the anchor (preferQuorums).
   */
  async preparer (rec: OutgoingRecord): Promise<{ prepare: (quorumDid: string, five?: readonly string[]) => Promise<PrepareReply>, prefer: (dids: readonly string[]) => string[], expected: readonly string[] }> {
    const contract = contractBytes(rec)
    // an NFT's chain goes to every quorum; a transfer's chains only to the quorums that lack them
    const nftChains = rec.nft !== undefined ? await this.nftBundle(rec.nft) : undefined
    const txc = this.txChains(rec)
    const nft = rec.nft !== undefined ? { nft: rec.nft } : {}
    if (rec.nft?.sc !== undefined) {
      if (this.opts.scCode === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'this node does not serve smart contracts')
      Object.assign(nft, { scCode: await this.opts.scCode(rec.nft.nftId) })
    }
    // who signed each token's last block (read once for all the quorums asked, from the block records)
    const tipSigners = rec.nft !== undefined ? undefined : await this.tipSigners(rec.tokens)
    const knows = new Map<string, number>()
    for (const signers of tipSigners?.values() ?? []) for (const d of signers) knows.set(d, (knows.get(d) ?? 0) + 1)
    const prefer = (dids: readonly string[]): string[] => preferQuorums(dids, rec.sender, (d) => knows.get(d) ?? 0)
    // the five expected to sign, a hint for the network checkers among them: the anchor and the next preferred
    const expected = [...rec.asked.slice(0, 1), ...prefer(rec.asked.slice(1))].slice(0, MIN_QUORUM_SIGNATURES)
    if (tipSigners !== undefined) this.log.debug(`transfer ${rec.txid.slice(0, 12)}: of ${rec.tokens.length} tokens, the quorums to ask signed the last blocks of ${expected.map((d) => knows.get(d) ?? 0).join('/')}`)
    const prepare = async (quorumDid: string, five: readonly string[] = expected): Promise<PrepareReply> => {
      // a chain that cannot be read fails the transfer, as it did when the whole bundle was read first
      let sent = nftChains ?? await this.bundleFor(rec, txc, tipSigners!, quorumDid)
      try {
        for (let round = 0; ; round++) {
          const reply = await this.transport.prepare({ txid: rec.txid, quorumDid, contract, bundle: sent, senderPeer: this.opts.selfPeer, epoch: rec.epoch, asked: [...five], ...nft })
          const more = round >= ANCESTRY_ROUNDS || reply.vote === 'yes'
            ? undefined
            : reply.missing !== undefined
              ? await this.lacking(reply.missing, sent, round, nftChains === undefined ? txc : undefined)
              // a quorum from before the missing-ancestors answer: once more with every ancestor
              : rec.nft === undefined && NO_CHAIN.test(reply.reason) ? await this.whole(rec.tokens, sent) : undefined
          if (more === undefined) return reply
          sent = more
        }
      } catch (e) {
        return { vote: 'no', quorumDid, reason: `unreachable: ${errorMessage(e)}` }
      }
    }
    return { prepare, prefer, expected }
  }

  /** Chains a quorum needs for an NFT transaction: the NFT's chain (execute) or the parent's (child deploy). */
  private async nftBundle (op: NftOp): Promise<ChainBundle> {
    if (op.op === 'execute') return await buildBundle(this.ledger, [op.nftId])
    if (op.parentId !== undefined) return await buildBundle(this.ledger, [op.parentId])
    return { chains: {}, contents: {} }
  }

  /** The signers of each token's last block, for tokens whose chain has more than a genesis. */
  private async tipSigners (tokens: readonly string[]): Promise<Map<string, string[]>> {
    const signers = await this.ledger.tipSigners(tokens)
    const out = new Map<string, string[]>()
    tokens.forEach((id, i) => { const s = signers[i]; if (s !== undefined) out.set(id, s) })
    return out
  }

  /**
   * What a quorum is sent of a transfer's bundle: the tokens whose last block it signed are left
   * out (it validated their state then, docs/protocol.md "Validated states"); one that no longer
   * knows them says so, and is sent them in the next round.
   */
  private async bundleFor (rec: OutgoingRecord, txc: TxChains, tipSigners: ReadonlyMap<string, readonly string[]>, quorumDid: string): Promise<ChainBundle> {
    return await txc.of(rec.tokens.filter((id) => tipSigners.get(id)?.includes(quorumDid) !== true))
  }

  /** `sent` with the whole ancestry of `tokens`, or undefined when it carried it already (or it cannot be built). */
  async whole (tokens: string[], sent: ChainBundle): Promise<ChainBundle | undefined> {
    try {
      const all = mergeBundles(sent, await buildBundle(this.ledger, tokens))
      return Object.keys(all.chains).length > Object.keys(sent.chains).length ? all : undefined
    } catch { return undefined }
  }

  /**
   * Notes quorums' double-spend refusals of a transfer's tokens ("spent by <txid>", or the state
   * "held by transaction <txid>" in a quorum's own record); the node is told once the transfer has
   * been aborted and its tokens are Free again (tellDoubleSpent).
   */
  private doubleSpent (rec: OutgoingRecord, replies: PrepareReply[]): void {
    const refusals = replies.filter((r): r is Extract<PrepareReply, { vote: 'no' }> => r.vote === 'no' && r.conflict === true && /spent by |held by transaction /.test(r.reason))
    if (refusals.length === 0 || this.opts.onDoubleSpent === undefined || rec.nft !== undefined) return
    this.ctx.refusedSpends.set(rec.txid, { states: spentStates(rec), reason: refusals[0].reason })
  }

  /**
   * The bundle again with the chains of the ancestors a quorum or receiver said it lacks, or
   * undefined when it named none this node can add. The first time with the next few levels of
   * their ancestry (a validator that missed a transaction or two remembers what lies above), after
   * that with all of it, so the last round always suffices.
   */
  async lacking (missing: unknown, sent: ChainBundle, round: number, tokens?: TokenChains): Promise<ChainBundle | undefined> {
    if (!Array.isArray(missing)) return undefined
    const ids = [...new Set(missing.filter((m): m is string => typeof m === 'string' && sent.chains[m] === undefined))].slice(0, 10_000)
    if (ids.length === 0) return undefined
    // tokens of the transaction left out for a validator that knew their state (bundleFor, receiverHolds)
    const left = tokens === undefined ? [] : ids.filter((id) => tokens.has(id))
    const older = ids.filter((id) => tokens?.has(id) !== true)
    try {
      const out = left.length > 0 ? mergeBundles(sent, await tokens!.of(left)) : sent
      if (older.length === 0) return out
      return mergeBundles(out, await buildBundle(this.ledger, older, round === 0 ? { levels: ANCESTRY_FIRST_LEVELS } : {}))
    } catch (e) {
      this.log.warn(`ancestors asked for could not be bundled: ${errorMessage(e)}`)
      return undefined
    }
  }

  /**
   * Asks the receiver's node, next to the prepare round, which of the tokens it holds at the state
   * spent (change coming back, a token it sent before): they are delivered without their chains.
   */
  private askReceiverHolds (rec: OutgoingRecord): void {
    const ask = this.transport.receiverHolds
    if (ask === undefined || rec.nft !== undefined || rec.receiver === rec.sender) return
    const hint: { held?: Set<string> } = {}
    this.ctx.receiverHeld.set(rec.txid, hint)
    ask(rec.receiver, spentStates(rec)).then((ids) => {
      const asked = new Set(rec.tokens)
      hint.held = new Set(Array.isArray(ids) ? ids.filter((id) => typeof id === 'string' && asked.has(id)) : [])
    }, (e: unknown) => { this.log.debug(`transfer ${rec.txid.slice(0, 12)}: the receiver's node did not say which tokens it holds: ${errorMessage(e)}`) })
  }

  /**
   * The prepare round of a transaction this process just locked, up to its durable SIGNING record
   * (with 5 yes votes); answers when the sign round may start (the time the round ended).
   */
  async run (rec: OutgoingRecord, progress: (msg: string) => void): Promise<number> {
    const probe = this.ctx.receiverChecks.get(rec.txid)
    probe?.throwIfFailed()
    this.askReceiverHolds(rec)
    const tb = Date.now()
    const { prepare, prefer, expected } = await this.preparer(rec)
    const tBundle = Date.now()
    // The anchor (the first-ranked quorum) and the next four, at once: the others validate while
    // the anchor does (asked after it, they waited for its answer with a core idle). Two
    // transactions spending the same state still meet at the anchor, which holds it for one of
    // them; the other gets a conflict there and aborts, releasing what the others held for it, and
    // the winner asks again the quorums that answered it a conflict meanwhile. A quorum that says
    // no or does not answer is replaced by the next of the list. (Asking all seven at once cost
    // every one of them the validation, a pledge and an ABORT for votes that were never used.)
    const replies: PrepareReply[] = []
    const anchor = rec.asked[0]
    // after the anchor, the quorums that know the most of the tokens first (preferQuorums)
    const rest = prefer(rec.asked.slice(1))
    const ask = async (d: string): Promise<PrepareReply> => await prepare(d)
    replies.push(...await Promise.all([anchor, ...rest.slice(0, MIN_QUORUM_SIGNATURES - 1)].map(ask)))
    const anchorReply = replies[0]
    // a conflict in a quorum's own records (a claim refused at the arbiters is asked again below)
    const conflicts = (): No[] => replies.filter((r): r is No => r.vote === 'no' && r.conflict === true && r.code !== 'STATE_CLAIMED')
    const claimRefusals = (): No[] => replies.filter((r): r is No => r.vote === 'no' && r.code === 'STATE_CLAIMED')
    // a conflict at the anchor, or anywhere while the anchor gave no vote: another transaction holds the state
    if (anchorReply.vote === 'no' && anchorReply.code !== 'STATE_CLAIMED' && (anchorReply.conflict === true || conflicts().length > 0)) {
      const c = anchorReply.conflict === true ? anchorReply : conflicts()[0]
      this.doubleSpent(rec, [c])
      throw claimError(c) ?? new RbtError(ErrorCode.CONSENSUS_FAILED, `consensus failed: ${c.quorumDid}: ${c.reason}`)
    }
    const tFirst = Date.now()
    // The receiver's node may accept only signers of its own list (its strict rule): the probe has
    // been running since before the tokens were locked, so its answer is normally in by now, and
    // the rest of the round asks only quorums that node accepts; all settled before any signature.
    const allowed = probe !== undefined ? (await probe.done).quorums : undefined
    const eligible = (d: string): boolean => allowed === undefined || allowed.includes(d)
    if (allowed !== undefined) {
      rec.receiverQuorums = allowed
      const shared = rec.asked.filter(eligible).length
      if (shared < MIN_QUORUM_SIGNATURES) throw new RbtError(ErrorCode.CONSENSUS_FAILED, `consensus failed: the receiver's node accepts only quorums of its own list (trustOwnQuorumList), and ${shared} of this node's candidate quorums are in it, ${MIN_QUORUM_SIGNATURES} needed; add quorums both lists share`)
    }
    const yesCount = (): number => replies.filter((r) => r.vote === 'yes' && eligible(r.quorumDid)).length
    const tProbed = Date.now()
    const left = (): string[] => rest.filter((d) => eligible(d) && !replies.some((r) => r.quorumDid === d))
    const retried = new Map<string, number>()
    while (yesCount() < MIN_QUORUM_SIGNATURES) {
      const need = MIN_QUORUM_SIGNATURES - yesCount()
      // The designated checker could not claim a state: another transaction holds its claim (a
      // racing spend of the same tokens). Not a refusal of this quorum: the claim is made again
      // after a short, jittered wait (the other transaction may end meanwhile, releasing it, or
      // both released a split claim), rather than by a quorum that would not be the checker.
      const claimAgain = claimRefusals().map((r) => r.quorumDid).filter((d) => eligible(d) && (retried.get(d) ?? 0) < CONFLICT_RETRIES).slice(0, need)
      if (claimAgain.length > 0) {
        const tries = Math.max(...claimAgain.map((d) => retried.get(d) ?? 0)) + 1
        await new Promise((resolve) => setTimeout(resolve, CONFLICT_RETRY_MS * tries * (0.5 + Math.random())))
        for (const d of claimAgain) {
          retried.set(d, (retried.get(d) ?? 0) + 1)
          replies.splice(replies.findIndex((r) => r.quorumDid === d), 1)
        }
        replies.push(...await Promise.all([...claimAgain, ...left().slice(0, need - claimAgain.length)].map(ask)))
        continue
      }
      const fresh = left()
      // quorums that answered a conflict while the anchor held the state for this transfer: the
      // other transaction lost at the anchor and releases them; asked again after a short wait
      const again = anchorReply.vote === 'yes' ? conflicts().map((r) => r.quorumDid).filter((d) => eligible(d) && (retried.get(d) ?? 0) < CONFLICT_RETRIES) : []
      if (fresh.length + again.length < need) break
      const batch = fresh.slice(0, need)
      if (batch.length < need) {
        const retry = again.slice(0, need - batch.length)
        const tries = Math.max(...retry.map((d) => retried.get(d) ?? 0)) + 1
        await new Promise((resolve) => setTimeout(resolve, CONFLICT_RETRY_MS * tries))
        for (const d of retry) {
          retried.set(d, (retried.get(d) ?? 0) + 1)
          replies.splice(replies.findIndex((r) => r.quorumDid === d), 1)
        }
        batch.push(...retry)
      }
      replies.push(...await Promise.all(batch.map(ask)))
    }
    this.log.debug(`transfer ${rec.txid.slice(0, 12)}: bundle ${tBundle - tb} ms, first five ${tFirst - tBundle} ms, probe awaited ${tProbed - tFirst} ms, more ${Date.now() - tProbed} ms`)
    const tPrepared = Date.now()
    this.log.debug(`transfer ${rec.txid.slice(0, 12)}: prepare round ${tPrepared - rec.updatedAt} ms`)
    notify(this.opts.observe, { kind: 'round', round: 'prepare', ms: tPrepared - tb })
    const agreed = rec.asked.map((d) => replies.find((r) => r.quorumDid === d)).filter((r): r is Vote => r?.vote === 'yes')
    let yes = agreed.filter((v) => eligible(v.quorumDid))
    // The sender's claim: every state spent, at its arbiters, for each of the five that will sign
    // (one walk; docs/protocol.md, "Claims"). A state another transaction holds is asked again
    // after a short, jittered wait while that transaction may still end, unless it is the smaller
    // transaction id: two racing spends that split the arbiters between them never both wait, the
    // larger gives way (its quorums release their claims with their votes) and the smaller wins.
    let claimRefused: Extract<ClaimResult, { granted: false }> | undefined
    if (yes.length >= MIN_QUORUM_SIGNATURES && this.ctx.claims !== undefined) {
      const five = yes.slice(0, MIN_QUORUM_SIGNATURES)
      const contract = contractBytes(rec)
      let r = await this.ctx.claims.claim(rec.txid, contract, five)
      for (let tries = 1; !r.granted && r.code === 'STATE_CLAIMED' && (r.holder === undefined || r.holder > rec.txid) && tries <= CONFLICT_RETRIES; tries++) {
        await new Promise((resolve) => setTimeout(resolve, CONFLICT_RETRY_MS * tries * (0.5 + Math.random())))
        r = await this.ctx.claims.claim(rec.txid, contract, five)
      }
      if (!r.granted) claimRefused = r
    }
    const answered = { yes: agreed.map((v) => v.quorumDid), contacted: replies.map((r) => r.quorumDid) }
    // Enough votes: who answered is written with the SIGNING record below, in its one commit (a
    // record written twice more at 1.5 and 4.6 KB before, of the 14 KB a payment's record wrote);
    // a crash before it leaves PREPARING, aborted with every quorum asked told.
    if (yes.length < MIN_QUORUM_SIGNATURES || claimRefused !== undefined) await this.update(rec, answered)
    this.fault('voted')
    if (claimRefused !== undefined) {
      const no: No = { vote: 'no', quorumDid: '', reason: claimRefused.reason, conflict: claimRefused.code !== 'CLAIM_UNREACHABLE', code: claimRefused.code, ...(claimRefused.holder !== undefined ? { holder: claimRefused.holder } : {}) }
      // a state already spent (its marker): the node checks those tokens' chains
      if (claimRefused.code === 'STATE_SPENT') this.doubleSpent(rec, [no])
      throw claimError(no) ?? new RbtError(ErrorCode.CONSENSUS_FAILED, `consensus failed: ${claimRefused.reason}`)
    }
    if (yes.length < MIN_QUORUM_SIGNATURES) {
      this.doubleSpent(rec, replies)
      const reasons = replies.filter((r) => r.vote === 'no').map((r) => `${r.quorumDid.slice(0, 16)}…: ${(r as { reason: string }).reason}`)
      const claim = claimError(replies.find((r): r is No => r.vote === 'no' && r.code === 'STATE_CLAIMED') ?? replies.find((r): r is No => r.vote === 'no' && r.code === 'CLAIM_UNREACHABLE'))
      if (claim !== undefined) throw claim
      if (allowed !== undefined && agreed.length >= MIN_QUORUM_SIGNATURES) {
        throw new RbtError(ErrorCode.CONSENSUS_FAILED, `consensus failed: the receiver's node accepts only quorums of its own list (trustOwnQuorumList), and ${yes.length} of the ${agreed.length} quorums that agreed are in it, ${MIN_QUORUM_SIGNATURES} needed; add quorums both lists share`)
      }
      throw new RbtError(ErrorCode.CONSENSUS_FAILED, `consensus failed: ${yes.length} of ${rec.asked.length} quorums agreed, ${MIN_QUORUM_SIGNATURES} needed${allowed !== undefined ? ' among those the receiver\'s node accepts' : ''} (${reasons.join('; ')})`)
    }
    progress(`${yes.length} quorums validated and pledged`)
    // From the first signature request on, the transfer is never aborted: a quorum that signed a
    // block keeps the token state held, so giving up here could strand the tokens. SIGNING is
    // durable; a signer that fails is replaced by another yes-voter, and recovery retries.
    try {
      await this.update(rec, { ...answered, state: 'SIGNING', votes: yes })
    } catch (e) {
      // A failed write may still have landed (the store settles it when it reopens). No signature
      // was asked for, so recovery aborts this transfer whichever way the write went, and the
      // refusal stays true while this process lives; without that, recovery would finish a SIGNING
      // record that landed, and a transfer answered as refused would commit...
      this.unsentSigning.add(rec.txid)
      // ...until this process ends: a node killed before it can write the abort completes the
      // transfer on restart, so the answer names the transaction instead of refusing it
      throw e instanceof RbtError && (e.code === ErrorCode.INSUFFICIENT_STORAGE || e.code === ErrorCode.STORAGE_UNAVAILABLE) ? undecidedWrite(rec.txid, e) : e
    }
    this.fault('signing')
    return tPrepared
  }
}
