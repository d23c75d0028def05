import { createBlock, decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, parseBlockId, setSignature, type BlockContent, type Block } from '../tokenchain/block.js'
import { knownVerified, verifyEnvelope, type VerifiedBlockCache } from '../tokenchain/validate.js'
import { decodeContract } from '../tokenchain/contract.js'
import { TransactionType } from '../tokenchain/types.js'
import { ErrorCode, RbtError, deliveryPending, errorMessage, isRbtError, signingPending } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { silentLogger } from '../util/logger.js'
import { Lru } from '../util/lru.js'
import { buildBundle, mergeBundles, putValidatedState } from './bundle.js'
import { lockNft, lockTokens, type FtSpend, type LockContext, type NftInput, type TransferInput } from './transfer-lock.js'
import { KeyedMutex } from './keyed-mutex.js'
import { TxChains, type TokenChains } from './tx-chains.js'
import type { ChainBundle, ConsensusTransport, PrepareReply, ReceiverPolicy, SignReply, SpentState } from './messages.js'
import type { Clock, ConsensusSigner, Ledger, LedgerWriter, TokenState, Verifier } from './ports.js'
import { systemClock } from './ports.js'
import { MIN_QUORUM_SIGNATURES, preferQuorums } from './quorum-selection.js'
import { b64, openOutgoing, putOutgoing, readOutgoing, unb64, withoutEvidence, type OutgoingRecord } from './records.js'
import { nftBlock, opTokenType, type NftOp } from './nft.js'
import type { ScCode } from './smart-contract.js'
import { notify, type ConsensusObserver, type ConsensusOutcome } from './observe.js'

/** Rounds in which a quorum or receiver may ask for ancestors it lacks (each answer names all it lacks at once). */
const ANCESTRY_ROUNDS = 3
/** How a validator from before the missing-ancestors answer refuses a bundle without the older ancestors. */
const NO_CHAIN = /: no chain supplied/
/** Levels of ancestry sent in the first answer to a validator that lacks ancestors. */
const ANCESTRY_FIRST_LEVELS = 8
/**
 * How often, and after how long (times the attempt), a quorum that answered a conflict is asked
 * again while the anchor held the state for this transfer (the other transaction, refused at the
 * anchor, aborts and releases it).
 */
const CONFLICT_RETRIES = 6
const CONFLICT_RETRY_MS = 150

export type { FtSpend, NftInput, TransferInput } from './transfer-lock.js'

export interface TransferResult { txid: string, blockId: string, quorums: string[], delivered: boolean }

export interface SenderOptions {
  ledger: Ledger
  transport: ConsensusTransport
  /**
   * verifies the signed block before the decision (a quorum's bad signature is replaced, not
   * delivered); absent, the block goes out unchecked and its receiver decides
   */
  verifier?: Verifier
  /** envelopes whose signatures this node verified (shared by its roles) */
  verified?: VerifiedBlockCache
  /** this node's peer id, given to quorums so they can ask for an outcome */
  selfPeer: string
  clock?: Clock
  logger?: Logger
  /** test builds only: called after each durable step; may end the process */
  fault?: (step: string) => void
  prepareTimeoutMs?: number
  deliverAttempts?: number
  /** told once a transfer is committed, with the token states it spent (`<tokenId>@<blockId>`) */
  onCommitted?: (txid: string, spentStates: string[]) => void
  /** told once an NFT transaction is committed: the NFT's new latest block and owner */
  onNftCommitted?: (nftId: string, blockId: string, owner: string, txid: string) => void
  /** a smart contract's descriptor and binary, sent to the quorums so they can run it */
  scCode?: (scId: string) => Promise<ScCode>
  /** told how each transaction ended for the sender and how long its rounds took (metrics) */
  observe?: ConsensusObserver
  /** an operation of the DID waiting for its caller's answer (a password or signature prompt), if any */
  waitingFor?: (did: string) => WaitingOperation | undefined
  /**
   * a quorum refused a transfer as a double spend of its tokens (`spent by <txid>`): the token
   * states it spent, and the quorum's reason (the node checks those tokens' chains); called once the
   * transfer is aborted, its tokens Free again
   */
  onDoubleSpent?: (states: Array<{ tokenId: string, blockId: string }>, reason: string) => void
  /**
   * whether a DID is hosted on this node: for a receiver elsewhere, this node writes the new block
   * while the delivery runs; absent, after it
   */
  isLocalDid?: (did: string) => Promise<boolean>
}

/** An operation parked on a prompt: its request id and the seconds until it expires. */
export interface WaitingOperation { id: string, secondsLeft: number, kind: 'password' | 'signature' }

type Vote = Extract<PrepareReply, { vote: 'yes' }>

/**
 * The sender's side of a transfer: select and lock tokens, gather 5 quorum votes with pledges,
 * have the chosen quorums sign the new block, record the decision (COMMITTING), deliver to the
 * receiver, record COMMITTED and tell the quorums. Every step is durable; `recover()` finishes or
 * undoes whatever a crash interrupted.
 */
export class TransferSender {
  private readonly ledger: Ledger
  private readonly transport: ConsensusTransport
  private readonly clock: Clock
  private readonly log: Logger
  private readonly locks = new KeyedMutex()
  /**
   * The bundle each transfer in flight sent to its quorums (its tokens' chains, each part with its
   * parent's), used again for the new block and the delivery instead of reading and decoding every
   * chain twice more. Only the transfer's own tokens are in it, Locked by it meanwhile; a transfer
   * resumed after a restart reads them again.
   */
  private readonly sentBundles = new Lru<TxChains>(8)
  private readonly lockContext: LockContext

  constructor (private readonly opts: SenderOptions) {
    this.ledger = opts.ledger
    this.transport = opts.transport
    this.clock = opts.clock ?? systemClock
    this.log = opts.logger ?? silentLogger
    this.lockContext = { ledger: this.ledger, clock: this.clock, fault: (step) => { this.fault(step) }, locked: (txid) => { this.inFlight.add(txid) } }
  }

  private fault (step: string): void { this.opts.fault?.(step) }

  async transfer (input: TransferInput, signer: ConsensusSigner, progress: (msg: string) => void = () => {}): Promise<TransferResult> {
    return await this.lockAndDrive(async () => await this.lockTransfer(input, signer), 'tokens locked', progress)
  }

  /** Locks a transaction (a refusal there is observed as such), then drives its consensus. */
  private async lockAndDrive (lock: () => Promise<OutgoingRecord>, locked: string, progress: (msg: string) => void): Promise<TransferResult> {
    const started = Date.now()
    let rec: OutgoingRecord
    try {
      rec = await lock()
    } catch (e) {
      this.observed('refused', started)
      throw e
    }
    return await this.drive(rec, locked, progress, started)
  }

