import { decodeContract } from '../tokenchain/contract.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { Lru } from '../util/lru.js'
import type { VerifiedBlockCache } from '../tokenchain/validate.js'
import type { FtSpend } from './transfer-lock.js'
import { TxChains } from './tx-chains.js'
import type { ChainBundle, ConsensusTransport, PrepareReply, ReceiverPolicy, SignReply, SpentState } from './messages.js'
import type { Clock, Ledger, StateClaims, Verifier } from './ports.js'
import { SenderClaims, asRegrowth, type Regrowth } from './sender-claims.js'
import type { PeerSeal } from './claim-proofs.js'

/** Where a decided transfer's certificate waits for its delivery. */
export const OUTGOING_CERT = 'cs-outgoing-cert'
import { putOutgoing, unb64, type OutgoingRecord } from './records.js'
import { EvidenceStore, type EvidencePart } from './evidence-store.js'
import type { ScCode } from './smart-contract.js'
import type { ConsensusObserver } from './observe.js'

/**
 * What the parts of a transfer's sender share (src/consensus/sender*.ts): its options and ports, and
 * the per-transaction memory of the transfers in flight. The facade (sender.ts) owns one; the
 * prepare round, the sign round and the delivery work on it.
 */

export interface TransferResult { txid: string, blockId: string, quorums: string[], delivered: boolean }

/** An operation parked on a prompt: its request id and the seconds until it expires. */
export interface WaitingOperation { id: string, secondsLeft: number, kind: 'password' | 'signature' }

export type Vote = Extract<PrepareReply, { vote: 'yes' }>

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
  /** claims of the states spent at their arbiters, made for the five signers before any signature (docs/protocol.md, "Claims") */
  claims?: StateClaims
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

/** The outcome of a receiver probe running next to the prepare round. */
export interface ReceiverCheck {
  /** resolves with the receiver's policy when it answered, rejects with the probe's error */
  done: Promise<ReceiverPolicy>
  /** throws the probe's error if it already failed */
  throwIfFailed: () => void
}

/** The options, ports and in-flight memory every part of the sender works with. */
export class SenderContext {
  readonly ledger: Ledger
  /** replaceable (tests wrap the transport of a running sender) */
  transport: ConsensusTransport
  readonly clock: Clock
  readonly log: Logger
  /**
   * The bundle each transfer in flight sent to its quorums (its tokens' chains, each part with its
   * parent's), used again for the new block and the delivery instead of reading and decoding every
   * chain twice more. Only the transfer's own tokens are in it, Locked by it meanwhile; a transfer
   * resumed after a restart reads them again.
   */
  readonly sentBundles = new Lru<TxChains>(8)
  /** Transfers this process is driving right now: recovery leaves them to their own run. */
  readonly inFlight = new Set<string>()
  readonly receiverChecks = new Map<string, ReceiverCheck>()
  /** per transaction in flight: the tokens the receiver's node holds at the state spent, once it answered */
  readonly receiverHeld = new Map<string, { held?: Set<string> }>()
  /** Double-spend refusals of transfers being aborted, told to the node once their tokens are Free. */
  readonly refusedSpends = new Map<string, { states: SpentState[], reason: string }>()
  /**
   * Those whose abort could not be written (the disk full, an I/O error): told once a later abort
   * (recovery's, the operator's release) frees the tokens. Kept past the run, at most 1,024.
   */
  readonly untoldSpends = new Lru<{ states: SpentState[], reason: string }>(1024)
  /** The signers' pledge evidence of decided transfers, kept by digest (see evidence-store.ts). */
  readonly evidence: EvidenceStore
  /**
   * The evidence of the transfers decided last, as the signers sent it: their delivery in this
   * process does not read it back from the store.
   */
  readonly decidedEvidence = new Lru<ChainBundle>(8)
  /** the sender's claims for its signers, and the grants gathered (absent without claims) */
  readonly claims: SenderClaims | undefined

  constructor (readonly opts: SenderOptions, clock: Clock, log: Logger) {
    this.ledger = opts.ledger
    this.transport = opts.transport
    this.clock = clock
    this.log = log
    this.evidence = new EvidenceStore(opts.ledger)
    this.claims = opts.claims !== undefined ? new SenderClaims(opts.claims, opts.ledger, log) : undefined
  }

  fault (step: string): void { this.opts.fault?.(step) }

  /** A transfer's chains, read as quorums and the receiver need them, once per transfer (see sentBundles). */
  txChains (rec: OutgoingRecord): TxChains {
    let c = this.sentBundles.get(rec.txid)
    if (c === undefined) {
      c = new TxChains(this.ledger, rec.tokens)
      this.sentBundles.set(rec.txid, c)
    }
    return c
  }

  /** Writes the record again with `patch` (one commit). */
  async update (rec: OutgoingRecord, patch: Partial<OutgoingRecord>): Promise<void> {
    Object.assign(rec, patch, { updatedAt: this.clock.now() })
    await this.ledger.commit((w) => { putOutgoing(w, rec) })
  }

