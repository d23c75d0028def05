import { decodeBlockEnvelope, formatBlockId, type DecodedBlock, type PledgeToken } from '../tokenchain/block.js'
import { decodeContract } from '../tokenchain/contract.js'
import { floatToMilliExact, pledgePerQuorum } from '../tokenchain/amount.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { verifyEnvelope, type VerifiedBlockCache } from '../tokenchain/validate.js'
import { BoundedSet } from '../util/lru.js'
import { bytesToHex, hexToBytes } from '../wallet/bytes.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { silentLogger } from '../util/logger.js'
import { AncestryMissing, buildBundle, ledgerAncestry, putValidatedState, statesAfter, storeLearned, validateBundleToken, validateBundleTokenOrCollect, type ValidatedState } from './bundle.js'
import type { ChainSource } from './chain-sync.js'
import { splitToken, type SplitResult } from './part-split.js'
import { KeyedMutex } from './keyed-mutex.js'
import { MIN_QUORUM_SIGNATURES } from './quorum-selection.js'
import type { AbortRequest, ChainBundle, ConsensusTransport, FinalizeRequest, PrepareReply, PrepareRequest, SignReply, SignRequest } from './messages.js'
import type { Clock, ConsensusSigner, Ledger, LedgerWriter, SpentMarker, SpentMarkers, StateClaims, TokenState, Verifier } from './ports.js'
import { MARKER_DHT_STATES, systemClock, VERIFIED_MEMO } from './ports.js'
import { openVotes, pledgeIndexKeys, putVote, stateKey, voteKey, type PledgeRecord, type VoteRecord } from './records.js'
import { ContractType, TransactionType } from '../tokenchain/types.js'
import type { DecodedContract } from '../tokenchain/contract.js'
import { deployIdMatches, isNftTokenType } from './nft.js'
import type { UnpledgeProof } from './unpledge-pow.js'
import { isScContractType, validateScOp, type ScRunner } from './smart-contract.js'
import { carriesFt } from './ft.js'
import { freeTokensById, isFreeOf } from './wallet-tokens.js'
import { notify, type ConsensusObserver, type ConsensusOutcome } from './observe.js'
import { PledgeReleases } from './pledge-release.js'
import { QuorumClaims } from './quorum-claims.js'
import type { ClaimResult } from './claims.js'
import { burntAncestors, type BurnClaim } from './burn-claims.js'

export interface QuorumOptions {
  ledger: Ledger
  verifier: Verifier
  /** envelopes whose signatures this node verified (shared by its roles); default: a memo of its own */
  verified?: VerifiedBlockCache
  /** signer of a quorum DID set up on this node, or undefined */
  signerFor: (quorumDid: string) => ConsensusSigner | undefined
  /** the quorum DID's own key (to split a token so it pledges exactly its share); optional */
  ownerSignerFor?: (quorumDid: string) => ConsensusSigner | undefined
  markers?: SpentMarkers
  /**
   * claims of the states spent at their arbiters, made by a transaction's designated checker
   * before any signature (docs/protocol.md, "Claims"); absent, the checker looks the spent
   * markers up instead (the protection of nodes from before claims)
   */
  claims?: StateClaims
  transport?: Pick<ConsensusTransport, 'outcome'>
  clock?: Clock
  logger?: Logger
  fault?: (step: string) => void
  /** how long a commit keeps the pledge when the tokens do not move on (reference: 7 days) */
  pledgePeriodMs?: number
  /** a vote with no word from its sender for this long asks the sender for the outcome */
  staleVoteMs?: number
  /** deadline of the DHT spent-marker lookup */
  markerTimeoutMs?: number
  /** how long SIGN waits for a DHT lookup still running (longer lookups are not waited for) */
  markerSignWaitMs?: number
  /** runs smart contracts again to check the proposed state (absent: smart-contract transactions are refused) */
  contracts?: ScRunner
  /** told how each transaction ended for this quorum (metrics) */
  observe?: ConsensusObserver
}


/**
 * A quorum's side. PREPARE validates the contract, the sender's signature and every token's whole
 * chain, checks the token states were never voted for another transaction (durable ledger) nor spent
 * on the network (DHT marker), locks the pledge and answers a signed vote. SIGN signs the final
 * block of a transaction it voted for; FINALIZE records the commit and keeps the pledge; ABORT
 * releases. Every handler is idempotent by transaction id.
 */
export class QuorumService {
  private readonly ledger: Ledger
  private readonly clock: Clock
  private readonly log: Logger
  private readonly locks = new KeyedMutex()
  private readonly cache: VerifiedBlockCache
  /** background DHT spent-marker lookups per vote: resolve to a refusal reason or undefined */
  private readonly networkChecks = new Map<string, Promise<string | undefined>>()
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
  /** releases of committed pledges, under the same locks as the votes */
  private readonly pledges: PledgeReleases
  /** the claims this node's quorums made as designated checkers */
  private readonly claims: QuorumClaims | undefined

  constructor (private readonly opts: QuorumOptions) {
    this.ledger = opts.ledger
    this.clock = opts.clock ?? systemClock
    this.log = opts.logger ?? silentLogger
    this.cache = opts.verified ?? new BoundedSet(VERIFIED_MEMO)
    this.pledges = new PledgeReleases({ ledger: this.ledger, clock: this.clock, log: this.log, locks: this.locks, verifier: opts.verifier, cache: this.cache })
    this.claims = opts.claims !== undefined ? new QuorumClaims(opts.claims, this.log, (did) => this.opts.signerFor(did)) : undefined
  }

  private fault (step: string): void { this.opts.fault?.(step) }