  private observed (outcome: ConsensusOutcome, started: number): void {
    notify(this.opts.observe, { kind: 'transaction', role: 'sender', outcome, ms: Date.now() - started })
  }

  /**
   * Before the DID's lock: the signer asks for its password now (a prompt left open then holds no
   * lock), and when the lock is held by an operation of the DID that waits for its caller's answer
   * (a DID whose signatures come from outside), this one is refused at once, naming that operation,
   * rather than waiting behind it.
   */
  private async unlocked (did: string, signer: ConsensusSigner): Promise<void> {
    // a DID whose key the node holds never waits on a prompt under its lock
    if (await signer.unlock?.() === true || !this.locks.held(did)) return
    const w = this.opts.waitingFor?.(did)
    if (w === undefined) return
    throw new RbtError(ErrorCode.CONFLICT,
      `another operation of ${did} (request ${w.id}) waits for its ${w.kind}, ${w.secondsLeft} s left before it expires; answer it with POST /svc/v1/signature {"id":"${w.id}", ...}, or cancel it with POST /svc/v1/signature {"id":"${w.id}","cancel":true}, then retry`,
      { details: { waitingRequest: w.id, secondsLeft: w.secondsLeft } })
  }

  /** Checks a transfer, probes the receiver and locks the tokens (the transaction's PREPARING record). */
  private async lockTransfer (input: TransferInput, signer: ConsensusSigner): Promise<OutgoingRecord> {
    const { sender, receiver, amountMilli } = input
    if (signer.did !== sender) throw new RbtError(ErrorCode.FORBIDDEN, `signer ${signer.did} is not the sender ${sender}`)
    const self = input.selfTokens !== undefined
    if (sender === receiver && !self) throw new RbtError(ErrorCode.INVALID_INPUT, 'sender and receiver are the same DID')
    if (self && (sender !== receiver || input.selfTokens!.length === 0 || (input.fts ?? []).length > 0)) throw new RbtError(ErrorCode.INVALID_INPUT, 'a self transfer names tokens of the sender, to the sender, and no FTs')
    const hasFts = (input.fts ?? []).length > 0
    if (!Number.isInteger(amountMilli) || amountMilli < 0 || (amountMilli === 0 && !hasFts)) throw new RbtError(ErrorCode.INVALID_INPUT, 'amount must be at least 0.001 RBT')
    if (hasFts) checkFtSpends(input.fts!)

    const t0 = Date.now()
    // The receiver is probed while the tokens are locked and the quorums asked; it must have
    // answered before the decision (SIGNING). An unknown receiver still fails before anything
    // becomes final: the tokens go back to Free and the asked quorums get ABORT.
    await this.unlocked(sender, signer)
    const probe = receiverCheck(this.transport.probeReceiver(receiver))
    const rec = await this.locks.run(sender, async () => await lockTokens(this.lockContext, input, signer))
    this.log.debug(`transfer ${rec.txid.slice(0, 12)}: lock+sign ${Date.now() - t0} ms`)
    this.receiverChecks.set(rec.txid, probe)
    return rec
  }

  /**
   * Runs consensus for a transaction this process just locked: undecided failures abort it; while
   * it runs, the periodic recovery leaves it alone (it is in `inFlight`).
   */
  private async drive (rec: OutgoingRecord, locked: string, progress: (msg: string) => void, started: number): Promise<TransferResult> {
    try {
      this.fault('locked')
      progress(`${locked}, transaction ${rec.txid}`)
      try {
        const result = await this.runConsensus(rec, progress)
        this.observed(result.delivered ? 'committed' : 'delivery_pending', started)
        return result
      } catch (e) {
        const current = await readOutgoing(this.ledger, rec.txid)
        const aborting = current?.state === 'PREPARING'
        this.observed(aborting ? 'aborted' : 'failed', started)
        if (aborting) await this.abort(current, errorMessage(e))
        // told only now: the node checks tokens it holds Free, and until the abort they were Locked
        this.tellDoubleSpent(rec.txid)
        throw e
      }
    } finally {
      this.inFlight.delete(rec.txid)
      this.receiverChecks.delete(rec.txid)
      this.receiverHeld.delete(rec.txid)
      this.refusedSpends.delete(rec.txid)
    }
  }

  /** Deploys, executes or transfers an NFT through consensus (same phases and records as a transfer). */
  async nft (input: NftInput, signer: ConsensusSigner, progress: (msg: string) => void = () => {}): Promise<TransferResult> {
    return await this.lockAndDrive(async () => await this.lockNftInput(input, signer), 'NFT locked', progress)
  }

  private async lockNftInput (input: NftInput, signer: ConsensusSigner): Promise<OutgoingRecord> {
    const { initiator, receiver, op } = input
    if (signer.did !== initiator) throw new RbtError(ErrorCode.FORBIDDEN, `signer ${signer.did} is not the initiator ${initiator}`)
    if (!Number.isInteger(op.valueMilli) || op.valueMilli <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'NFT value must be at least 0.001 RBT')
    if (op.op === 'deploy' && receiver !== initiator) throw new RbtError(ErrorCode.INVALID_INPUT, 'an NFT is deployed to its deployer; transfer it afterwards')
    await this.unlocked(initiator, signer)
    const policy = receiver !== initiator ? await this.transport.probeReceiver(receiver) : {}
    const rec = await this.locks.run(initiator, async () => await lockNft(this.lockContext, input, signer))
    this.receiverChecks.set(rec.txid, receiverCheck(Promise.resolve(policy)))
    return rec
  }

  /** Chains a quorum needs for an NFT transaction: the NFT's chain (execute) or the parent's (child deploy). */
  private async nftBundle (op: NftOp): Promise<ChainBundle> {
    if (op.op === 'execute') return await buildBundle(this.ledger, [op.nftId])
    if (op.parentId !== undefined) return await buildBundle(this.ledger, [op.parentId])
    return { chains: {}, contents: {} }
  }

