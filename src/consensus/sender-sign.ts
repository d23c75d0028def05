import { createBlock, decodeBlockEnvelope, encodeBlockEnvelope, parseBlockId, setSignature, type BlockContent, type Block } from '../tokenchain/block.js'
import { verifyEnvelope } from '../tokenchain/validate.js'
import { decodeContract } from '../tokenchain/contract.js'
import { TransactionType } from '../tokenchain/types.js'
import { ErrorCode, RbtError, deliveryPending, errorMessage, isRbtError, signingPending } from '../util/errors.js'
import type { SignReply } from './messages.js'
import { isPeerSeal } from './quorum-claims.js'
import { opensNonce, type PeerSeal } from './claim-proofs.js'
import { MIN_QUORUM_SIGNATURES } from './quorum-selection.js'
import { b64, readOutgoing, type OutgoingRecord } from './records.js'
import { nftBlock } from './nft.js'
import { notify } from './observe.js'
import { settled } from '../util/settled.js'
import { SenderPart, contractBytes, evidenceParts, type SenderContext, type TransferResult, type Vote } from './sender-context.js'
import type { Regrowth } from './sender-claims.js'
import type { PrepareRound } from './sender-prepare.js'
import type { SenderDelivery } from './sender-delivery.js'

/** How long the sender's check of a signed block may hold its decision back. */
const SIGNED_BLOCK_CHECK_MS = 3000

/**
 * Times a sign round claims again for signers that found the grants of their claim short, before
 * replacing them, waiting 400 ms × attempt before each (some 8 s in all): a signer's view of the
 * arbiters differs from the sender's by the peers each saw last (a node just restarted still
 * counts, for the forget time, the peers that went down with it), and once that time has passed
 * the two agree again. A signer that still finds them short is replaced, or signing stays pending.
 */
const SIGN_CLAIM_RETRIES = 6

/**
 * The sender's sign round: the block built from the chosen votes, signed by its five quorums (a
 * signer that fails replaced by a spare vote or a recruit), checked, then the decision (COMMITTING)
 * and the delivery.
 */
export class SignRound extends SenderPart {
  constructor (ctx: SenderContext, private readonly prepare: PrepareRound, private readonly delivery: SenderDelivery) {
    super(ctx)
  }