  async prepare (req: PrepareRequest): Promise<PrepareReply> {
    const started = Date.now()
    const voted = await this.vote(req)
    let reply = voted.reply
    if (voted.claim !== undefined) reply = await this.claimed(req, voted.reply, voted.claim.result, voted.claim.states)
    if (reply.vote === 'no') notify(this.opts.observe, { kind: 'transaction', role: 'quorum', outcome: 'refused', ms: Date.now() - started })
    return reply
  }

  /**
   * The designated checker's vote once its claim of every state answered: yes with `claimed`, or,
   * refused, the vote released (pledge freed, states no longer held, the partial claim given up)
   * and a no naming the cause. The claim ran outside the quorum's lock, next to the pledge.
   */
  private async claimed (req: PrepareRequest, reply: PrepareReply, claim: Promise<ClaimResult>, states: readonly string[]): Promise<PrepareReply> {
    const { quorumDid, txid } = req
    const r = await claim
    if (r.granted) return reply.vote === 'yes' ? { ...reply, claimed: true } : reply
    await this.locks.run(quorumDid, async () => {
      const vote = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
      if (vote !== undefined && vote.state === 'RESERVED') await this.release(vote, r.reason)
      else if (vote === undefined || vote.state === 'RELEASED') this.claims?.release(quorumDid, txid, states)
    })
    if (reply.vote === 'no') return reply
    return { vote: 'no', quorumDid, reason: r.reason, conflict: r.code !== 'CLAIM_UNREACHABLE', code: r.code, ...(r.holder !== undefined ? { holder: r.holder } : {}) }
  }

  /**
   * What an arbiter holding a claim of `txid` by `quorumDid` is told: `pending` while the vote may
   * still sign (or a claim is under way), `committed` once it committed (or signed and keeps the
   * states held), `released` when it was released before signing or never recorded.
   */
  async claimOutcome (quorumDid: string, txid: string): Promise<'pending' | 'committed' | 'released'> {
    if (this.claims?.live(quorumDid, txid) === true) return 'pending'
    const vote = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
    if (vote === undefined) return 'released'
    if (vote.state === 'RESERVED' || vote.state === 'SIGNED') return 'pending'
    if (vote.state === 'COMMITTED') return 'committed'
    return (vote as VoteRecord & { statesHeld?: boolean }).statesHeld === true || vote.signature !== undefined ? 'committed' : 'released'
  }

  private ended (vote: VoteRecord, outcome: ConsensusOutcome): void {
    const key = voteKey(vote.quorumDid, vote.txid)
    this.claims?.forget(vote.quorumDid, vote.txid)
    for (const wake of this.voteEnds.get(key) ?? []) wake()
    this.voteEnds.delete(key)
    notify(this.opts.observe, { kind: 'transaction', role: 'quorum', outcome, ms: Math.max(0, this.clock.now() - vote.createdAt) })
  }

  /**
   * The vote (validation, double-spend checks, pledge, RESERVED record), and, when this quorum is
   * the designated checker of the five the sender named, the claim of the states, started once
   * they validated and running outside the lock.
   */
  private async vote (req: PrepareRequest): Promise<{ reply: PrepareReply, claim?: { result: Promise<ClaimResult>, states: string[] } }> {
    const { quorumDid, txid } = req
    let claim: { result: Promise<ClaimResult>, states: string[] } | undefined
    const asked = Array.isArray(req.asked) && req.asked.every((d) => typeof d === 'string') ? req.asked : undefined
    // a list of five names the expected signers: exactly their checker starts; a longer list
    // (every candidate) leaves the signers open, so one more of its first-ranked starts too
    const likely = asked === undefined ? undefined : networkCheckers(txid, asked, asked.length <= MIN_QUORUM_SIGNATURES ? NETWORK_CHECKERS : NETWORK_CHECKERS + 1)
    const reply = await this.voteLocked(req, likely, (states, burns) => {
      if (this.claims !== undefined && likely?.includes(quorumDid) === true) claim = { result: this.claims.claim(quorumDid, txid, states, burns ?? [], req.contract), states }
    })
    if (reply.vote === 'no' && claim !== undefined) {
      // a claim started for a vote that was then refused (its pledge, say) is given up at once
      this.claims?.release(quorumDid, txid, claim.states)
      claim = undefined
    }
    return claim !== undefined ? { reply, claim } : { reply }
  }