  /**
   * The PREPARE call of a transaction (bundle and contract built once), to any quorum of its list,
   * and the order in which to ask quorums after the anchor (preferQuorums).
   */
  private async preparer (rec: OutgoingRecord): Promise<{ prepare: (quorumDid: string) => Promise<PrepareReply>, prefer: (dids: readonly string[]) => string[] }> {
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
    const prepare = async (quorumDid: string): Promise<PrepareReply> => {
      // a chain that cannot be read fails the transfer, as it did when the whole bundle was read first
      let sent = nftChains ?? await this.bundleFor(rec, txc, tipSigners!, quorumDid)
      try {
        for (let round = 0; ; round++) {
          const reply = await this.transport.prepare({ txid: rec.txid, quorumDid, contract, bundle: sent, senderPeer: this.opts.selfPeer, epoch: rec.epoch, asked: expected, ...nft })
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
    return { prepare, prefer }
  }

  /** A transfer's chains, read as quorums and the receiver need them, once per transfer (see sentBundles). */
  private txChains (rec: OutgoingRecord): TxChains {
    let c = this.sentBundles.get(rec.txid)
    if (c === undefined) {
      c = new TxChains(this.ledger, rec.tokens)
      this.sentBundles.set(rec.txid, c)
    }
    return c
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
  private async whole (tokens: string[], sent: ChainBundle): Promise<ChainBundle | undefined> {
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
    this.refusedSpends.set(rec.txid, { states: spentStates(rec), reason: refusals[0].reason })
  }

  private tellDoubleSpent (txid: string): void {
    const refused = this.refusedSpends.get(txid)
    this.refusedSpends.delete(txid)
    if (refused === undefined || this.opts.onDoubleSpent === undefined) return
    try { this.opts.onDoubleSpent(refused.states, refused.reason) } catch (e) { this.log.debug(`onDoubleSpent: ${errorMessage(e)}`) }
  }

  /**
   * The bundle again with the chains of the ancestors a quorum or receiver said it lacks, or
   * undefined when it named none this node can add. The first time with the next few levels of
   * their ancestry (a validator that missed a transaction or two remembers what lies above), after
   * that with all of it, so the last round always suffices.
   */
  private async lacking (missing: unknown, sent: ChainBundle, round: number, tokens?: TokenChains): Promise<ChainBundle | undefined> {
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
    this.receiverHeld.set(rec.txid, hint)
    ask(rec.receiver, spentStates(rec)).then((ids) => {
      const asked = new Set(rec.tokens)
      hint.held = new Set(Array.isArray(ids) ? ids.filter((id) => typeof id === 'string' && asked.has(id)) : [])
    }, (e: unknown) => { this.log.debug(`transfer ${rec.txid.slice(0, 12)}: the receiver's node did not say which tokens it holds: ${errorMessage(e)}`) })
  }

  private async runConsensus (rec: OutgoingRecord, progress: (msg: string) => void): Promise<TransferResult> {
    const probe = this.receiverChecks.get(rec.txid)
    probe?.throwIfFailed()
    this.askReceiverHolds(rec)
    const tb = Date.now()
    const { prepare, prefer } = await this.preparer(rec)
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
    replies.push(...await Promise.all([anchor, ...rest.slice(0, MIN_QUORUM_SIGNATURES - 1)].map(prepare)))
    const anchorReply = replies[0]
    const conflicts = (): Array<Extract<PrepareReply, { vote: 'no' }>> => replies.filter((r): r is Extract<PrepareReply, { vote: 'no' }> => r.vote === 'no' && r.conflict === true)
    // a conflict at the anchor, or anywhere while the anchor gave no vote: another transaction holds the state
    if (anchorReply.vote === 'no' && (anchorReply.conflict === true || conflicts().length > 0)) {
      const c = anchorReply.conflict === true ? anchorReply : conflicts()[0]
      this.doubleSpent(rec, [c])
      throw new RbtError(ErrorCode.CONSENSUS_FAILED, `consensus failed: ${c.quorumDid}: ${c.reason}`)
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
      replies.push(...await Promise.all(batch.map(prepare)))
    }
    this.log.debug(`transfer ${rec.txid.slice(0, 12)}: bundle ${tBundle - tb} ms, first five ${tFirst - tBundle} ms, probe awaited ${tProbed - tFirst} ms, more ${Date.now() - tProbed} ms`)
    const tPrepared = Date.now()
    this.log.debug(`transfer ${rec.txid.slice(0, 12)}: prepare round ${tPrepared - rec.updatedAt} ms`)
    notify(this.opts.observe, { kind: 'round', round: 'prepare', ms: tPrepared - tb })
    const agreed = rec.asked.map((d) => replies.find((r) => r.quorumDid === d)).filter((r): r is Vote => r?.vote === 'yes')
    const yes = agreed.filter((v) => eligible(v.quorumDid))
    await this.update(rec, { yes: agreed.map((v) => v.quorumDid), contacted: replies.map((r) => r.quorumDid) })
    this.fault('voted')
    if (yes.length < MIN_QUORUM_SIGNATURES) {
      this.doubleSpent(rec, replies)
      const reasons = replies.filter((r) => r.vote === 'no').map((r) => `${r.quorumDid.slice(0, 16)}…: ${(r as { reason: string }).reason}`)
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
      await this.update(rec, { state: 'SIGNING', votes: yes })
    } catch (e) {
      // A failed write may still have landed (the store settles it when it reopens). No signature
      // was asked for, so recovery aborts this transfer whichever way the write went, and the
      // caller's refusal stays true; without that, recovery would finish a SIGNING record that
      // landed, and a transfer answered as refused would commit.
      this.unsentSigning.add(rec.txid)
      throw e
    }
    this.fault('signing')
    return await this.signAndCommit(rec, progress, tPrepared)
  }

  /** The sign round of a SIGNING transfer (also resumed by recover()), then the decision and delivery. */
  private async signAndCommit (rec: OutgoingRecord, progress: (msg: string) => void, t0 = Date.now()): Promise<TransferResult> {
    const contract = contractBytes(rec)
    const allowed = rec.receiverQuorums
    const pool = ([...(rec.votes ?? [])] as Vote[]).filter((v) => allowed === undefined || allowed.includes(v.quorumDid))
    let chosen = pool.slice(0, MIN_QUORUM_SIGNATURES)
    let spare = pool.slice(MIN_QUORUM_SIGNATURES)
    const refused: string[] = []
    const failedSigners = new Set<string>()
    for (;;) {
      const tRound = Date.now()
      let block = await this.buildBlock(rec, contract, chosen)
      const unsigned = encodeBlockEnvelope(block)
      const tBuilt = Date.now()
      const sigs = await Promise.all(chosen.map(async (v) => {
        try {
          return await this.transport.sign({ txid: rec.txid, quorumDid: v.quorumDid, block: unsigned })
        } catch (e) {
          return new RbtError(ErrorCode.CONSENSUS_FAILED, `${v.quorumDid} did not sign: ${errorMessage(e)}`, { details: { quorumDid: v.quorumDid } })
        }
      }))
      const failed = sigs.filter((s): s is RbtError => s instanceof RbtError)
      let signed: Uint8Array | undefined
      this.log.debug(`transfer ${rec.txid.slice(0, 12)}: block built ${tBuilt - tRound} ms, signatures ${Date.now() - tBuilt} ms`)
      if (failed.length === 0) {
        for (const s of sigs as SignReply[]) block = setSignature(block, s.quorumDid, s.signature)
        signed = encodeBlockEnvelope(block)
        // a quorum whose signature or credit does not verify is a signer that failed: replaced below
        for (const d of await this.forgedSigners(rec.txid, signed, chosen)) {
          failed.push(new RbtError(ErrorCode.CONSENSUS_FAILED, `${d} answered a signature that does not verify`, { details: { quorumDid: d } }))
        }
      }
      if (signed !== undefined && failed.length === 0) {
        this.log.debug(`transfer ${rec.txid.slice(0, 12)}: sign round ${Date.now() - t0} ms`)
        notify(this.opts.observe, { kind: 'round', round: 'sign', ms: Date.now() - t0 })
        // The decision point: from here on the transfer completes, whatever happens. A failure of
        // this node's own writes now (a full disk) is not a refusal: SIGNING is durable, so recovery
        // signs again and commits; after COMMITTING, recovery finishes the delivery and the record.
        try {
          await this.update(rec, { state: 'COMMITTING', block: b64(signed), signers: chosen.map((v) => v.quorumDid), pledges: packEvidence(sigs as SignReply[]) })
        } catch (e) {
          throw signingPending(rec.txid, `the quorums signed, but this node could not record the decision (${errorMessage(e)}); it is retried automatically and the transfer ends committed`)
        }
        this.fault('committing')
        progress('quorums signed the block, delivering to the receiver')
        try {
          return await this.complete(rec.txid, true, { rec, block: signed })
        } catch (e) {
          if (isRbtError(e, ErrorCode.DELIVERY_PENDING)) throw e
          throw deliveryPending(rec.txid, errorMessage(e))
        }
      }
      const bad = new Set(failed.map((f) => (f.details as { quorumDid: string }).quorumDid))
      for (const d of bad) failedSigners.add(d)
      refused.push(...failed.map((f) => f.message))
      if (spare.length < bad.size) spare.push(...await this.recruit(rec, bad.size - spare.length, [...chosen, ...spare].map((v) => v.quorumDid).concat([...failedSigners]), refused))
      if (spare.length < bad.size) {
        throw signingPending(rec.txid, `consensus reached but only ${chosen.length - bad.size} quorums could sign the block (${refused.join('; ')}); the tokens stay locked and signing is retried automatically`)
      }
      chosen = [...chosen.filter((v) => !bad.has(v.quorumDid)), ...spare.slice(0, bad.size)]
      spare = spare.slice(bad.size)
    }
  }

  /**
   * The signed block's signatures, verified before the decision. A block that verifies whole is
   * remembered, so this node checks it no more when its tokens come back. Otherwise each chosen
   * quorum's block signature and credit are checked, and those that do not verify are answered (to
   * be replaced); a block that fails for another reason is logged and goes on, the receiver decides.
   */
  private async forgedSigners (txid: string, signed: Uint8Array, chosen: readonly Vote[]): Promise<string[]> {
    const verifier = this.opts.verifier
    if (verifier === undefined) return []
    // a check that cannot finish soon (a signer's DID document still being looked up) does not hold
    // the decision back: the block goes on unchecked, as before, and its receiver decides
    const check = (async (): Promise<string[]> => {
      let why: string
      try {
        await verifyEnvelope(signed, { verifier, cache: this.opts.verified })
        return []
      } catch (e) { why = errorMessage(e) }
      const b = decodeBlockEnvelope(signed)
      const forged: string[] = []
      // only a signature that does not verify counts; one that could not be checked (a DID
      // document not found) is no proof against its quorum
      const fails = async (p: Promise<boolean> | undefined): Promise<boolean> => p === undefined ? false : !await p.catch(() => true)
      await Promise.all(chosen.map(async (v) => {
        const sig = b.signatures[v.quorumDid]
        const c = v.credit
        if (sig === undefined || await fails(verifier.verify(v.quorumDid, b.hash, sig, 'quorum')) ||
          await fails(c.signType === '1' ? verifier.verifyNlss?.(v.quorumDid, txid, c.signature, c.privSignature, 'quorum') : verifier.verify(v.quorumDid, txid, c.privSignature, 'quorum'))) forged.push(v.quorumDid)
      }))
      if (forged.length === 0) this.log.warn(`transfer ${txid}: the signed block could not be verified here (${why}); it goes on, its receiver decides`)
      else this.log.warn(`transfer ${txid}: ${forged.join(', ')} answered signatures that do not verify; replaced`)
      return forged
    })()
    let timer: NodeJS.Timeout | undefined
    const late = new Promise<string[]>((resolve) => { timer = setTimeout(() => { resolve([]) }, SIGNED_BLOCK_CHECK_MS) })
    try {
      return await Promise.race([check, late])
    } finally { clearTimeout(timer) }
  }

  /**
   * More yes votes when signers failed and no spare vote is left: the quorums of the list not asked
   * yet (or that said no, they may answer now) are asked to PREPARE, as many at a time as needed.
   * The new votes are recorded, so a restart resumes with them.
   */
  private async recruit (rec: OutgoingRecord, need: number, have: string[], refused: string[]): Promise<Vote[]> {
    const candidates = rec.asked.filter((d) => !have.includes(d) && (rec.receiverQuorums === undefined || rec.receiverQuorums.includes(d)))
    if (candidates.length === 0) return []
    const { prepare, prefer } = await this.preparer(rec)
    const ordered = prefer(candidates)
    const got: Vote[] = []
    let next = 0
    while (got.length < need && next < ordered.length) {
      const batch = ordered.slice(next, next + need - got.length)
      next += batch.length
      for (const r of await Promise.all(batch.map(prepare))) {
        if (r.vote === 'yes') got.push(r)
        else refused.push(`${r.quorumDid}: ${r.reason}`)
      }
    }
    const cur = await readOutgoing(this.ledger, rec.txid) ?? rec
    const contacted = [...new Set([...(cur.contacted ?? rec.asked), ...ordered.slice(0, next)])]
    if (got.length > 0) {
      await this.update(rec, { yes: [...new Set([...(cur.yes ?? []), ...got.map((v) => v.quorumDid)])], votes: [...(cur.votes ?? []), ...got], contacted })
    } else {
      await this.update(rec, { contacted })
    }
    return got
  }

  private async buildBlock (rec: OutgoingRecord, contract: Uint8Array, chosen: Vote[]): Promise<Block> {
    const c = decodeContract(contract)
    if (rec.nft !== undefined) {
      const pledgeDetails: Record<string, Vote['pledge']> = {}
      for (const v of chosen) pledgeDetails[v.quorumDid] = v.pledge
      const chain = rec.nft.op === 'execute' ? await this.ledger.chain(rec.nft.nftId) : []
      return nftBlock({
        op: rec.nft, sender: rec.sender, receiver: rec.receiver, memo: rec.memo, txid: rec.txid, contract, contractHash: c.hash,
        keySig: c.keySignatures[rec.sender] ?? '', shareSig: c.shareSignatures[rec.sender] ?? '', credits: chosen.map((v) => v.credit),
        pledgeDetails, epoch: rec.epoch, previous: chain.length > 0 ? decodeBlockEnvelope(chain[chain.length - 1]) : undefined
      })
    }
    const tokens: BlockContent['transInfo']['tokens'] = {}
    // the next link of each token's chain follows the state the contract spends (what the quorums validated)
    const spends = c.content.transInfo.transTokens ?? {}
    for (const id of rec.tokens) {
      const t = spends[id]
      if (t?.blockId === undefined) throw new RbtError(ErrorCode.INTERNAL, `the contract of ${rec.txid} names no state of token ${id}`)
      tokens[id] = { tokenType: t.tokenType, blockNumber: String(parseBlockId(t.blockId).number + 1), previousBlockId: t.blockId }
    }
    const pledgeDetails: Record<string, Vote['pledge']> = {}
    for (const v of chosen) pledgeDetails[v.quorumDid] = v.pledge
    const keySig = c.keySignatures[rec.sender] ?? ''
    const shareSig = c.shareSignatures[rec.sender] ?? ''
    return createBlock({
      transactionType: TransactionType.TRANSFERRED,
      owner: rec.receiver,
      transInfo: { sender: rec.sender, receiver: rec.receiver, comment: rec.memo, tid: rec.txid, tokens },
      smartContract: contract,
      quorumSignatures: chosen.map((v) => v.credit),
      pledgeDetails,
      childTokens: [],
      initiatorSignature: { hash: c.hash, signType: shareSig === '' ? 0 : 1, initiatorDid: rec.sender, privSignature: keySig, nlssShareSignature: shareSig },
      epoch: rec.epoch
    })
  }

  /**
   * Finishes a COMMITTING transfer: deliver to the receiver (idempotent there), then record
   * COMMITTED and tell the quorums. With `wait`, delivery is retried a few times before giving up
   * for now (recover() retries later); the tokens are the receiver's either way.
   */
  async complete (txid: string, wait: boolean, decided?: { rec: OutgoingRecord, block: Uint8Array }): Promise<TransferResult> {
    // right after the decision the record and the signed block are at hand: not read and decoded again
    const rec = decided?.rec ?? await readOutgoing(this.ledger, txid)
    if (rec === undefined || rec.block === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `no committed transfer ${txid}`)
    const block = decided?.block ?? unb64(rec.block)
    const decoded = decodeBlockEnvelope(block)
    const blockId = formatBlockId(decoded.content.transInfo.tokens[rec.tokens[0]].blockNumber, decoded.hash)
    if (rec.nft !== undefined) return await this.completeNft(rec, block, blockId, wait)
    if (rec.state === 'COMMITTING') {
      const txc = this.txChains(rec)
      // the chains as sent to the quorums, each token's gaining the new block (a copy: the bundle the quorums were sent stays as it was)
      const delivered: TokenChains = {
        has: (id) => txc.has(id),
        of: async (ids) => {
          const sent = await txc.of(ids)
          const out: ChainBundle = { chains: { ...sent.chains }, contents: sent.contents }
          for (const id of ids) {
            const chain = out.chains[id]
            if (chain !== undefined && decodeBlockEnvelope(chain[chain.length - 1]).hash !== decoded.hash) out.chains[id] = [...chain, block]
          }
          return out
        }
      }
      // the tokens the receiver's node said it holds travel without their chains (not waited for:
      // a receiver that has not answered by now is sent every chain)
      const held = this.receiverHeld.get(txid)?.held
      this.receiverHeld.delete(txid)
      const n = Number(decoded.content.transInfo.tokens[rec.tokens[0]].blockNumber)
      // the chains were this node's own; when the block's signatures were verified after the sign
      // round (not when that check was cut short), the states it leads to are known valid here
      // (docs/protocol.md, "Validated states")
      const valid = knownVerified(block, this.opts.verified)
      // The new block of each token and the states it leads to; then the tokens' records (Locked
      // until the receiver took them) with the transaction and COMMITTED.
      const blocks = (w: LedgerWriter, recs: Array<TokenState | undefined>): void => {
        for (const t of recs) {
          if (t === undefined) continue
          const number = Number(decoded.content.transInfo.tokens[t.tokenId].blockNumber)
          w.putBlock(t.tokenId, number, block)
          if (valid) putValidatedState(w, t.tokenId, { tokenId: t.tokenId, blockId: formatBlockId(number, decoded.hash), blockNumber: number, hash: decoded.hash, owner: rec.receiver, tokenType: decoded.content.transInfo.tokens[t.tokenId].tokenType, burnt: false, value: t.valueMilli / 1000 })
        }
      }
      const committed = (w: LedgerWriter, recs: Array<TokenState | undefined>): void => {
        const now = this.clock.now()
        for (const t of recs) {
          // a receiver on this node already owns the token record; do not overwrite it
          if (t === undefined || t.owner !== rec.sender) continue
          const number = Number(decoded.content.transInfo.tokens[t.tokenId].blockNumber)
          w.putToken({ ...t, status: rec.receiver === rec.sender ? 'Free' : 'Transferred', owner: rec.receiver, latestBlockId: formatBlockId(number, decoded.hash), txid, updatedAt: now })
        }
        w.putTransaction({ txid, tokenType: rec.fts !== undefined ? 'ft' : 'rbt', sender: rec.sender, receiver: rec.receiver, amountMilli: rec.amountMilli, tokens: rec.tokens, quorums: rec.signers, memo: rec.memo, epoch: rec.epoch, role: 'sender', blockId: formatBlockId(n, decoded.hash), status: 'committed' })
        putOutgoing(w, { ...withoutEvidence(rec), state: 'COMMITTED', updatedAt: now })
      }
      // A receiver on another node: the blocks (most of what this node writes for a transfer) are
      // written while the delivery runs, so the receiver's validation and this write share the
      // machine's cores; the tokens' records and COMMITTED follow the receiver's answer. A
      // receiver on this node shares the token records: there all is read and written after its
      // delivery.
      const apart = rec.receiver !== rec.sender && this.opts.isLocalDid !== undefined && !await this.opts.isLocalDid(rec.receiver)
      // a self transfer has no other party: this node stores the block itself below
      const delivery = rec.receiver === rec.sender ? Promise.resolve(true) : this.deliverWithRetry(rec, block, await delivered.of(rec.tokens.filter((id) => held?.has(id) !== true)), wait, 'transfer', delivered)
      // started once the delivery is on its way (its message is encoded and sent first)
      const early = apart ? new Promise((resolve) => { setImmediate(resolve) }).then(async () => await this.ledger.tokensById(rec.tokens, { content: false })) : undefined
      const written = early?.then(async (recs) => { await this.ledger.commit((w) => { blocks(w, recs) }) }).then(() => undefined, (e: unknown) => e)
      if (!await delivery) {
        // a delivery retried later (it may be minutes) reads the chains again rather than keep them
        this.sentBundles.delete(txid)
        const failed = await written
        if (failed !== undefined) this.log.warn(`transfer ${txid}: the new block could not be written here yet (${errorMessage(failed)}); recovery writes it with the delivery`)
        return { txid, blockId, quorums: rec.signers, delivered: false }
      }
      this.fault('delivered')
      this.log.debug(`transfer ${txid.slice(0, 12)}: delivered ${Date.now() - rec.updatedAt} ms after the decision`)
      const failed = await written
      if (failed !== undefined) throw failed
      const recs = await (early ?? this.ledger.tokensById(rec.tokens, { content: false }))
      await this.ledger.commit((w) => { if (early === undefined) blocks(w, recs); committed(w, recs) })
      this.sentBundles.delete(txid)
      this.fault('committed')
      const spent = spentStates(rec).map((st) => `${st.tokenId}@${st.blockId}`)
      try { this.opts.onCommitted?.(txid, spent) } catch (e) { this.log.debug(`onCommitted: ${errorMessage(e)}`) }
    }
    void this.notifyQuorums(txid).catch((e) => { this.log.warn(`transfer ${txid}: telling quorums failed: ${errorMessage(e)}`) })
    return { txid, blockId, quorums: rec.signers, delivered: true }
  }

  /**
   * Delivers the decided block to the receiver (idempotent there); a few tries when `wait`, else one.
   * Tokens of the transaction the receiver then says it lacks (sent without a chain) come from `tokens`, ancestors from the ledger.
   */
  private async deliverWithRetry (rec: OutgoingRecord, block: Uint8Array, bundle: ChainBundle, wait: boolean, what: string, tokens?: TokenChains): Promise<boolean> {
    const attempts = wait ? (this.opts.deliverAttempts ?? 3) : 1
    let lastErr: unknown
    for (let i = 0; i < attempts; i++) {
      try {
        let sent = bundle
        for (let round = 0; ; round++) {
          let reply
          try {
            reply = await this.transport.deliver({ txid: rec.txid, receiver: rec.receiver, contract: contractBytes(rec), block, bundle: sent, memo: rec.memo, epoch: rec.epoch, ...(rec.pledges !== undefined ? { pledges: unpackEvidence(rec.pledges) } : {}) })
          } catch (e) {
            // a receiver from before the missing-ancestors answer refuses a bundle without them: once more with every ancestor
            const whole = round === 0 && NO_CHAIN.test(errorMessage(e)) ? await this.whole(rec.tokens, sent) : undefined
            if (whole === undefined) throw e
            sent = whole
            continue
          }
          if (reply?.accepted !== false) return true
          // the receiver lacks older ancestors of the parts: deliver again with their chains
          const more = round < ANCESTRY_ROUNDS ? await this.lacking(reply.missing, sent, round, tokens) : undefined
          if (more === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `the receiver lacks the chains of ${String(reply.missing?.length)} ancestors this node cannot supply`)
          sent = more
        }
      } catch (e) {
        lastErr = e
        if (i + 1 < attempts) await new Promise((resolve) => setTimeout(resolve, 200 * (i + 1)))
      }
    }
    this.log.warn(`${what} ${rec.txid}: delivery to ${rec.receiver} failed (${errorMessage(lastErr)}); will retry`)
    return false
  }

  private async completeNft (rec: OutgoingRecord, block: Uint8Array, blockId: string, wait: boolean): Promise<TransferResult> {
    const op = rec.nft!
    const txid = rec.txid
    if (rec.state === 'COMMITTING') {
      if (rec.receiver !== rec.sender) {
        const bundle = await buildBundle(this.ledger, [op.nftId])
        const chain = bundle.chains[op.nftId]
        if (decodeBlockEnvelope(chain[chain.length - 1]).hash !== decodeBlockEnvelope(block).hash) bundle.chains[op.nftId] = [...chain, block]
        if (!await this.deliverWithRetry(rec, block, bundle, wait, 'NFT transaction')) return { txid, blockId, quorums: rec.signers, delivered: false }
        this.fault('delivered')
      }
      const now = this.clock.now()
      const t = await this.ledger.token(op.nftId)
      const previous = t?.latestBlockId ?? ''
      await this.ledger.commit((w) => {
        w.putBlock(op.nftId, Number(blockId.split('-')[0]), block)
        // a receiver on this node already owns the token record; do not overwrite it
        if (rec.receiver === rec.sender || t === undefined || t.owner === rec.sender) {
          w.putToken({
            tokenId: op.nftId, tokenType: opTokenType(op), valueMilli: op.valueMilli, owner: rec.receiver, status: rec.receiver === rec.sender ? 'Free' : 'Transferred',
            latestBlockId: blockId, parentId: op.parentId ?? t?.parentId, txid, updatedAt: now
          })
        }
        w.putTransaction({ txid, tokenType: op.sc !== undefined ? 'smartContract' : 'nft', sender: rec.sender, receiver: rec.receiver, amountMilli: op.valueMilli, tokens: [op.nftId], quorums: rec.signers, memo: rec.memo, epoch: rec.epoch, role: 'sender', blockId, status: 'committed' })
        putOutgoing(w, { ...withoutEvidence(rec), state: 'COMMITTED', updatedAt: now })
      })
      this.fault('committed')
      try {
        this.opts.onCommitted?.(txid, op.op === 'execute' && previous !== '' ? [`${op.nftId}@${previous}`] : [])
        this.opts.onNftCommitted?.(op.nftId, blockId, rec.receiver, txid)
      } catch (e) { this.log.debug(`onCommitted: ${errorMessage(e)}`) }
    }
    void this.notifyQuorums(txid).catch((e) => { this.log.warn(`NFT transaction ${txid}: telling quorums failed: ${errorMessage(e)}`) })
    return { txid, blockId, quorums: rec.signers, delivered: true }
  }

  /** FINALIZE to the signers, ABORT to quorums that voted but were not chosen; retried by recover(). */
  async notifyQuorums (txid: string): Promise<void> {
    const rec = await readOutgoing(this.ledger, txid)
    if (rec === undefined || rec.state !== 'COMMITTED' || rec.block === undefined) return
    const block = unb64(rec.block)
    // a record without `contacted` predates it: every quorum of its list may hold a vote
    const pending = (rec.contacted ?? rec.asked).filter((q) => !rec.notified.includes(q))
    const ok = await Promise.all(pending.map(async (q) => {
      try {
        if (rec.signers.includes(q)) await this.transport.finalize({ txid, quorumDid: q, block })
        else await this.transport.abort({ txid, quorumDid: q, reason: 'not chosen' })
        return q
      } catch { return undefined }
    }))
    const done = ok.filter((q): q is string => q !== undefined)
    if (done.length > 0) {
      const latest = await readOutgoing(this.ledger, txid)
      if (latest !== undefined) await this.update(latest, { notified: [...new Set([...latest.notified, ...done])] })
    }
  }

  private async abort (rec: OutgoingRecord, reason: string): Promise<void> {
    this.sentBundles.delete(rec.txid)
    const now = this.clock.now()
    const tokens = await Promise.all(rec.tokens.map(async (id) => await this.ledger.token(id)))
    await this.ledger.commit((w) => {
      // an NFT that was being deployed goes back to Generated
      const back = rec.nft?.op === 'deploy' ? 'Generated' : 'Free'
      for (const t of tokens) if (t !== undefined && t.status === 'Locked' && t.txid === rec.txid) w.putToken({ ...t, status: back, updatedAt: now })
      putOutgoing(w, { ...rec, state: 'ABORTED', reason, updatedAt: now })
    })
    this.fault('aborted')
    await Promise.all(rec.asked.map(async (q) => {
      await this.transport.abort({ txid: rec.txid, quorumDid: q, reason }).catch(() => {})
    }))
  }

  /**
   * The operator's release of a transfer's Locked tokens (release-all-locked-tokens). Only a
   * transfer that can no longer commit is released, through the abort above (tokens Free, the
   * asked quorums told ABORT): a PREPARING one that no run of this process drives and that has not
   * changed for `minAgeMs`, or an ABORTED one whose tokens are still Locked. From SIGNING on a
   * quorum may have signed, so the tokens are, or may become, the receiver's: never released.
   * Runs under the sender DID's lock, as locking new tokens does.
   */
  async releaseStuck (txid: string, minAgeMs: number): Promise<{ released: boolean, state: OutgoingRecord['state'] | 'UNKNOWN', why: string }> {
    const first = await readOutgoing(this.ledger, txid)
    if (first === undefined) return { released: false, state: 'UNKNOWN', why: 'no outgoing record' }
    return await this.locks.run(first.sender, async () => {
      const rec = await readOutgoing(this.ledger, txid)
      if (rec === undefined) return { released: false, state: 'UNKNOWN' as const, why: 'no outgoing record' }
      const state = rec.state
      if (state === 'SIGNING') return { released: false, state, why: 'signing: quorums may have signed the block; recovery finishes the transfer' }
      if (state === 'COMMITTING') return { released: false, state, why: 'decided: the tokens belong to the receiver; delivery is retried' }
      if (state === 'COMMITTED') return { released: false, state, why: 'committed: the tokens belong to the receiver' }
      if (this.inFlight.has(txid)) return { released: false, state, why: 'in flight: a run of this transaction is under way on this node' }
      if (state === 'PREPARING') {
        const age = this.clock.now() - rec.updatedAt
        if (age < minAgeMs) return { released: false, state, why: `preparing for ${Math.max(0, Math.round(age / 1000))} s, released only after ${Math.round(minAgeMs / 1000)} s` }
      }
      // PREPARING and stale, or ABORTED with tokens left Locked: the abort path again
      this.inFlight.add(txid)
      try {
        await this.abort(rec, state === 'ABORTED' ? rec.reason ?? 'aborted' : 'released by the operator: interrupted before the decision')
      } finally { this.inFlight.delete(txid) }
      return { released: true, state, why: state === 'ABORTED' ? 'aborted transfer: tokens freed' : 'interrupted before the decision: aborted, quorums told ABORT' }
    })
  }

  /**
   * Recovery's abort of a stale PREPARING transfer, exclusive with any other run of the same
   * transaction (a driver, the operator's release): it is marked in flight while it runs and its
   * record is read again first. Two aborts reading the tokens at once could otherwise let the later
   * commit free tokens a new transfer locked in between.
   */
  private async abortOnce (txid: string, reason: string, unsentSigning = false): Promise<void> {
    if (this.inFlight.has(txid)) return
    this.inFlight.add(txid)
    try {
      const cur = await readOutgoing(this.ledger, txid)
      // a SIGNING record is aborted only when this process knows it asked no quorum to sign
      if (cur?.state === 'PREPARING' || (unsentSigning && cur?.state === 'SIGNING')) await this.abort(cur, reason)
    } finally { this.inFlight.delete(txid) }
  }

  /** This node's record of a transfer it sent (any state). */
  /**
   * Transfers this node sent that are not decided and delivered yet (PREPARING, SIGNING,
   * COMMITTING), oldest first, from the index of open transfers.
   */
  async openTransfers (): Promise<OutgoingRecord[]> {
    const open = await openOutgoing(this.ledger)
    return open.filter((r) => r.state !== 'COMMITTED').sort((a, b) => a.createdAt - b.createdAt)
  }

  async record (txid: string): Promise<OutgoingRecord | undefined> {
    return await readOutgoing(this.ledger, txid)
  }

  /** What a quorum asking about `txid` is told. */
  async outcome (txid: string): Promise<{ state: OutgoingRecord['state'] | 'UNKNOWN', block?: Uint8Array }> {
    const rec = await readOutgoing(this.ledger, txid)
    if (rec === undefined) return { state: 'UNKNOWN' }
    return { state: rec.state, block: rec.block !== undefined ? unb64(rec.block) : undefined }
  }

  /**
   * After a restart (and periodically): PREPARING transfers are aborted (nothing was decided),
   * COMMITTING ones are delivered and committed, COMMITTED ones finish telling their quorums.
   */
  /** Transfers this process is driving right now: recovery leaves them to their own run. */
  private readonly inFlight = new Set<string>()
  /** Transfers whose SIGNING write failed before any signature was asked for: recovery aborts them. */
  private readonly unsentSigning = new Set<string>()
  private readonly receiverChecks = new Map<string, ReceiverCheck>()
  /** per transaction in flight: the tokens the receiver's node holds at the state spent, once it answered */
  private readonly receiverHeld = new Map<string, { held?: Set<string> }>()
  /** Double-spend refusals of transfers being aborted, told to the node once their tokens are Free. */
  private readonly refusedSpends = new Map<string, { states: SpentState[], reason: string }>()

  async recover (opts: { staleMs?: number } = {}): Promise<void> {
    const staleBefore = this.clock.now() - (opts.staleMs ?? 0)
    // only the transfers still open, from their index (never the whole history)
    const recs = (await openOutgoing(this.ledger)).filter((r) => !this.inFlight.has(r.txid))
    for (const t of this.unsentSigning) if (!recs.some((r) => r.txid === t) && !this.inFlight.has(t)) this.unsentSigning.delete(t)
    for (const r of recs) {
      try {
        if (this.unsentSigning.has(r.txid)) {
          await this.abortOnce(r.txid, 'the node could not record the decision to ask for signatures; aborted on recovery', true)
          this.unsentSigning.delete(r.txid)
        } else if (r.state === 'PREPARING' && r.updatedAt <= staleBefore) await this.abortOnce(r.txid, 'interrupted before the decision; aborted on recovery')
        else if (r.state === 'SIGNING') await this.signAndCommit(r, () => {})
        else if (r.state === 'COMMITTING') await this.redeliver(r.txid)
        else if (r.state === 'COMMITTED' && r.notified.length < r.asked.length) await this.notifyQuorums(r.txid)
      } catch (e) {
        this.log.warn(`recovery of transfer ${r.txid}: ${errorMessage(e)}`)
      }
    }
  }

  /** Delivery retries of decided transfers whose receiver did not answer: txid → failures, next try. */
  private readonly redelivery = new Map<string, { failures: number, nextAt: number }>()

  /**
   * One more delivery of a COMMITTING transfer, with backoff: after n failed tries the next waits
   * 2^(n-1) s, at most a minute (the periodic recovery calls this on every pass).
   */
  private async redeliver (txid: string): Promise<void> {
    const now = this.clock.now()
    const due = this.redelivery.get(txid)
    if (due !== undefined && due.nextAt > now) return
    const r = await this.complete(txid, false)
    if (r.delivered) { this.redelivery.delete(txid); return }
    const failures = (due?.failures ?? 0) + 1
    this.redelivery.set(txid, { failures, nextAt: now + Math.min(MAX_REDELIVERY_DELAY_MS, 1000 * 2 ** (failures - 1)) })
  }

  private async update (rec: OutgoingRecord, patch: Partial<OutgoingRecord>): Promise<void> {
    Object.assign(rec, patch, { updatedAt: this.clock.now() })
    await this.ledger.commit((w) => { putOutgoing(w, rec) })
  }
}

/** How long the sender's check of a signed block may hold its decision back. */
const SIGNED_BLOCK_CHECK_MS = 3000

/** Longest wait between two deliveries of a decided transfer whose receiver does not answer. */
const MAX_REDELIVERY_DELAY_MS = 60_000


function checkFtSpends (fts: readonly FtSpend[]): void {
  const seen = new Set<string>()
  for (const f of fts) {
    if (typeof f.name !== 'string' || f.name === '' || typeof f.creator !== 'string' || f.creator === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'each FT needs a name and a creator DID')
    if (!Number.isSafeInteger(f.count) || f.count <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, `number of "${f.name}" FTs must be a whole number greater than 0`)
    const k = `${f.name}\u0000${f.creator}`
    if (seen.has(k)) throw new RbtError(ErrorCode.INVALID_INPUT, `FT "${f.name}" of ${f.creator} is named twice; give one total`)
    seen.add(k)
  }
}

/** The outcome of a receiver probe running next to the prepare round. */
interface ReceiverCheck {
  /** resolves with the receiver's policy when it answered, rejects with the probe's error */
  done: Promise<ReceiverPolicy>
  /** throws the probe's error if it already failed */
  throwIfFailed: () => void
}

function receiverCheck (probe: Promise<ReceiverPolicy>): ReceiverCheck {
  let failure: { error: unknown } | undefined
  const done = probe.catch((e: unknown) => { failure = { error: e }; throw e })
  done.catch(() => {})
  return { done, throwIfFailed: () => { if (failure !== undefined) throw failure.error } }
}

/** The signers' pledge chains, merged into one bundle and kept in the outgoing record (base64). */
function packEvidence (replies: SignReply[]): OutgoingRecord['pledges'] {
  const out: NonNullable<OutgoingRecord['pledges']> = { chains: {}, contents: {} }
  let any = false
  for (const r of replies) {
    const ev = r.pledgeChains
    if (ev === undefined || ev === null || typeof ev !== 'object') continue
    for (const [id, chain] of Object.entries(ev.chains ?? {})) {
      if (Array.isArray(chain) && chain.every((b) => b instanceof Uint8Array)) { out.chains[id] = chain.map(b64); any = true }
    }
    for (const [id, c] of Object.entries(ev.contents ?? {})) if (typeof c === 'string') out.contents[id] = c
  }
  return any ? out : undefined
}

/**
 * A transfer's contract as bytes, the same array for every use while the transfer runs, so it is
 * decoded once (decodeContract remembers by array): each use read it from base64 again and decoded
 * it whole, five or six times a transfer, some 5 ms each for a contract of 300 parts. Keyed by
 * txid, the hash of those very bytes.
 */
const contractArrays = new Lru<Uint8Array>(32)
function contractBytes (rec: Pick<OutgoingRecord, 'txid' | 'contract'>): Uint8Array {
  let c = contractArrays.get(rec.txid)
  if (c === undefined) {
    c = unb64(rec.contract)
    if (c.byteLength > 0) contractArrays.set(rec.txid, c)
  }
  return c
}

/** The token states a transaction spends, as its contract names them. */
function spentStates (rec: OutgoingRecord): SpentState[] {
  const spends = decodeContract(contractBytes(rec)).content.transInfo.transTokens ?? {}
  return Object.entries(spends).map(([tokenId, t]) => ({ tokenId, blockId: t.blockId ?? '' }))
}

function unpackEvidence (p: NonNullable<OutgoingRecord['pledges']>): ChainBundle {
  return { chains: Object.fromEntries(Object.entries(p.chains).map(([id, chain]) => [id, chain.map(unb64)])), contents: { ...p.contents } }
}

