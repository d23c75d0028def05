import { ErrorCode, RbtError, errorMessage, isRbtError, signingPending } from '../util/errors.js'
import { silentLogger } from '../util/logger.js'
import { lockNft, lockTokens, type LockContext, type NftInput, type TransferInput } from './transfer-lock.js'
import { KeyedMutex } from './keyed-mutex.js'
import type { ConsensusSigner } from './ports.js'
import { systemClock } from './ports.js'
import { openOutgoing, putOutgoing, readOutgoing, unb64, type OutgoingRecord } from './records.js'
import { notify, type ConsensusOutcome } from './observe.js'
import { SenderContext, checkFtSpends, receiverCheck, type SenderOptions, type TransferResult, type WaitingOperation } from './sender-context.js'
import { PrepareRound } from './sender-prepare.js'
import { SignRound } from './sender-sign.js'
import { SenderDelivery } from './sender-delivery.js'
import { deepChange } from './lineage-reset.js'

export type { FtSpend, NftInput, TransferInput } from './transfer-lock.js'
export type { SenderOptions, TransferResult, WaitingOperation } from './sender-context.js'

/**
 * The sender's side of a transfer: select and lock tokens, gather 5 quorum votes with pledges,
 * have the chosen quorums sign the new block, record the decision (COMMITTING), deliver to the
 * receiver, record COMMITTED and tell the quorums. Every step is durable; `recover()` finishes or
 * undoes whatever a crash interrupted.
 */
export class TransferSender {
  private readonly ctx: SenderContext
  private readonly locks = new KeyedMutex()
  private readonly lockContext: LockContext
  private readonly prepareRound: PrepareRound
  private readonly signRound: SignRound
  private readonly delivery: SenderDelivery

  constructor (private readonly opts: SenderOptions) {
    const ctx = this.ctx = new SenderContext(opts, opts.clock ?? systemClock, opts.logger ?? silentLogger)
    this.prepareRound = new PrepareRound(ctx)
    this.delivery = new SenderDelivery(ctx, this.prepareRound)
    this.signRound = new SignRound(ctx, this.prepareRound, this.delivery)
    this.lockContext = { ledger: ctx.ledger, clock: ctx.clock, fault: (step) => { this.fault(step) }, locked: (txid) => { ctx.inFlight.add(txid) } }
  }

