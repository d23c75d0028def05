import { QuorumService } from '../../consensus/quorum.js'
import { DoubleSpends } from '../../consensus/double-spends.js'
import { TransferReceiver } from '../../consensus/receiver.js'
import { TransferSender, type FtSpend, type TransferResult, type WaitingOperation } from '../../consensus/sender.js'
import type { NftOp } from '../../consensus/nft.js'
import type { ScCode, ScRunner } from '../../consensus/smart-contract.js'
import { VERIFIED_MEMO, type ConsensusSigner, type Ledger, type SpentMarkers, type StateClaims } from '../../consensus/ports.js'
import { BoundedSet } from '../../util/lru.js'
import type { ConsensusTransport } from '../../consensus/messages.js'
import type { ConsensusObserver } from '../../consensus/observe.js'
import { ownerSigner, quorumSigner } from '../../consensus/wallet-adapters.js'
import { decodeContract } from '../../tokenchain/contract.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import { DidSigner, QuorumSigner, type SignPrompt } from '../../wallet/did-crypto.js'
import { DidType } from '../../wallet/did-document.js'
import { ErrorCode, RbtError, deliveryPending, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import type { IdentityService } from '../identity/identity-service.js'
import type { QuorumRegistry } from './quorum-registry.js'

export interface ConsensusServiceOptions {
  ledger: Ledger
  verifier: SignatureVerifier
  identity: IdentityService
  registry: QuorumRegistry
  transport: ConsensusTransport
  markers?: SpentMarkers
  /** claims of spent states at their arbiters, and the arbiter's periodic settling of stale claims */
  claims?: StateClaims & { sweep?: () => Promise<void> }
  selfPeer: () => string
  log: Logger
  /** receiver: accept only signers of this node's own quorum list (default: by pledge evidence) */
  trustOwnQuorumList?: boolean
  /** periodic quorum duty (outcome queries, unpledging) and sender recovery, ms; 0 = off */
  sweepIntervalMs?: number
  pledgePeriodMs?: number
  staleVoteMs?: number
  fault?: (step: string) => void
  onCommitted?: (txid: string, spent: string[]) => void
  onNftCommitted?: (nftId: string, blockId: string, owner: string, txid: string) => void
  /** a delivery's tokens were stored here (the receiver's side) */
  onReceived?: (txid: string, receiver: string, tokens: Array<{ tokenId: string, tokenType: number }>) => void
  /** smart contracts: the code sent to quorums, and the engine a quorum runs them with */
  scCode?: (scId: string) => Promise<ScCode>
  contracts?: ScRunner
  /** the faucet's duty: mint `count` test RBT to its own DID and transfer them to `did` */
  faucet?: (did: string, count: number) => Promise<{ txid: string, count: number }>
  /** how transactions end per role and how long consensus rounds take (the node's metrics) */
  observe?: ConsensusObserver
  /** an operation of the DID waiting for its caller's answer (the two-step engine's) */
  waitingFor?: (did: string) => WaitingOperation | undefined
  /** a quorum refused a transfer of this node as a double spend: its token states, and the reason */
  onDoubleSpent?: (states: Array<{ tokenId: string, blockId: string }>, reason: string) => void
}

/** Sender, quorum and receiver roles of one node, and the quorum setups of its DIDs. */
export class ConsensusService {
  readonly sender: TransferSender
  readonly quorum: QuorumService
  readonly receiver: TransferReceiver
  /** the double spends this node's roles saw, with their proofs */
  readonly doubleSpends: DoubleSpends
  private readonly quorumSigners = new Map<string, { quorum: ConsensusSigner, owner: ConsensusSigner }>()
  private timer?: NodeJS.Timeout
  private sweeping = false
  /** The saved quorum setups' keys, opened by start(); settled once every one is open (or failed). */
  opened: Promise<void> = Promise.resolve()
  /** The first recovery pass, started by start(); settled once it has finished. */
  recovered: Promise<void> = Promise.resolve()

  constructor (private readonly opts: ConsensusServiceOptions) {
    const { ledger, verifier, transport, log } = opts
    // envelopes verified by any role of this node: a block one role checked, the others need not
    const verified = new BoundedSet(VERIFIED_MEMO)
    this.doubleSpends = new DoubleSpends({ ledger, log: log.child('double-spends'), clock: { now: () => Date.now() }, observe: opts.observe })
    this.sender = new TransferSender({
      ledger, transport, verifier, verified, selfPeer: opts.selfPeer(), logger: log.child('sender'), fault: opts.fault,
      onCommitted: opts.onCommitted,
      onNftCommitted: opts.onNftCommitted,
      scCode: opts.scCode,
      observe: opts.observe,
      waitingFor: opts.waitingFor,
      onDoubleSpent: opts.onDoubleSpent,
      isLocalDid: async (did) => await opts.identity.isLocal(did),
      claims: opts.claims
    })
    this.quorum = new QuorumService({
      ledger, verifier, verified, markers: opts.markers, claims: opts.claims, transport, logger: log.child('quorum'), fault: opts.fault,
      signerFor: (did) => this.quorumSigners.get(did)?.quorum,
      ownerSignerFor: (did) => this.quorumSigners.get(did)?.owner,
      pledgePeriodMs: opts.pledgePeriodMs,
      staleVoteMs: opts.staleVoteMs,
      contracts: opts.contracts,
      observe: opts.observe,
      doubleSpends: this.doubleSpends
    })
    this.receiver = new TransferReceiver({
      ledger, verifier, verified, fault: opts.fault,
      isLocalDid: async (did) => await opts.identity.isLocal(did),
      ownQuorums: async () => opts.registry.list(),
      trustOwnQuorumList: () => opts.trustOwnQuorumList === true,
      observe: opts.observe,
      onReceived: opts.onReceived,
      claims: opts.claims,
      doubleSpends: this.doubleSpends,
      logger: log.child('receiver')
    })
  }

  /** Reopens persisted quorum setups, finishes interrupted transfers and starts the periodic duty. */
  async start (): Promise<void> {
    // A saved setup was checked when it was made: its keys are opened (scrypt, about 70 ms each)
    // beside the rest of the start instead of before the node serves; a signature asked for
    // meanwhile waits for them.
    const setups = await this.opts.registry.loadSetups().catch((e) => { this.opts.log.error(`quorum setups unreadable: ${errorMessage(e)}`); return [] })
    this.opened = Promise.all(setups.map(async (s) => {
      const opening = this.openSigners(s.did, s.password, s.privPassword)
      const signers = { quorum: deferredSigner(s.did, opening.then((o) => o.quorum)), owner: deferredSigner(s.did, opening.then((o) => o.owner)) }
      this.quorumSigners.set(s.did, signers)
      try {
        const open = await opening
        if (this.quorumSigners.get(s.did) === signers) this.quorumSigners.set(s.did, open)
        this.opts.log.info(`quorum ${s.did} set up again from its saved setup`)
      } catch (e) {
        if (this.quorumSigners.get(s.did) === signers) this.quorumSigners.delete(s.did)
        this.opts.log.error(`quorum ${s.did} could not be set up again: ${errorMessage(e)}`)
      }
    })).then(() => {})
    // Transfers left open by the last run are finished in the background, not before the node
    // serves: their rounds wait on quorums and receivers (some may be down too), and a node killed
    // under traffic would otherwise answer only once every one of them had its answer. Their tokens
    // stay locked meanwhile; the sweep does not run beside this first pass.
    this.sweeping = true
    this.recovered = this.sender.recover()
      .catch((e) => { this.opts.log.warn(`transfer recovery: ${errorMessage(e)}`) })
      .finally(() => { this.sweeping = false })
    const every = this.opts.sweepIntervalMs ?? 5000
    if (every > 0) {
      this.timer = setInterval(() => { void this.sweep() }, every)
      this.timer.unref()
    }
  }

  async sweep (): Promise<void> {
    if (this.sweeping) return
    this.sweeping = true
    try {
      await this.sender.recover({ staleMs: 60_000 })
      await this.quorum.sweep()
      await this.opts.claims?.sweep?.()
    } catch (e) {
      this.opts.log.debug(`sweep: ${errorMessage(e)}`)
    } finally { this.sweeping = false }
  }

  stop (): void { if (this.timer !== undefined) clearInterval(this.timer) }

  private async openQuorum (did: string, password: string, privPassword: string): Promise<void> {
    this.quorumSigners.set(did, await this.openSigners(did, password, privPassword))
  }

  private async openSigners (did: string, password: string, privPassword: string): Promise<{ quorum: ConsensusSigner, owner: ConsensusSigner }> {
    const local = await this.opts.identity.store.local(did)
    if (local === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `DID ${did} is not on this node`)
    const q = await QuorumSigner.open(local, { quorumPassword: password, privatePassword: privPassword })
    let owner: ConsensusSigner | undefined
    if (local.pvtKey !== undefined && (local.doc.type === DidType.BASIC || local.doc.type === DidType.LITE)) {
      const ownerLocal = { ...local }
      const s = new DidSigner(ownerLocal, async () => ({ password: privPassword }))
      // checks the private password now rather than at the first pledge
      await s.pvtSign('0'.repeat(64)).catch((e) => { throw new RbtError(ErrorCode.WRONG_PASSWORD, `priv_password does not open the private key of ${did}: ${errorMessage(e)}`) })
      owner = ownerSigner(s)
      // the private password is known (also at start, for saved setups): a plaintext mnemonic is sealed with it
      await this.opts.identity.sealMnemonic(did, privPassword, true).catch((e) => { this.opts.log.warn(`sealing the mnemonic of ${did}: ${errorMessage(e)}`) })
    }
    return { quorum: quorumSigner(q), owner: owner ?? quorumSigner(q) }
  }

  /** POST /svc/v1/quorums/setup: this node's DID becomes a quorum, also after restarts. */
  async setupQuorum (did: string, password: string, privPassword: string): Promise<void> {
    if (!await this.opts.identity.isLocal(did)) throw new RbtError(ErrorCode.NOT_FOUND, `Failed to setup quorum, DID ${did} is not on this node`)
    try {
      await this.openQuorum(did, password, privPassword)
    } catch (e) {
      if (e instanceof RbtError && (e.code === ErrorCode.WRONG_PASSWORD || e.code === ErrorCode.INVALID_INPUT)) {
        throw new RbtError(e.code === ErrorCode.INVALID_INPUT ? ErrorCode.INVALID_INPUT : ErrorCode.WRONG_PASSWORD, `Failed to setup quorum, ${e.message}`)
      }
      throw e
    }
    await this.opts.registry.saveSetup({ did, password, privPassword })
  }

  /** Fetches (and caches) the public document of a contract's sender from the peer that sent it. */
  async learnInitiator (contract: Uint8Array, peerId: string): Promise<void> {
    try {
      const sender = decodeContract(contract).content.transInfo.sender
      if (sender !== undefined) await this.opts.identity.documentOf(sender, peerId)
    } catch (e) {
      this.opts.log.debug(`document of the sender via ${peerId}: ${errorMessage(e)}`)
    }
  }

  debug (msg: string): void { this.opts.log.debug(msg) }

  isQuorumSetUp (did: string): boolean { return this.quorumSigners.has(did) }
  quorumSignerOf (did: string): ConsensusSigner | undefined { return this.quorumSigners.get(did)?.quorum }
  /** The DID this node signs its claim grants with as an arbiter: its first quorum set up (none when it runs no quorum). */
  async hosts (did: string): Promise<boolean> { return await this.opts.identity.isLocal(did) }

  /**
   * An RBT/FT transfer. It succeeds only when the receiver holds the tokens: a transfer the quorums
   * decided whose receiver has not taken it yet throws DELIVERY_PENDING (naming the transaction),
   * for every caller alike (the API, the faucet).
   */
  async transfer (req: { initiator: string, owner: string, amountMilli: number, memo: string, fts?: FtSpend[] }, prompt: SignPrompt, progress?: (m: string) => void): Promise<TransferResult> {
    const signer = ownerSigner(await this.opts.identity.signerFor(req.initiator, prompt))
    const r = await this.sender.transfer({ sender: req.initiator, receiver: req.owner, amountMilli: req.amountMilli, memo: req.memo, quorums: this.opts.registry.list(), ...(req.fts !== undefined ? { fts: req.fts } : {}) }, signer, progress)
    if (!r.delivered) throw deliveryPending(r.txid)
    await this.resetLineage(req.initiator, signer, r.txid, progress)
    return r
  }

  /**
   * After a payment from a part: when the change it left rests on LINEAGE_RESET_LEVELS genesis
   * burns or more, it is sent to its owner through consensus (a self transfer), so the next payment
   * from it claims a short line (docs/protocol.md, "Burnt ancestors"). Only with a key the node
   * holds (an external signer is not asked again); a failure costs the payment nothing, and the
   * next payment from that change tries again.
   */
  private async resetLineage (did: string, signer: ConsensusSigner, txid: string, progress?: (m: string) => void): Promise<void> {
    let due: { tokens: string[], amountMilli: number }
    try {
      due = await this.sender.deepChange(txid)
    } catch (e) {
      this.opts.log.debug(`lineage of the change of ${txid}: ${errorMessage(e)}`)
      return
    }
    if (due.tokens.length === 0) return
    if (await signer.unlock?.() !== true) {
      this.opts.log.info(`the change of ${txid} (${due.tokens.join(', ')}) rests on a long line of burns; a self transfer of it (initiate-self-transfer) keeps later payments cheap`)
      return
    }
    try {
      progress?.(`resetting the line of burns of the change ${due.tokens.join(', ')} with a self transfer`)
      const reset = await this.sender.transfer({ sender: did, receiver: did, amountMilli: due.amountMilli, memo: 'lineage reset', quorums: this.opts.registry.list(), selfTokens: due.tokens }, signer, progress)
      this.opts.log.info(`the change of ${txid} was sent to ${did} itself (${reset.txid}): its line of burns is reset`)
    } catch (e) {
      this.opts.log.warn(`the self transfer resetting the change of ${txid} failed: ${errorMessage(e)}; the next payment from it tries again`)
    }
  }

  /** A self transfer (initiate-self-transfer): `tokens` of `did`, worth `amountMilli`, spent to `did` itself through consensus; delivered as `transfer`. */
  async selfTransfer (did: string, tokens: string[], amountMilli: number, prompt: SignPrompt, progress?: (m: string) => void): Promise<TransferResult> {
    const signer = ownerSigner(await this.opts.identity.signerFor(did, prompt))
    const r = await this.sender.transfer({ sender: did, receiver: did, amountMilli, memo: 'self transfer', quorums: this.opts.registry.list(), selfTokens: tokens }, signer, progress)
    if (!r.delivered) throw deliveryPending(r.txid)
    return r
  }

  /** An NFT deploy, execution or transfer (POST /svc/v1/tx with tokens.nft). */
  async nft (req: { initiator: string, receiver: string, op: NftOp, memo: string }, prompt: SignPrompt): Promise<TransferResult> {
    const signer = ownerSigner(await this.opts.identity.signerFor(req.initiator, prompt))
    return await this.sender.nft({ ...req, quorums: this.opts.registry.list() }, signer)
  }

  async serveFaucet (did: string, count: number): Promise<{ txid: string, count: number }> {
    if (this.opts.faucet === undefined) throw new RbtError(ErrorCode.FORBIDDEN, 'this node is not the test network faucet')
    return await this.opts.faucet(did, count)
  }
}

/** A signer whose keys are still being opened: every call waits for them (and fails as they did). */
function deferredSigner (did: string, signer: Promise<ConsensusSigner>): ConsensusSigner {
  // a failure is reported where the opening is awaited, not as an unhandled rejection
  signer.catch(() => {})
  return {
    did,
    signHash: async (hashHex) => await (await signer).signHash(hashHex),
    pvtSign: async (message) => await (await signer).pvtSign(message)
  }
}
