import { decodeBlockEnvelope, formatBlockId } from '../tokenchain/block.js'
import { knownVerified } from '../tokenchain/validate.js'
import { ErrorCode, RbtError, errorMessage, isRbtError } from '../util/errors.js'
import { buildBundle, putValidatedState } from './bundle.js'
import type { TokenChains } from './tx-chains.js'
import type { ChainBundle } from './messages.js'
import { ACCEPTED_CERTS, carriedFor, certificatesToKeep } from './carried-certificates.js'
import type { LedgerWriter, TokenState } from './ports.js'
import { putOutgoing, readOutgoing, unb64, withoutEvidence, type OutgoingRecord } from './records.js'
import { opTokenType } from './nft.js'
import { CERTIFICATE_SHORT } from './receiver.js'
import { ANCESTRY_ROUNDS, NO_CHAIN, type PrepareRound } from './sender-prepare.js'
import { OUTGOING_CERT, SenderPart, contractBytes, spentStates, type SenderContext, type TransferResult } from './sender-context.js'

/** Longest wait between two deliveries of a decided transfer whose receiver does not answer. */
const MAX_REDELIVERY_DELAY_MS = 60_000

/**
 * The sender's side after the decision: deliver the signed block to the receiver (retried with
 * backoff), record COMMITTED with the new blocks, tell the quorums FINALIZE or ABORT.
 */
export class SenderDelivery extends SenderPart {
  constructor (ctx: SenderContext, private readonly prepare: PrepareRound) {
    super(ctx)
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
      const held = this.ctx.receiverHeld.get(txid)?.held
      this.ctx.receiverHeld.delete(txid)
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
        this.ctx.sentBundles.delete(txid)
        const failed = await written
        if (failed !== undefined) this.log.warn(`transfer ${txid}: the new block could not be written here yet (${errorMessage(failed)}); recovery writes it with the delivery`)
        return { txid, blockId, quorums: rec.signers, delivered: false }
      }
      this.fault('delivered')
      this.log.debug(`transfer ${txid.slice(0, 12)}: delivered ${Date.now() - rec.updatedAt} ms after the decision`)
      const failed = await written
      if (failed !== undefined) throw failed
      const recs = await (early ?? this.ledger.tokensById(rec.tokens, { content: false }))
      // the decision's certificate is kept with the chain (the change this node keeps, a token
      // coming back): its later deliveries carry it for this block
      const certs = await certificatesToKeep(this.ledger, await this.ctx.certificateOf(rec) ?? [])
      await this.ledger.commit((w) => {
        if (early === undefined) blocks(w, recs)
        committed(w, recs)
        w.delRecord(OUTGOING_CERT, txid)
        for (const [holder, seals] of certs) w.putRecord(ACCEPTED_CERTS, holder, seals)
      })
      this.ctx.sentBundles.delete(txid)
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
    const pledges = await this.ctx.evidenceOf(rec)
    let lastErr: unknown
    let grown = false
    for (let i = 0; i < attempts; i++) {
      try {
        // read on each try: the certificate may have grown since
        const seals = await this.ctx.certificateOf(rec)
        let sent = bundle
        for (let round = 0; ; round++) {
          let reply
          const earlier = await carriedFor(this.ledger, sent)
          try {
            reply = await this.transport.deliver({ txid: rec.txid, receiver: rec.receiver, contract: contractBytes(rec), block, bundle: sent, memo: rec.memo, epoch: rec.epoch, ...(pledges !== undefined ? { pledges } : {}), ...(seals !== undefined ? { seals } : {}), ...(earlier.length > 0 ? { earlier } : {}) })
          } catch (e) {
            // a receiver from before the missing-ancestors answer refuses a bundle without them: once more with every ancestor
            const whole = round === 0 && NO_CHAIN.test(errorMessage(e)) ? await this.prepare.whole(rec.tokens, sent) : undefined
            if (whole === undefined) throw e
            sent = whole
            continue
          }
          if (reply?.accepted !== false) return true
          // the receiver lacks older ancestors of the parts: deliver again with their chains
          const more = round < ANCESTRY_ROUNDS ? await this.prepare.lacking(reply.missing, sent, round, tokens) : undefined
          if (more === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `the receiver lacks the chains of ${String(reply.missing?.length)} ancestors this node cannot supply`)
          sent = more
        }
      } catch (e) {
        lastErr = e
        // a receiver that counts a seat more than this node found the certificate short: the other
        // arbiters' seals are gathered (once) and it is shown the grown one at once
        if (!grown && isRbtError(e, ErrorCode.CLAIM_UNREACHABLE) && errorMessage(e).includes(CERTIFICATE_SHORT)) {
          grown = true
          if (await this.ctx.growCertificate(rec)) { i--; continue }
        }
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

  /** Delivery retries of decided transfers whose receiver did not answer: txid → failures, next try. */
  private readonly redelivery = new Map<string, { failures: number, nextAt: number }>()

  /**
   * One more delivery of a COMMITTING transfer, with backoff: after n failed tries the next waits
   * 2^(n-1) s, at most a minute (the periodic recovery calls this on every pass).
   */
  async redeliver (txid: string): Promise<void> {
    const now = this.clock.now()
    const due = this.redelivery.get(txid)
    if (due !== undefined && due.nextAt > now) return
    const r = await this.complete(txid, false)
    if (r.delivered) { this.redelivery.delete(txid); return }
    const failures = (due?.failures ?? 0) + 1
    this.redelivery.set(txid, { failures, nextAt: now + Math.min(MAX_REDELIVERY_DELAY_MS, 1000 * 2 ** (failures - 1)) })
  }
}