  private async voteLocked (req: PrepareRequest, likely: string[] | undefined, startClaim: (states: string[], burns?: BurnClaim[]) => void): Promise<PrepareReply> {
    const { quorumDid, txid } = req
    const no = (reason: string, conflict = false): PrepareReply => ({ vote: 'no', quorumDid, reason, conflict })
    const signer = this.opts.signerFor(quorumDid)
    if (signer === undefined) return no('Quorum is not setup')
    const tWait = Date.now()
    return await this.locks.run(quorumDid, async () => {
      const tEnter = Date.now()
      const existing = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
      if (existing !== undefined && existing.state !== 'RELEASED') {
        // asked again as the checker of another five (the sender replaced a signer): it claims now
        if (existing.state === 'RESERVED' && this.claims?.holds(quorumDid, txid) === false && likely?.includes(quorumDid) === true) {
          let burns: BurnClaim[] = []
          try {
            const spends = Object.entries(decodeContract(req.contract).content.transInfo.transTokens ?? {}).map(([id, t]) => [id, t.blockId ?? ''] as const)
            burns = await burntAncestors(spends, async (id) => req.bundle.chains[id] ?? await this.ledger.chain(id))
          } catch {}
          startClaim(existing.states, burns)
        }
        return { vote: 'yes', quorumDid, credit: existing.credit, pledge: existing.pledge, pledgeMilli: existing.pledgeMilli, ...(this.claims?.holds(quorumDid, txid) === true ? { claimed: true } : {}) }
      }
      // 1. contract and the sender's signature
      let contract
      try { contract = decodeContract(req.contract) } catch (e) { return no(`contract does not decode: ${errorMessage(e)}`) }
      if (contract.transactionId !== txid) return no('transaction id is not the hash of the contract')
      const ti = contract.content.transInfo
      const sender = ti.sender
      const receiver = ti.receiver
      if (sender === undefined || receiver === undefined) return no('contract names no sender or receiver')
      if (sender === quorumDid || receiver === quorumDid) return no('a quorum does not validate its own transaction')
      const keySig = contract.keySignatures[sender]
      if (keySig === undefined) return no('contract is not signed by the sender')
      const shareSig = contract.shareSignatures[sender] ?? ''
      const sigOk = shareSig !== ''
        ? await this.opts.verifier.verifyNlss?.(sender, contract.hash, shareSig, keySig, 'owner').catch(() => false) ?? false
        : await this.opts.verifier.verify(sender, contract.hash, keySig, 'owner').catch(() => false)
      if (!sigOk) return no('sender signature on the contract does not verify')
      const tokens = Object.entries(ti.transTokens ?? {})
      if (tokens.length === 0) return no('contract transfers no token')
      const tStart = Date.now()
      this.log.debug(`prepare ${txid.slice(0, 12)}: lock wait ${tEnter - tWait} ms, contract+sender signature ${tStart - tEnter} ms`)
      // the network marker lookup runs while the chains are validated
      const markers = this.opts.markers
      const markerHashes = markers === undefined ? [] : tokens.map(([tokenId, t]) => tokenStateHash(tokenId, t.blockId ?? ''))
      const markersFound: Promise<Array<SpentMarker | undefined>> = markers === undefined
        ? Promise.resolve([])
        : markers.knownMany(markerHashes).catch(() => [])
      // 2. every token: whole chain valid, owned by the sender at the stated block, value as stated
      let totalMilli = 0
      const states: string[] = []
      const isScTx = isScContractType(contract.content.type)
      const isNftTx = contract.content.type === ContractType.NFT_DEPLOY || contract.content.type === ContractType.NFT_EXECUTE || isScTx
      // ancestors validated before are not validated again; those validated now are stored with the vote
      const memory = ledgerAncestry(this.ledger)
      const missing: string[] = []
      try {
        if (!isNftTx) await memory.preload(tokens.map(([id]) => id))
        if (isNftTx) {
          const r = isScTx || req.nft?.sc !== undefined
            ? await validateScOp({ contract, op: req.nft, code: req.scCode, bundle: req.bundle, sender, receiver, runner: this.opts.contracts, tip: async (id) => await validateBundleToken(req.bundle, id, this.opts.verifier, this.cache) })
            : await this.validateNft(req, contract, sender, receiver)
          if (typeof r === 'string') return no(r)
          totalMilli = r.valueMilli
          states.push(r.state)
        } else for (const [tokenId, t] of tokens) {
          // every token is looked at, so one answer names all the ancestors this quorum lacks
          const tip = await validateBundleTokenOrCollect(req.bundle, tokenId, this.opts.verifier, missing, this.cache, memory)
          if (tip === undefined) continue
          // no chain sent, and the state known here is not the one spent: the sender is to send it
          if (req.bundle.chains[tokenId] === undefined && tip.blockId !== t.blockId) { missing.push(tokenId); continue }
          if (tip.burnt) return no(`token ${tokenId} is burnt`)
          if (tip.owner !== sender) return no(`token ${tokenId} belongs to ${tip.owner}, not the sender`)
          if (tip.blockId !== t.blockId) return no(`token ${tokenId}: the contract spends block ${String(t.blockId)}, the chain ends at ${tip.blockId}`)
          const v = floatToMilliExact(t.tokenValue)
          const chainValue = tip.value !== undefined ? floatToMilliExact(tip.value) : undefined
          if (v === undefined || v <= 0) return no(`token ${tokenId}: bad value ${t.tokenValue}`)
          if (chainValue !== undefined && chainValue !== v) return no(`token ${tokenId}: contract says ${t.tokenValue} RBT, the chain says ${String(tip.value)}`)
          totalMilli += v
          states.push(stateKey(tokenId, tip.blockId))
        }
      } catch (e) {
        if (e instanceof AncestryMissing) return { ...no(errorMessage(e)), missing: e.missing }
        return no(errorMessage(e))
      }
      if (missing.length > 0) return { ...no(`the chains of ${missing.length} tokens or part-token ancestors were not supplied and are not known here`), missing: [...new Set(missing)] }
      if (floatToMilliExact(contract.content.totalRbts) !== totalMilli) return no('contract total does not match its tokens')
      const tValid = Date.now()
      // 3. double spend: our own ledger first (durable), then the network marker
      const holders = await this.ledger.recordsByKey<{ txid: string }>('cs-states', states.map((s) => `${quorumDid}/${s}`))
      for (const [i, s] of states.entries()) {
        const held = holders[i]
        if (held !== undefined && held.txid !== txid) {
          const other = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, held.txid))
          if (other !== undefined && (other.state !== 'RELEASED' || (other as VoteRecord & { statesHeld?: boolean }).statesHeld === true)) return no(`token state ${s} is held by transaction ${held.txid}`, true)
        }
      }
      const found = await markersFound
      for (const [i, [tokenId]] of tokens.entries()) {
        const marker = found[i]
        if (marker !== undefined && marker.txid !== txid) return no(`Token state is exhausted, token ${tokenId} is being double spent (spent by ${marker.txid})`, true)
      }
      this.log.debug(`prepare ${txid.slice(0, 12)}: validation ${tValid - tStart} ms, known markers +${Date.now() - tValid} ms`)
      // The designated checker of the five named claims every state at its arbiters now, next to
      // the pledge; the vote's answer waits for the claim (prepare). Without claims, the network's
      // markers are asked in the background by the quorums likely to be designated checkers of the
      // final block (see networkCheckers); SIGN waits for the answer (bounded).
      if (this.claims !== undefined && likely?.includes(quorumDid) === true) {
        // with its states, the burnt ancestors of the parts it spends (a burn is signed by its owner alone)
        const chainOf = async (id: string): Promise<readonly Uint8Array[] | undefined> => req.bundle.chains[id] ?? memory.learned.get(id)?.chain ?? await this.ledger.chain(id)
        startClaim(states, await burntAncestors(tokens.map(([id, t]) => [id, t.blockId ?? ''] as const), chainOf))
      }
      else if (markers !== undefined && (likely === undefined || likely.includes(quorumDid))) {
        this.networkChecks.set(voteKey(quorumDid, txid), this.networkCheck(markers, states, txid))
      }
      // 4. pledge
      const share = pledgePerQuorum(totalMilli)
      const tp = Date.now()
      const pledged = await this.pledgeTokens(quorumDid, share, txid)
      const tPledge = Date.now()
      if (pledged === undefined) return no(`insufficient quorum liquidity: ${share / 1000} RBT to pledge`)
      const pledgeTokens = pledged.tokens
      const pledge: PledgeToken[] = pledgeTokens.map((t) => ({ token: t.tokenId, tokenType: t.tokenType, tokenBlockId: t.latestBlockId }))
      const pledgeMilli = pledgeTokens.reduce((s, t) => s + t.valueMilli, 0)
      // 5. vote: a credit signature over the transaction id
      const sig = await signer.signHash(txid)
      const credit = { did: quorumDid, hash: txid, signType: sig.signType === 1 ? '1' : '0', signature: sig.shareSig, privSignature: sig.keySig }
      const now = this.clock.now()
      const vote: VoteRecord = {
        txid, quorumDid, state: 'RESERVED', sender, receiver, senderPeer: req.senderPeer, amountMilli: totalMilli,
        states, pledge, pledgeMilli, credit, createdAt: now, updatedAt: now, ...(isNftTx && req.nft !== undefined ? { nft: req.nft } : {}),
        // kept to show the arbiters when this quorum claims at SIGN (a checker of other five, a restart)
        ...(this.claims !== undefined ? { contract: bytesToHex(req.contract) } : {})
      }
      await this.ledger.commit((w) => {
        storeLearned(w, memory)
        // a split made for this pledge is stored with the vote: one durable write, and none when the vote is not recorded
        if (pledged.split !== undefined) writeSplit(w, pledged.split)
        for (const t of pledgeTokens) w.putToken({ ...t, status: 'Locked', txid, updatedAt: now })
        for (const s of states) w.putRecord('cs-states', `${quorumDid}/${s}`, { txid })
        putVote(w, voteKey(quorumDid, txid), vote)
      })
      this.log.debug(`prepare ${txid.slice(0, 12)}: pledge ${tPledge - tp} ms, vote+commit ${Date.now() - tPledge} ms`)
      this.fault('quorum-reserved')
      this.refillPledgePieces(quorumDid, share, voteKey(quorumDid, txid))
      return { vote: 'yes', quorumDid, credit, pledge, pledgeMilli }
    })
  }

  /**
   * An NFT transaction's checks: the contract states the operation; a deploy names an id derived
   * from the deployer (and, for a child, a parent the deployer owns, whole chain valid); an
   * execution spends the latest state of a valid NFT chain owned by the initiator.
   */
  private async validateNft (req: PrepareRequest, contract: DecodedContract, sender: string, receiver: string): Promise<string | { valueMilli: number, state: string }> {
    const op = req.nft
    if (op === undefined || typeof op !== 'object') return 'NFT transaction without its operation'
    const ti = contract.content.transInfo
    const tokens = Object.entries(ti.transTokens ?? {})
    if (tokens.length !== 1) return 'an NFT transaction carries exactly one NFT'
    const [tokenId, t] = tokens[0]
    if (tokenId !== op.nftId || ti.nft !== op.nftId) return 'the contract names another NFT'
    if ((ti.nftData ?? '') !== (op.data ?? '')) return 'the contract carries other NFT data'
    if (!isNftTokenType(t.tokenType)) return `token type ${t.tokenType} is not an NFT`
    const v = floatToMilliExact(t.tokenValue)
    if (v === undefined || v <= 0 || v !== op.valueMilli) return `bad NFT value ${t.tokenValue}`
    const deploy = contract.content.type === ContractType.NFT_DEPLOY
    if (deploy !== (op.op === 'deploy')) return 'contract type and NFT operation disagree'
    if (deploy) {
      if (receiver !== sender) return 'an NFT is deployed to its deployer'
      if (t.blockId !== undefined && t.blockId !== '') return 'a deploy starts a new chain'
      if (!deployIdMatches(op, sender)) return `NFT id ${tokenId} is not derived from the deployer ${sender}`
      if (op.parentId !== undefined) {
        const parent = await validateBundleToken(req.bundle, op.parentId, this.opts.verifier, this.cache)
        if (!isNftTokenType(parent.tokenType)) return `parent ${op.parentId} is not an NFT`
        if (parent.owner !== sender) return `parent NFT ${op.parentId} belongs to ${parent.owner}, not the initiator ${sender}`
      }
      return { valueMilli: v, state: stateKey(tokenId, '') }
    }
    const tip = await validateBundleToken(req.bundle, tokenId, this.opts.verifier, this.cache)
    if (!isNftTokenType(tip.tokenType)) return `token ${tokenId} is not an NFT`
    if (tip.owner !== sender) return `NFT ${tokenId} belongs to ${tip.owner}, not the initiator ${sender}`
    if (tip.blockId !== t.blockId) return `NFT ${tokenId}: the contract spends block ${String(t.blockId)}, the chain ends at ${tip.blockId}`
    return { valueMilli: v, state: stateKey(tokenId, tip.blockId) }
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
  private async pledgeTokens (quorumDid: string, share: number, txid: string): Promise<{ tokens: TokenState[], split?: SplitResult } | undefined> {
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
  private refillPledgePieces (quorumDid: string, share: number, key: string): void {
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

  private async networkCheck (markers: SpentMarkers, states: readonly string[], txid: string): Promise<string | undefined> {
    const t0 = Date.now()
    const found = await Promise.all(dhtStates(states).map(async (s) => {
      const [tokenId, blockId] = s.split('@')
      return { tokenId, m: await withTimeout(markers.lookup(tokenStateHash(tokenId, blockId)), this.opts.markerTimeoutMs ?? 2000).catch(() => undefined) }
    }))
    const hit = found.find((f) => f.m !== undefined && f.m.txid !== txid)
    this.log.debug(`network check ${txid.slice(0, 12)}: ${found.length} state(s) looked up in ${Date.now() - t0} ms`)
    return hit === undefined ? undefined : `Token state is exhausted, token ${hit.tokenId} is being double spent (spent by ${hit.m!.txid})`
  }

  /** The block spends exactly the states this vote reserved, pays the contract's receiver, states this quorum's pledge and credit. */
  private checkBlockForVote (vote: VoteRecord, block: DecodedBlock): void {
    const { quorumDid, txid } = vote
    const c = block.content
    if (c.transInfo.tid !== txid) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'block is for another transaction')
    if (c.owner !== vote.receiver || c.transInfo.sender !== vote.sender || c.transInfo.receiver !== vote.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'block moves the tokens to someone else than the contract says')
    const spent = new Set(vote.states)
    const entries = Object.entries(c.transInfo.tokens)
    if (entries.length !== spent.size) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'block carries other tokens than the contract')
    for (const [tokenId, e] of entries) {
      if (!spent.has(stateKey(tokenId, e.previousBlockId))) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `block does not continue token ${tokenId} from the state this quorum validated`)
    }
    if (vote.nft !== undefined) {
      const want = vote.nft.op === 'deploy' ? TransactionType.DEPLOYED : TransactionType.EXECUTED
      const parentOk = vote.nft.op !== 'deploy' || (c.genesis?.info[vote.nft.nftId]?.parentId ?? '') === (vote.nft.parentId ?? '')
      const dataOk = vote.nft.sc !== undefined ? (c.smartContractData ?? '') === vote.nft.sc.record && (c.nftData ?? '') === '' : (c.nftData ?? '') === (vote.nft.data ?? '')
      if (c.transactionType !== want || !dataOk || floatToMilliExact(c.tokenValue ?? 0) !== vote.nft.valueMilli || !parentOk) {
        throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'block does not carry the NFT operation this quorum validated')
      }
    }
    const mine = c.pledgeDetails?.[quorumDid]
    const flat = (ps: readonly PledgeToken[]): string => ps.map((x) => `${x.token}|${x.tokenType}|${x.tokenBlockId}`).join(',')
    if (mine === undefined || flat(mine) !== flat(vote.pledge)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'block misstates this quorum\'s pledge')
    if (!(c.quorumSignatures ?? []).some((cr) => cr.did === quorumDid && cr.privSignature === vote.credit.privSignature)) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'block lacks this quorum\'s credit signature')
  }

  async sign (req: SignRequest): Promise<SignReply> {
    const { quorumDid, txid } = req
    const signer = this.opts.signerFor(quorumDid)
    if (signer === undefined) throw new RbtError(ErrorCode.FORBIDDEN, 'Quorum is not setup')
    const t0 = Date.now()
    let tWaited = t0
    let tChecked = t0
    let tMarkers = t0
    const { signature, vote } = await this.locks.run(quorumDid, async () => {
      tWaited = Date.now()
      const vote = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
      if (vote === undefined || vote.state === 'RELEASED') throw new RbtError(ErrorCode.CONFLICT, `no reservation for transaction ${txid}`)
      const block = decodeBlockEnvelope(req.block)
      // the same block again: the same signature; another block for this transaction (the sender
      // replaced a signer that failed) is signed too when it spends exactly what was reserved
      if (vote.signature !== undefined && vote.blockHash === block.hash) return { signature: vote.signature, vote }
      this.checkBlockForVote(vote, block)
      // a state found spent on the network (other quorum set) is never signed for; the designated
      // checkers among the block's credit signers ask the network, the others rely on their own records
      const key = voteKey(quorumDid, txid)
      const markers = this.opts.markers
      const checker = networkCheckers(txid, (block.content.quorumSignatures ?? []).map((c) => c.did), NETWORK_CHECKERS).includes(quorumDid)
      tChecked = Date.now()
      if (checker && this.claims !== undefined) {
        // the designated checker signs only with the claim of every state held: made at PREPARE,
        // or now (a checker of another five than the sender named, or after a restart)
        const r = this.claims.holds(quorumDid, txid) ? undefined : await this.claims.claim(quorumDid, txid, vote.states, [], vote.contract !== undefined ? hexToBytes(vote.contract) : undefined)
        tMarkers = Date.now()
        if (r !== undefined && !r.granted) {
          // not signed now, and the vote is kept: the sender is past its decision to sign (SIGNING)
          // and asks again (a claim that could not reach enough arbiters holds once they are back);
          // a released vote could never sign this transfer again, which stranded its tokens
          throw new RbtError(r.code === 'CLAIM_UNREACHABLE' ? ErrorCode.CLAIM_UNREACHABLE : ErrorCode.STATE_CLAIMED, r.reason, { details: r.holder !== undefined ? { claimedBy: r.holder } : {} })
        }
      } else {
        const pendingCheck = !checker ? Promise.resolve(undefined) : this.networkChecks.get(key) ?? (markers !== undefined ? this.networkCheck(markers, vote.states, txid) : Promise.resolve(undefined))
        this.networkChecks.delete(key)
        const conflict = await withTimeout(pendingCheck, this.opts.markerSignWaitMs ?? 250).catch(() => undefined)
        tMarkers = Date.now()
        if (conflict !== undefined) {
          await this.release(vote, conflict)
          throw new RbtError(ErrorCode.CONFLICT, conflict)
        }
      }
      const signature = await signer.pvtSign(block.hash)
      const now = this.clock.now()
      await this.ledger.commit((w) => { putVote(w, voteKey(quorumDid, txid), { ...vote, state: 'SIGNED', blockHash: block.hash, signature, updatedAt: now }) })
      this.fault('quorum-signed')
      return { signature, vote }
    })
    const tSigned = Date.now()
    // read outside the quorum's lock: the pledged tokens stay Locked for this transaction meanwhile
    const pledgeChains = await this.pledgeEvidence(vote)
    this.log.debug(`sign ${txid.slice(0, 12)}: lock wait ${tWaited - t0} ms, block checked ${tChecked - tWaited} ms, network check awaited ${tMarkers - tChecked} ms, signature+commit ${tSigned - tMarkers} ms, pledge evidence ${Date.now() - tSigned} ms`)
    return { quorumDid, signature, pledgeChains }
  }

  /** The chains of the tokens a vote pledged: the receiver's evidence that this quorum's pledge is real. */
  private async pledgeEvidence (vote: VoteRecord): Promise<ChainBundle | undefined> {
    if (vote.pledge.length === 0) return undefined
    return await buildBundle(this.ledger, vote.pledge.map((p) => p.token))
  }

  async finalize (req: FinalizeRequest): Promise<void> {
    const { quorumDid, txid } = req
    // The final block's signatures, verified before the quorum's lock is taken (a signer's DID
    // document may have to be fetched): a later spend of these tokens through this quorum finds the
    // block in the memo instead of checking its eleven signatures again, and the states the block
    // leads to are kept as validated with the commit (a failure only means neither is kept)
    const before = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
    const verified = before !== undefined && before.state !== 'COMMITTED' && before.state !== 'RELEASED' &&
      await verifyEnvelope(req.block, { verifier: this.opts.verifier, cache: this.cache })
        .then(() => true, (e) => { this.log.debug(`finalized block of ${txid}: ${errorMessage(e)}`); return false })
    await this.locks.run(quorumDid, async () => {
      const vote = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
      if (vote === undefined || vote.state === 'COMMITTED') return
      if (vote.state === 'RELEASED') { this.log.warn(`finalize for released transaction ${txid} ignored`); return }
      const block = decodeBlockEnvelope(req.block)
      this.checkBlockForVote(vote, block)
      const own = block.signatures[quorumDid]
      // the signature this quorum gave for this very block needs no second verification
      const given = own !== undefined && vote.blockHash === block.hash && vote.signature === own
      if (!given && (own === undefined || !await this.opts.verifier.verify(quorumDid, block.hash, own, 'quorum').catch(() => false))) {
        throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'finalized block does not carry this quorum\'s signature')
      }
      // the states the block moves the tokens to, for those whose state before it this quorum
      // validated at its vote: a later spend of them through this quorum needs no chain
      // (docs/protocol.md, "Validated states")
      const states = verified ? await statesAfter(req.block, ledgerAncestry(this.ledger), this.opts.verifier, this.cache) : undefined
      await this.commitVote(vote, req.block, states)
    })
  }

  private async commitVote (vote: VoteRecord, blockBytes: Uint8Array, states?: ReadonlyMap<string, ValidatedState>): Promise<void> {
    const block = decodeBlockEnvelope(blockBytes)
    const now = this.clock.now()
    const tokens = await Promise.all(vote.pledge.map(async (p) => await this.ledger.token(p.token)))
    const newBlockIds = Object.entries(block.content.transInfo.tokens).map(([id, e]) => `${id}@${formatBlockId(e.blockNumber, block.hash)}`)
    const pledge: PledgeRecord = { txid: vote.txid, quorumDid: vote.quorumDid, tokens: vote.pledge.map((p) => p.token), newBlockIds, releaseAt: now + (this.opts.pledgePeriodMs ?? 7 * 24 * 3600_000) }
    await this.ledger.commit((w) => {
      for (const t of tokens) if (t !== undefined && t.status === 'Locked' && t.txid === vote.txid) w.putToken({ ...t, status: 'Pledged', updatedAt: now })
      for (const [id, e] of Object.entries(block.content.transInfo.tokens)) w.putBlock(id, Number(e.blockNumber), blockBytes)
      for (const [id, st] of states ?? []) putValidatedState(w, id, st)
      putVote(w, voteKey(vote.quorumDid, vote.txid), { ...vote, state: 'COMMITTED', blockHash: block.hash, updatedAt: now })
      w.putRecord('cs-pledges', voteKey(vote.quorumDid, vote.txid), pledge)
      for (const k of pledgeIndexKeys(pledge)) w.putRecord('cs-pledge-index', k, voteKey(vote.quorumDid, vote.txid))
      w.putTransaction({
        txid: vote.txid, tokenType: vote.nft?.sc !== undefined ? 'smartContract' : vote.nft !== undefined ? 'nft' : carriesFt(block) ? 'ft' : 'rbt', sender: vote.sender, receiver: vote.receiver, amountMilli: vote.amountMilli,
        tokens: vote.states.map((s) => s.split('@')[0]), quorums: Object.keys(block.signatures), memo: block.content.transInfo.comment ?? '',
        epoch: block.content.epoch ?? Math.floor(now / 1000), role: 'quorum', blockId: newBlockIds[0]?.split('@')[1], status: 'committed'
      })
    })
    this.ended(vote, 'committed')
    this.fault('quorum-committed')
    if (this.opts.markers !== undefined) {
      const signers = Object.keys(block.signatures).filter((d) => d !== vote.sender)
      const batch = this.opts.markers.publishBatch
      // the batch gossip, like each state's marker, comes from the designated publishers only
      if (batch !== undefined && vote.states.length > MARKER_DHT_STATES && markerPublishers(vote.txid, signers).includes(vote.quorumDid)) {
        const items = vote.states.map((s) => {
          const [tokenId, blockId] = s.split('@')
          return { stateHash: tokenStateHash(tokenId, blockId), blockId: formatBlockId(block.content.transInfo.tokens[tokenId]?.blockNumber ?? '0', block.hash) }
        })
        batch(vote.quorumDid, vote.txid, items).catch((e) => { this.log.debug(`spent markers of ${vote.txid}: ${errorMessage(e)}`) })
      }
      for (const s of batch !== undefined ? dhtStates(vote.states) : vote.states) {
        const [tokenId, blockId] = s.split('@')
        const stateHash = tokenStateHash(tokenId, blockId)
        const publishers = markerPublishers(stateHash, signers)
        if (!publishers.includes(vote.quorumDid)) continue
        // the first-ranked publisher stores the marker at once; the second is its backup
        const backup = publishers.length > 1 && publishers[0] !== vote.quorumDid
        this.opts.markers.publish(stateHash, { txid: vote.txid, blockId: formatBlockId(block.content.transInfo.tokens[tokenId]?.blockNumber ?? '0', block.hash), quorum: vote.quorumDid }, { backup })
          .catch((e) => { this.log.debug(`spent marker for ${tokenId}: ${errorMessage(e)}`) })
      }
    }
  }

  async abort (req: AbortRequest): Promise<void> {
    await this.locks.run(req.quorumDid, async () => {
      const vote = await this.ledger.record<VoteRecord>('cs-votes', voteKey(req.quorumDid, req.txid))
      if (vote === undefined || vote.state === 'RELEASED') return
      if (vote.state === 'COMMITTED') { this.log.warn(`abort for committed transaction ${req.txid} ignored`); return }
      // Once this quorum signed a block, a valid block may exist: only the sender's outcome
      // (asked by sweep) or a commit ends the vote, and the token state stays held regardless.
      if (vote.state === 'SIGNED') { this.log.warn(`abort for signed transaction ${req.txid} ignored`); return }
      await this.release(vote, req.reason)
    })
  }

  private async release (vote: VoteRecord, reason: string, keepStates = false): Promise<void> {
    this.networkChecks.delete(voteKey(vote.quorumDid, vote.txid))
    // a vote released before it signed gives its claim up; one that signed keeps it (a block may exist)
    if (this.claims !== undefined) {
      if (!keepStates && vote.signature === undefined) this.claims.release(vote.quorumDid, vote.txid, vote.states)
      else this.claims.forget(vote.quorumDid, vote.txid)
    }
    const now = this.clock.now()
    const tokens = await Promise.all(vote.pledge.map(async (p) => await this.ledger.token(p.token)))
    await this.ledger.commit((w) => {
      for (const t of tokens) if (t !== undefined && t.status === 'Locked' && t.txid === vote.txid) w.putToken({ ...t, status: 'Free', updatedAt: now })
      if (!keepStates) for (const s of vote.states) w.delRecord('cs-states', `${vote.quorumDid}/${s}`)
      putVote(w, voteKey(vote.quorumDid, vote.txid), { ...vote, state: 'RELEASED', reason, updatedAt: now, ...(keepStates ? { statesHeld: true } : {}) })
    })
    this.ended(vote, 'aborted')
    this.fault('quorum-released')
  }

  /** Is `quorumDid` set up here? */
  isSetUp (quorumDid: string): boolean { return this.opts.signerFor(quorumDid) !== undefined }

  /**
   * Periodic duty: votes with no word from their sender ask it for the outcome (COMMITTING or
   * COMMITTED → commit, ABORTED or unknown → release, unreachable → ask again later); pledges whose
   * period ended are released.
   */
  async sweep (): Promise<void> {
    const now = this.clock.now()
    const stale = now - (this.opts.staleVoteMs ?? 30_000)
    // only the open votes, from their index (never the whole history of votes)
    const votes = (await openVotes(this.ledger)).filter((v) => v.updatedAt <= stale)
    for (const v of votes) {
      if (this.opts.transport === undefined) break
      try {
        const out = await this.opts.transport.outcome(v.senderPeer, { txid: v.txid })
        await this.locks.run(v.quorumDid, async () => {
          const cur = await this.ledger.record<VoteRecord>('cs-votes', voteKey(v.quorumDid, v.txid))
          if (cur === undefined || (cur.state !== 'RESERVED' && cur.state !== 'SIGNED')) return
          if ((out.state === 'COMMITTING' || out.state === 'COMMITTED') && out.block !== undefined) {
            const b = decodeBlockEnvelope(out.block)
            if (cur.state === 'SIGNED' && b.signatures[v.quorumDid] !== undefined && b.hash === cur.blockHash) await this.commitVote(cur, out.block)
            else await this.release(cur, 'not among the signers of the committed block')
          } else if (out.state === 'ABORTED' || out.state === 'UNKNOWN') {
            await this.release(cur, `sender reports ${out.state}`, cur.state === 'SIGNED')
          }
        })
      } catch (e) {
        this.log.debug(`outcome of ${v.txid} from ${v.senderPeer}: ${errorMessage(e)}`)
      }
    }
    await this.pledges.releaseDue(now)
  }

  /** See PledgeReleases.tokensMovedOn. */
  async tokensMovedOn (spentStates: readonly string[], source?: Pick<ChainSource, 'chain'>): Promise<void> { await this.pledges.tokensMovedOn(spentStates, source) }
  /** See PledgeReleases.pledgeHolding. */
  async pledgeHolding (tokenId: string): Promise<PledgeRecord | undefined> { return await this.pledges.pledgeHolding(tokenId) }
  /** See PledgeReleases.releaseByProof. */
  async releaseByProof (proof: UnpledgeProof, minLevel: number): Promise<void> { await this.pledges.releaseByProof(proof, minLevel) }
  /** See PledgeReleases.storedProof. */
  async storedProof (token: string, txid?: string): Promise<UnpledgeProof | undefined> { return await this.pledges.storedProof(token, txid) }
  /** See PledgeReleases.releaseOrphanLock. */
  async releaseOrphanLock (tokenId: string): Promise<{ released: boolean, why: string }> { return await this.pledges.releaseOrphanLock(tokenId) }
  /** See PledgeReleases.pledgeSummary. */
  async pledgeSummary (): Promise<Array<{ quorumDid: string, txid: string, tokens: string[] }>> { return await this.pledges.pledgeSummary() }
}