  /**
   * The decision: the record COMMITTING with the signed block (kept beside it, written this once)
   * and the signers' pledge evidence (its blocks not stored yet written in the same commit).
   */
  async decide (rec: OutgoingRecord, patch: Partial<OutgoingRecord> & { block: string }, parts: readonly EvidencePart[], certificate?: readonly PeerSeal[], regrowth?: Regrowth): Promise<void> {
    const next: OutgoingRecord = { ...rec, ...patch, state: 'COMMITTING', blockApart: true, updatedAt: this.clock.now() }
    delete next.pledges
    delete next.evidence
    const evidence = mergeEvidence(parts.map((p) => p.bundle))
    await this.evidence.commit(parts, (w, ref) => {
      if (ref !== undefined) next.evidence = ref
      putOutgoing(w, next, { withBlock: true })
      // the certificate the delivery shows the receiver, kept until it is delivered (a sender
      // resumed after a restart holds no grant and, past the decision, no votes to claim again with;
      // a decision on the signers' own seals keeps their claims and consents too, to grow it with)
      if (certificate !== undefined) w.putRecord(OUTGOING_CERT, rec.txid, { seals: certificate, ...(regrowth !== undefined ? { regrow: regrowth } : {}) })
    })
    Object.assign(rec, next)
    if (evidence !== undefined) this.decidedEvidence.set(rec.txid, evidence)
  }

  /**
   * The certificate a decided transfer's delivery carries: the sealed grants this process holds, or
   * those kept at the decision (a record from before seals, a list of grants, carries none).
   */
  async certificateOf (rec: OutgoingRecord): Promise<PeerSeal[] | undefined> {
    const held = this.claims?.certificate(rec.txid)
    if (held !== undefined) return held
    const kept = await this.ledger.record<{ seals?: PeerSeal[] } | unknown[]>(OUTGOING_CERT, rec.txid).catch(() => undefined)
    return kept !== undefined && !Array.isArray(kept) && Array.isArray(kept.seals) ? kept.seals : undefined
  }

  /**
   * Grows the certificate of a transfer decided on its signers' own seals with the other arbiters'
   * seals (docs/protocol.md, "A signer's own seal"), asked when a receiver that counts a seat more
   * than this node found it short: by the process that decided, or, restarted since, from the
   * signers' claims and consents kept with the decision. The grown certificate is kept in place of
   * the decision's (with nothing left to grow). Resolves to whether it grew; never rejects.
   */
  async growCertificate (rec: OutgoingRecord): Promise<boolean> {
    const claims = this.claims
    if (claims === undefined) return false
    try {
      let seals: PeerSeal[] | undefined
      if (await claims.grow(rec.txid) === true) seals = claims.certificate(rec.txid)
      else if (claims.certificate(rec.txid) === undefined) {
        // restarted since the decision: grown from what the decision kept, if anything
        const kept = await this.ledger.record<{ seals?: PeerSeal[], regrow?: unknown } | unknown[]>(OUTGOING_CERT, rec.txid)
        const keptSeals = kept !== undefined && !Array.isArray(kept) && Array.isArray(kept.seals) ? kept.seals : undefined
        const regrowth = keptSeals !== undefined ? asRegrowth((kept as { regrow?: unknown }).regrow) : undefined
        if (keptSeals === undefined || regrowth === undefined) return false
        const grown = await claims.regrow(rec.txid, contractBytes(rec), regrowth, keptSeals)
        if (grown.length > keptSeals.length) seals = grown
      }
      if (seals === undefined) return false
      const kept = await this.ledger.record<unknown>(OUTGOING_CERT, rec.txid)
      // delivered meanwhile: its record is gone and stays gone
      if (kept !== undefined) await this.ledger.commit((w) => { w.putRecord(OUTGOING_CERT, rec.txid, { seals: [...seals] }) })
      return true
    } catch (e) {
      this.log.debug(`transfer ${rec.txid.slice(0, 12)}: the certificate was not grown (${errorMessage(e)})`)
      return false
    }
  }

  /** The pledge evidence a decided transfer's delivery carries: kept from its decision, or read back. */
  async evidenceOf (rec: OutgoingRecord): Promise<ChainBundle | undefined> {
    const kept = this.decidedEvidence.get(rec.txid)
    if (kept !== undefined) return kept
    if (rec.evidence !== undefined) {
      const b = await this.evidence.bundle(rec.evidence)
      if (b === undefined) this.log.warn(`transfer ${rec.txid}: an entry of the signers' pledge evidence is not stored; delivered without it`)
      return b
    }
    // a record written before the evidence was kept by digest
    return rec.pledges !== undefined ? unpackEvidence(rec.pledges) : undefined
  }