  /** The sign round of a SIGNING transfer (also resumed by recover()), then the decision and delivery. */
  async run (rec: OutgoingRecord, progress: (msg: string) => void, t0 = Date.now()): Promise<TransferResult> {
    const contract = contractBytes(rec)
    const allowed = rec.receiverQuorums
    const pool = ([...(rec.votes ?? [])] as Vote[]).filter((v) => allowed === undefined || allowed.includes(v.quorumDid))
    let chosen = pool.slice(0, MIN_QUORUM_SIGNATURES)
    let spare = pool.slice(MIN_QUORUM_SIGNATURES)
    const refused: string[] = []
    const failedSigners = new Set<string>()
    let claimedAgain = 0
    for (;;) {
      const tRound = Date.now()
      // every signer signs only with the grants of its own claim: those this process has not
      // gathered yet (a signer replaced, a transfer resumed after a restart) are claimed now, the
      // same claims (each quorum's nonce is kept with its vote) granted again
      if (this.ctx.claims !== undefined && !this.ctx.claims.covered(rec.txid, chosen)) {
        const r = await this.ctx.claims.claim(rec.txid, contract, chosen)
        if (!r.granted) throw signingPending(rec.txid, `consensus reached but the signers' claim of the states was not granted (${r.reason}); the tokens stay locked and signing is retried automatically`)
      }
      let block = await this.buildBlock(rec, contract, chosen)
      const unsigned = encodeBlockEnvelope(block)
      const tBuilt = Date.now()
      const sigs = await Promise.all(chosen.map(async (v) => {
        try {
          const grants = this.ctx.claims?.grantsFor(rec.txid, v.quorumDid)
          return await this.transport.sign({ txid: rec.txid, quorumDid: v.quorumDid, block: unsigned, ...(grants !== undefined ? { grants } : {}) })
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
        // each signer's consent to seal its claim: the secret behind its claim's nonce
        for (const v of chosen) {
          if (v.claim === undefined || this.ctx.claims === undefined) continue
          const reply = (sigs as SignReply[]).find((x) => x.quorumDid === v.quorumDid)
          if (!opensNonce(reply?.seal, v.claim.nonce)) failed.push(new RbtError(ErrorCode.CONSENSUS_FAILED, `${v.quorumDid} signed without its consent to seal its claim (a quorum from before seals)`, { details: { quorumDid: v.quorumDid } }))
        }
      }
      // a quorum whose signature or credit does not verify is a signer that failed, replaced below:
      // checked while the claims are sealed (a seal binds the states to this transaction, which a
      // replaced signer's block still spends; a replacement's claim is granted by a sealed record)
      const forged = signed !== undefined ? settled(this.forgedSigners(rec.txid, signed, chosen)) : undefined
      let forgedCounted = false
      const forgedFailures = async (): Promise<void> => {
        const found = await forged?.() ?? []
        if (forgedCounted) return
        forgedCounted = true
        for (const d of found) failed.push(new RbtError(ErrorCode.CONSENSUS_FAILED, `${d} answered a signature that does not verify`, { details: { quorumDid: d } }))
      }
      // the certificate the receiver is shown, and (kept with the decision when it came before the
      // other arbiters' seals) what grows it after a restart
      let certificate: PeerSeal[] | undefined
      let regrowth: Regrowth | undefined
      if (signed !== undefined && failed.length === 0) {
        // the seal (docs/protocol.md, "Seals"): the signers' claims made permanent at the arbiters
        // before anything is decided; the sealed grants are the certificate receivers check. A
        // state some other transaction holds is never sealed here, so a block whose claims were
        // released after their grants (an owner running all five signers) is never delivered.
        if (this.ctx.claims !== undefined && chosen.some((v) => v.claim !== undefined)) {
          const consents = chosen.flatMap((v) => {
            const reply = (sigs as SignReply[]).find((x) => x.quorumDid === v.quorumDid)
            return v.claim !== undefined && reply?.seal !== undefined ? [{ quorum: v.quorumDid, nonce: v.claim.nonce, secret: reply.seal }] : []
          })
          // the seals the signers' nodes made of their own tables as they signed
          const presealed = (sigs as SignReply[]).flatMap((x) => chosen.some((v) => v.quorumDid === x.quorumDid) && Array.isArray(x.sealed) ? x.sealed.filter(isPeerSeal) : [])
          let sealed = await this.ctx.claims.seal(rec.txid, contract, chosen, consents, presealed)
          if (!sealed.granted) {
            // an arbiter seals only a record that names the five signers' claims: a signer that
            // replaced another was claimed for later, maybe granted by other arbiters than the first
            // claims were. The five are claimed again together (the same claims: nothing new is
            // held, the arbiters that lack a claimant add it) and sealed again.
            this.ctx.claims.drop(rec.txid, chosen.map((v) => v.quorumDid))
            const again = await this.ctx.claims.claim(rec.txid, contract, chosen)
            if (again.granted) sealed = await this.ctx.claims.seal(rec.txid, contract, chosen, consents, presealed)
          }
          if (!sealed.granted) {
            await forgedFailures()
            if (failed.length === 0) throw signingPending(rec.txid, `the quorums signed, but their claims of the states could not be sealed (${sealed.reason}); the tokens stay locked and sealing is retried automatically`)
          }
          certificate = this.ctx.claims.certificate(rec.txid)
          regrowth = this.ctx.claims.regrowth(rec.txid, chosen, consents)
        }
      }
      await forgedFailures()
      if (signed !== undefined && failed.length === 0) {
        this.log.debug(`transfer ${rec.txid.slice(0, 12)}: sign round ${Date.now() - t0} ms`)
        notify(this.opts.observe, { kind: 'round', round: 'sign', ms: Date.now() - t0 })
        // The decision point: from here on the transfer completes, whatever happens. A failure of
        // this node's own writes now (a full disk) is not a refusal: SIGNING is durable, so recovery
        // signs again and commits; after COMMITTING, recovery finishes the delivery and the record.
        try {
          // the certificate the receiver is shown is kept with the decision
          const signerDids = chosen.map((v) => v.quorumDid)
          await this.ctx.decide(rec, { block: b64(signed), signers: signerDids }, evidenceParts(sigs as SignReply[], chosen), certificate, regrowth)
        } catch (e) {
          throw signingPending(rec.txid, `the quorums signed, but this node could not record the decision (${errorMessage(e)}); it is retried automatically and the transfer ends committed`)
        }
        this.fault('committing')
        progress('quorums signed the block, delivering to the receiver')
        try {
          return await this.delivery.complete(rec.txid, true, { rec, block: signed })
        } catch (e) {
          if (isRbtError(e, ErrorCode.DELIVERY_PENDING)) throw e
          throw deliveryPending(rec.txid, errorMessage(e))
        }
      }
      // A signer that found the grants of its claim short counts the arbiters from its own view,
      // which may know an arbiter this node's walk did not reach: its claim is made again (the
      // same claim, granted again, by the arbiters reachable now) and it is asked again, a few
      // times (SIGN_CLAIM_RETRIES), before it is replaced.
      const short = failed.filter((f) => /CLAIM_UNREACHABLE/.test(f.message)).map((f) => (f.details as { quorumDid: string }).quorumDid)
      if (short.length > 0 && short.length === failed.length && this.ctx.claims !== undefined && claimedAgain < SIGN_CLAIM_RETRIES) {
        claimedAgain++
        this.ctx.claims.drop(rec.txid, short)
        await new Promise((resolve) => setTimeout(resolve, 400 * claimedAgain))
        continue
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
    const { prepare, prefer } = await this.prepare.preparer(rec)
    const ordered = prefer(candidates)
    const got: Vote[] = []
    let next = 0
    while (got.length < need && next < ordered.length) {
      const batch = ordered.slice(next, next + need - got.length)
      next += batch.length
      for (const r of await Promise.all(batch.map(async (d) => await prepare(d)))) {
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
}