/**
 * The signers that publish a spent state's marker (a record on the peers closest to its key, and
 * gossip when that leaves nodes out): MARKER_PUBLISHERS of them, ranked by a hash of the state and
 * the DID so the work spreads over the quorums. Every signer keeps the state in its own durable
 * ledger regardless; two publishers keep the marker alive if one crashes.
 */
const MARKER_PUBLISHERS = 2
export function markerPublishers (stateHash: string, signers: readonly string[]): string[] {
  return rankedBy(stateHash, signers).slice(0, MARKER_PUBLISHERS)
}

/**
 * DIDs in the order of SHA3(`<key>|<did>`), each hashed once (hashed in the sort's comparison,
 * a FINALIZE of 300 states computed some 6,000 hashes instead of 1,500).
 */
function rankedBy (key: string, dids: readonly string[]): string[] {
  const ranked = dids.map((did) => ({ did, r: sha3Hex(new TextEncoder().encode(`${key}|${did}`)) }))
  return ranked.sort((a, b) => a.r < b.r ? -1 : a.r > b.r ? 1 : 0).map((x) => x.did)
}

/**
 * How many of a block's signers look the spent markers up on the network before signing. One
 * lookup per spent state and transaction: every signer also checks its own durable records and the
 * markers gossip brought it, and a second network lookup doubled the DHT traffic of a transfer
 * (each negative lookup asks every one of the closest peers) for little extra assurance.
 */