  /** Forgets what the process kept for a transaction that is no longer driven here. */
  forget (txid: string): void {
    this.inFlight.delete(txid)
    this.decidedEvidence.delete(txid)
    this.receiverChecks.delete(txid)
    this.receiverHeld.delete(txid)
    this.refusedSpends.delete(txid)
  }
}

export function checkFtSpends (fts: readonly FtSpend[]): void {
  const seen = new Set<string>()
  for (const f of fts) {
    if (typeof f.name !== 'string' || f.name === '' || typeof f.creator !== 'string' || f.creator === '') throw new RbtError(ErrorCode.INVALID_INPUT, 'each FT needs a name and a creator DID')
    if (!Number.isSafeInteger(f.count) || f.count <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, `number of "${f.name}" FTs must be a whole number greater than 0`)
    const k = `${f.name}\u0000${f.creator}`
    if (seen.has(k)) throw new RbtError(ErrorCode.INVALID_INPUT, `FT "${f.name}" of ${f.creator} is named twice; give one total`)
    seen.add(k)
  }
}

export function receiverCheck (probe: Promise<ReceiverPolicy>): ReceiverCheck {
  let failure: { error: unknown } | undefined
  const done = probe.catch((e: unknown) => { failure = { error: e }; throw e })
  done.catch(() => {})
  return { done, throwIfFailed: () => { if (failure !== undefined) throw failure.error } }
}

/**
 * Each signer's pledge chains (well-formed ones only) with the tokens its vote pledged; signers
 * that sent none are left out.
 */
export function evidenceParts (replies: readonly SignReply[], votes: readonly Vote[]): EvidencePart[] {
  const out: EvidencePart[] = []
  for (const r of replies) {
    const ev = r.pledgeChains
    if (ev === undefined || ev === null || typeof ev !== 'object') continue
    const bundle: ChainBundle = { chains: {}, contents: {} }
    for (const [id, chain] of Object.entries(ev.chains ?? {})) {
      if (Array.isArray(chain) && chain.every((b) => b instanceof Uint8Array)) bundle.chains[id] = chain
    }
    for (const [id, c] of Object.entries(ev.contents ?? {})) if (typeof c === 'string') bundle.contents[id] = c
    if (Object.keys(bundle.chains).length === 0) continue
    out.push({ bundle, pledged: votes.find((v) => v.quorumDid === r.quorumDid)?.pledge.map((p) => p.token) ?? [] })
  }
  return out
}

/** The signers' pledge chains, merged into one bundle (undefined when none sent any). */
export function mergeEvidence (bundles: readonly ChainBundle[]): ChainBundle | undefined {
  if (bundles.length === 0) return undefined
  const out: ChainBundle = { chains: {}, contents: {} }
  for (const b of bundles) {
    Object.assign(out.chains, b.chains)
    Object.assign(out.contents, b.contents)
  }
  return out
}

export function unpackEvidence (p: NonNullable<OutgoingRecord['pledges']>): ChainBundle {
  return { chains: Object.fromEntries(Object.entries(p.chains).map(([id, chain]) => [id, chain.map(unb64)])), contents: { ...p.contents } }
}

/**
 * A transfer's contract as bytes, the same array for every use while the transfer runs, so it is
 * decoded once (decodeContract remembers by array): each use read it from base64 again and decoded
 * it whole, five or six times a transfer, some 5 ms each for a contract of 300 parts. Keyed by
 * txid, the hash of those very bytes.
 */
const contractArrays = new Lru<Uint8Array>(32)
export function contractBytes (rec: Pick<OutgoingRecord, 'txid' | 'contract'>): Uint8Array {
  let c = contractArrays.get(rec.txid)
  if (c === undefined) {
    c = unb64(rec.contract)
    if (c.byteLength > 0) contractArrays.set(rec.txid, c)
  }
  return c
}

/** The token states a transaction spends, as its contract names them. */
export function spentStates (rec: OutgoingRecord): SpentState[] {
  const spends = decodeContract(contractBytes(rec)).content.transInfo.transTokens ?? {}
  return Object.entries(spends).map(([tokenId, t]) => ({ tokenId, blockId: t.blockId ?? '' }))
}

/**
 * A part of the sender (prepare round, sign round, delivery): the context's ports and memory under
 * the names the facade uses.
 */
export abstract class SenderPart {
  protected readonly ledger: Ledger
  protected readonly clock: Clock
  protected readonly log: Logger
  protected readonly opts: SenderOptions

  constructor (protected readonly ctx: SenderContext) {
    this.ledger = ctx.ledger
    this.clock = ctx.clock
    this.log = ctx.log
    this.opts = ctx.opts
  }

  protected get transport (): ConsensusTransport { return this.ctx.transport }

  protected fault (step: string): void { this.ctx.fault(step) }
  protected txChains (rec: OutgoingRecord): TxChains { return this.ctx.txChains(rec) }
  protected async update (rec: OutgoingRecord, patch: Partial<OutgoingRecord>): Promise<void> { await this.ctx.update(rec, patch) }
}