  private get ledger (): SenderContext['ledger'] { return this.ctx.ledger }
  /** the transport in use (replaceable: tests wrap it) */
  get transport (): SenderContext['transport'] { return this.ctx.transport }
  set transport (t: SenderContext['transport']) { this.ctx.transport = t }
  private get clock (): SenderContext['clock'] { return this.ctx.clock }
  private get log (): SenderContext['log'] { return this.ctx.log }
  private get inFlight (): Set<string> { return this.ctx.inFlight }

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
    this.ctx.receiverChecks.set(rec.txid, probe)
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
        const t = await this.prepareRound.run(rec, progress)
        // SIGNING is durable from here: the transfer is never aborted, so no failure is a refusal
        const result = await this.signRound.run(rec, progress, t).catch((e: unknown) => {
          throw isRbtError(e) && (e.code === ErrorCode.SIGNING_PENDING || e.code === ErrorCode.DELIVERY_PENDING) ? e : signingPending(rec.txid, `the quorums agreed, but the sign round failed (${errorMessage(e)}); it is retried automatically`)
        })
        this.observed(result.delivered ? 'committed' : 'delivery_pending', started)
        return result
      } catch (e) {
        // The read and the abort's own write may fail (the disk still full, an I/O error): the
        // answer stays the first error, which names the transaction when its decision may have
        // landed. A storage error in its place would read as a refusal of a transfer the restarted
        // node may yet complete; a PREPARING record left behind is aborted by recovery.
        let unread = false
        const current = await readOutgoing(this.ledger, rec.txid).catch((re: unknown) => { unread = true; this.log.warn(`transfer ${rec.txid}: its record could not be read after the failure (${errorMessage(re)}); recovery finishes it`) })
        const aborting = current?.state === 'PREPARING'
        this.observed(aborting ? 'aborted' : 'failed', started)
        // A quorum's double-spend refusal is told once the tokens are Free: by the abort once it is
        // written; at once for a record no longer PREPARING (no tokens of this run Locked); held
        // for the abort that frees them later when the record cannot be read or the abort fails
        if (unread) this.holdDoubleSpent(rec.txid)
        else if (!aborting) this.tellDoubleSpent(rec.txid)
        else await this.abort(current, errorMessage(e)).catch((ae: unknown) => { this.log.warn(`transfer ${rec.txid}: the abort could not be written (${errorMessage(ae)}); recovery aborts it`); this.holdDoubleSpent(rec.txid) })
        throw e
      }
    } finally {
      this.ctx.forget(rec.txid)
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
    this.ctx.receiverChecks.set(rec.txid, receiverCheck(Promise.resolve(policy)))
    return rec
  }

  /** Finishes a COMMITTING transfer (delivery, COMMITTED, the quorums told). */
  async complete (txid: string, wait: boolean): Promise<TransferResult> {
    return await this.delivery.complete(txid, wait)
  }

  /** FINALIZE to the signers, ABORT to quorums that voted but were not chosen. */
  async notifyQuorums (txid: string): Promise<void> {
    await this.delivery.notifyQuorums(txid)
  }

  private holdDoubleSpent (txid: string): void {
    const refused = this.ctx.refusedSpends.get(txid)
    this.ctx.refusedSpends.delete(txid)
    if (refused !== undefined) this.ctx.untoldSpends.set(txid, refused)
  }

  private tellDoubleSpent (txid: string): void {
    const refused = this.ctx.refusedSpends.get(txid) ?? this.ctx.untoldSpends.get(txid)
    this.ctx.refusedSpends.delete(txid)
    this.ctx.untoldSpends.delete(txid)
    if (refused === undefined || this.opts.onDoubleSpent === undefined) return
    try { this.opts.onDoubleSpent(refused.states, refused.reason) } catch (e) { this.log.debug(`onDoubleSpent: ${errorMessage(e)}`) }
  }

  private async abort (rec: OutgoingRecord, reason: string): Promise<void> {
    this.ctx.sentBundles.delete(rec.txid)
    const now = this.clock.now()
    const tokens = await Promise.all(rec.tokens.map(async (id) => await this.ledger.token(id)))
    await this.ledger.commit((w) => {
      // an NFT that was being deployed goes back to Generated
      const back = rec.nft?.op === 'deploy' ? 'Generated' : 'Free'
      for (const t of tokens) if (t !== undefined && t.status === 'Locked' && t.txid === rec.txid) w.putToken({ ...t, status: back, updatedAt: now })
      putOutgoing(w, { ...rec, state: 'ABORTED', reason, updatedAt: now })
    })
    this.fault('aborted')
    // a quorum's double-spend refusal of this transfer (its run's, or held back when an earlier
    // abort failed) is told here, the tokens Free: the node checks only tokens it holds Free
    this.tellDoubleSpent(rec.txid)
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

  /**
   * Transfers this node sent that are not decided and delivered yet (PREPARING, SIGNING,
   * COMMITTING), oldest first, from the index of open transfers.
   */
  async openTransfers (): Promise<OutgoingRecord[]> {
    const open = await openOutgoing(this.ledger)
    return open.filter((r) => r.state !== 'COMMITTED').sort((a, b) => a.createdAt - b.createdAt)
  }

  /** This node's record of a transfer it sent (any state). */
  async record (txid: string): Promise<OutgoingRecord | undefined> {
    return await readOutgoing(this.ledger, txid)
  }

  /** The change a sent transaction left whose line of burns is due for a reset by a self transfer (lineage-reset.ts). */
  async deepChange (txid: string): Promise<{ tokens: string[], amountMilli: number }> {
    const rec = await readOutgoing(this.ledger, txid)
    if (rec === undefined) return { tokens: [], amountMilli: 0 }
    return await deepChange(this.ledger, rec.sender, rec.tokens)
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
  async recover (opts: { staleMs?: number } = {}): Promise<void> {
    const staleBefore = this.clock.now() - (opts.staleMs ?? 0)
    // only the transfers still open, from their index (never the whole history)
    const recs = (await openOutgoing(this.ledger)).filter((r) => !this.inFlight.has(r.txid))
    for (const t of this.prepareRound.unsentSigning) if (!recs.some((r) => r.txid === t) && !this.inFlight.has(t)) this.prepareRound.unsentSigning.delete(t)
    for (const r of recs) {
      try {
        if (this.prepareRound.unsentSigning.has(r.txid)) {
          await this.abortOnce(r.txid, 'the node could not record the decision to ask for signatures; aborted on recovery', true)
          this.prepareRound.unsentSigning.delete(r.txid)
        } else if (r.state === 'PREPARING' && r.updatedAt <= staleBefore) await this.abortOnce(r.txid, 'interrupted before the decision; aborted on recovery')
        else if (r.state === 'SIGNING') await this.signRound.run(r, () => {})
        else if (r.state === 'COMMITTING') await this.delivery.redeliver(r.txid)
        else if (r.state === 'COMMITTED' && r.notified.length < r.asked.length) await this.notifyQuorums(r.txid)
      } catch (e) {
        this.log.warn(`recovery of transfer ${r.txid}: ${errorMessage(e)}`)
      }
    }
  }
}