export const NETWORK_CHECKERS = 1

/**
 * The quorums among `signers` that look a transaction's spent states up on the network: the first
 * `n` ranked by SHA3(txid | DID). Every signer computes the same set from the block's credit
 * signatures, so whichever five a sender gathers, the first-ranked asked the network; the others
 * check their own durable records (and the markers gossip brought them) only.
 */
export function networkCheckers (txid: string, signers: readonly string[], n: number): string[] {
  return rankedBy(txid, [...new Set(signers)]).slice(0, n)
}

/** The writes of a split: the parent burnt, its parts Free with their genesis blocks. */
function writeSplit (w: LedgerWriter, res: SplitResult): void {
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

/** The states looked up and published one by one in the DHT: all, or the MARKER_DHT_STATES lowest state hashes (the anchor among them). */
function dhtStates (states: readonly string[]): string[] {
  if (states.length <= MARKER_DHT_STATES) return [...states]
  const hashed = states.map((s) => { const [tokenId, blockId] = s.split('@'); return { s, h: tokenStateHash(tokenId, blockId) } })
  return hashed.sort((a, b) => a.h < b.h ? -1 : a.h > b.h ? 1 : 0).slice(0, MARKER_DHT_STATES).map((x) => x.s)
}

async function withTimeout<T> (p: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined
  try {
    return await Promise.race([p, new Promise<T>((_resolve, reject) => { timer = setTimeout(() => { reject(new RbtError(ErrorCode.TIMEOUT, 'marker lookup timed out')) }, ms) })])
  } finally { clearTimeout(timer) }
}

