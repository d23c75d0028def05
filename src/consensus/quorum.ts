import { decodeBlockEnvelope, formatBlockId, type DecodedBlock, type PledgeToken } from '../tokenchain/block.js'
import { decodeContract } from '../tokenchain/contract.js'
import { floatToMilliExact, pledgePerQuorum } from '../tokenchain/amount.js'
import { tokenStateHash } from '../tokenchain/token-id.js'
import { GENESIS_ANCHOR, spendAnchor, verifyEnvelope, type VerifiedBlockCache } from '../tokenchain/validate.js'
import { BoundedSet } from '../util/lru.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import type { Logger } from '../util/logger.js'
import { silentLogger } from '../util/logger.js'
import { AncestryMissing, buildBundle, ledgerAncestry, putValidatedState, statesAfter, storeLearned, validateBundleToken, validateBundleTokenOrCollect, type ValidatedState } from './bundle.js'
import type { ChainSource } from './chain-sync.js'
import { KeyedMutex } from './keyed-mutex.js'
import { MIN_QUORUM_SIGNATURES } from './quorum-selection.js'
import type { AbortRequest, ChainBundle, ConsensusTransport, FinalizeRequest, PrepareReply, PrepareRequest, SignReply, SignRequest, VoteClaim } from './messages.js'
import type { Clock, ConsensusSigner, Ledger, SpentMarker, SpentMarkers, StateClaims, Verifier } from './ports.js'
import { MARKER_DHT_STATES, systemClock, VERIFIED_MEMO } from './ports.js'
import { QuorumPledges, writeSplit } from './quorum-pledge.js'
import { checkerKey, dhtStates, markerPublishers, NETWORK_CHECKERS, networkCheckers, spentStatesOf, withTimeout } from './quorum-checkers.js'

export { markerPublishers, NETWORK_CHECKERS, networkCheckers } from './quorum-checkers.js'
import { openVotes, pledgeIndexKeys, putVote, stateKey, voteKey, type PledgeRecord, type VoteRecord } from './records.js'
import { ContractType, TransactionType } from '../tokenchain/types.js'
import type { DecodedContract } from '../tokenchain/contract.js'
import { deployIdMatches, isNftTokenType } from './nft.js'
import type { UnpledgeProof } from './unpledge-pow.js'
import { isScContractType, validateScOp, type ScRunner } from './smart-contract.js'
import { carriesFt } from './ft.js'
import { notify, type ConsensusObserver, type ConsensusOutcome } from './observe.js'
import { PledgeReleases } from './pledge-release.js'
import { QuorumClaims, stateHashOf } from './quorum-claims.js'
import { anchorPaths, nonceOfSecret, sealSecret, type PeerSeal } from './claim-proofs.js'
import { burntAncestors, validatorBurns, type BurnClaim } from './burn-claims.js'
import { flagDiverged, type DoubleSpendSink } from './double-spends.js'

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
   * claims of the states spent at their arbiters (docs/protocol.md, "Claims"): each vote carries
   * the quorum's signed claim for the sender to make, and the quorum signs only with the grants of
   * its claim checked; absent, the designated checker looks the spent markers up instead (the
   * protection of nodes from before claims)
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
  /** told of two spends of one state this quorum sees (a chain sent forking from one it validated) */
  doubleSpends?: DoubleSpendSink
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
  /** the pledges its votes lock, and their refills */
  private readonly pledging: QuorumPledges
  /** releases of committed pledges, under the same locks as the votes */
  private readonly pledges: PledgeReleases
  /** this node's quorums' side of the claims the senders make for them */
  private readonly claims: QuorumClaims | undefined

  constructor (private readonly opts: QuorumOptions) {
    this.ledger = opts.ledger
    this.clock = opts.clock ?? systemClock
    this.log = opts.logger ?? silentLogger
    this.cache = opts.verified ?? new BoundedSet(VERIFIED_MEMO)
    this.pledges = new PledgeReleases({ ledger: this.ledger, clock: this.clock, log: this.log, locks: this.locks, verifier: opts.verifier, cache: this.cache })
    this.claims = opts.claims !== undefined ? new QuorumClaims(opts.claims, this.log, (did) => this.opts.signerFor(did)) : undefined
    this.pledging = new QuorumPledges({ ledger: this.ledger, clock: this.clock, log: this.log, locks: this.locks, ownerSignerFor: opts.ownerSignerFor })
  }

  private fault (step: string): void { this.opts.fault?.(step) }

  async prepare (req: PrepareRequest): Promise<PrepareReply> {
    const started = Date.now()
    const reply = await this.vote(req)
    if (reply.vote === 'no') notify(this.opts.observe, { kind: 'transaction', role: 'quorum', outcome: 'refused', ms: Date.now() - started })
    return reply
  }

  /**
   * What an arbiter holding a claim of `txid` by `quorumDid` is told: `pending` while the vote may
   * still sign (or a claim is under way), `committed` once it committed (or signed and keeps the
   * states held), `released` when it was released before signing or never recorded.
   */
  async claimOutcome (quorumDid: string, txid: string): Promise<'pending' | 'committed' | 'released'> {
    const vote = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
    if (vote === undefined) return 'released'
    if (vote.state === 'RESERVED' || vote.state === 'SIGNED') return 'pending'
    if (vote.state === 'COMMITTED') return 'committed'
    return (vote as VoteRecord & { statesHeld?: boolean }).statesHeld === true || vote.signature !== undefined ? 'committed' : 'released'
  }

  private ended (vote: VoteRecord, outcome: ConsensusOutcome): void {
    const key = voteKey(vote.quorumDid, vote.txid)
    this.claims?.forget(vote.quorumDid, vote.txid)
    this.pledging.voteEnded(key)
    notify(this.opts.observe, { kind: 'transaction', role: 'quorum', outcome, ms: Math.max(0, this.clock.now() - vote.createdAt) })
  }

  /**
   * The vote: validation, double-spend checks, pledge, the RESERVED record, and with claims on the
   * quorum's signed claim for the sender to make. Without claims, the quorums likely to be the
   * designated checker of the five named start the network's marker lookup.
   */
  private async vote (req: PrepareRequest): Promise<PrepareReply> {
    const asked = Array.isArray(req.asked) && req.asked.every((d) => typeof d === 'string') ? req.asked : undefined
    // a list of five names the expected signers: exactly their checker starts; a longer list
    // (every candidate) leaves the signers open, so one more of its first-ranked starts too
    const likelyOf = (spent: readonly string[]): string[] | undefined => asked === undefined
      ? undefined
      : networkCheckers(checkerKey(spent), asked, asked.length <= MIN_QUORUM_SIGNATURES ? NETWORK_CHECKERS : NETWORK_CHECKERS + 1)
    return await this.voteLocked(req, likelyOf)
  }

  /** The claim a vote carries: the quorum's proof kept with the vote, and the states it holds. */
  private voteClaim (vote: Pick<VoteRecord, 'states' | 'claimNonce' | 'claimSig'>): { claim: VoteClaim } | Record<string, never> {
    return vote.claimNonce !== undefined && vote.claimSig !== undefined ? { claim: { nonce: vote.claimNonce, sig: vote.claimSig, states: vote.states } } : {}
  }

  /** The burnt ancestors a vote's states rest on, for a vote recorded before they were kept with it. */
  private async burnsOf (vote: VoteRecord): Promise<VoteRecord> {
    // a record from before burn proofs: its ancestors again, with the burns the arbiters check
    if (vote.burns !== undefined && vote.burns.every((b) => b.proof !== undefined)) return vote
    const fresh = await burntAncestors(vote.states.map((st) => { const at = st.indexOf('@'); return [st.slice(0, at), st.slice(at + 1)] as const }), async (id) => await this.ledger.chain(id)).catch(() => [])
    const found = new Set(fresh.map((b) => b.stateHash))
    return { ...vote, burns: [...fresh, ...(vote.burns ?? []).filter((b) => !found.has(b.stateHash))] }
  }

  private async voteLocked (req: PrepareRequest, likelyOf: (spent: readonly string[]) => string[] | undefined): Promise<PrepareReply> {
    const { quorumDid, txid } = req
    const no = (reason: string, conflict = false): PrepareReply => ({ vote: 'no', quorumDid, reason, conflict })
    const signer = this.opts.signerFor(quorumDid)
    if (signer === undefined) return no('Quorum is not setup')
    const tWait = Date.now()
    return await this.locks.run(quorumDid, async () => {
      const tEnter = Date.now()
      const existing = await this.ledger.record<VoteRecord>('cs-votes', voteKey(quorumDid, txid))
      if (existing !== undefined && existing.state !== 'RELEASED') {
        // asked again (the sender lost its answer, or replaced a signer): the same vote, the same claim
        return { vote: 'yes', quorumDid, credit: existing.credit, pledge: existing.pledge, pledgeMilli: existing.pledgeMilli, ...(this.claims !== undefined ? this.voteClaim(existing) : {}) }
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
      const likely = likelyOf(tokens.map(([id, t]) => `${id}@${t.blockId ?? ''}`))
      const tStart = Date.now()
      this.log.debug(`prepare ${txid.slice(0, 12)}: lock wait ${tEnter - tWait} ms, contract+sender signature ${tStart - tEnter} ms`)
      // the network marker lookup runs while the chains are validated. With claims, a spent marker
      // is no veto: any DID can sign one (a stranger's marker of an honest owner's state froze the
      // token), and the claims at the state's arbiters decide; markers stay evidence (double spends)
      const markers = this.claims === undefined ? this.opts.markers : undefined
      const markerHashes = markers === undefined ? [] : tokens.map(([tokenId, t]) => tokenStateHash(tokenId, t.blockId ?? ''))
      const markersFound: Promise<Array<SpentMarker | undefined>> = markers === undefined
        ? Promise.resolve([])
        : markers.knownMany(markerHashes).catch(() => [])
      // 2. every token: whole chain valid, owned by the sender at the stated block, value as stated
      let totalMilli = 0
      // the states held: each token's last quorum-signed state (its tip, unless owner-only blocks
      // follow it); `spends`, the tips the contract spends, when any differs
      const states: string[] = []
      const spends: string[] = []
      const isScTx = isScContractType(contract.content.type)
      const isNftTx = contract.content.type === ContractType.NFT_DEPLOY || contract.content.type === ContractType.NFT_EXECUTE || isScTx
      // ancestors validated before are not validated again; those validated now are stored with the vote
      const memory = ledgerAncestry(this.ledger)
      const missing: string[] = []
      try {
        if (!isNftTx) await memory.preload(tokens.map(([id]) => id))
        if (isNftTx) {
          const r: string | { valueMilli: number, state: string, spend?: string } = isScTx || req.nft?.sc !== undefined
            ? await validateScOp({ contract, op: req.nft, code: req.scCode, bundle: req.bundle, sender, receiver, runner: this.opts.contracts, tip: async (id) => await validateBundleToken(req.bundle, id, this.opts.verifier, this.cache) })
            : await this.validateNft(req, contract, sender, receiver)
          if (typeof r === 'string') return no(r)
          totalMilli = r.valueMilli
          states.push(r.state)
          // an NFT is held at its spend anchor, and spends its tip
          spends.push(r.spend ?? r.state)
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
          const anchor = tip.anchorBlockId ?? spendAnchor(req.bundle.chains[tokenId] ?? memory.learned.get(tokenId)?.chain ?? await this.ledger.chain(tokenId), tip.blockNumber)
          states.push(stateKey(tokenId, anchor))
          spends.push(stateKey(tokenId, tip.blockId))
        }
      } catch (e) {
        if (e instanceof AncestryMissing) return { ...no(errorMessage(e)), missing: e.missing }
        return no(errorMessage(e))
      } finally {
        await flagDiverged(memory.diverged, this.ledger, this.opts.doubleSpends, 'quorum', this.log)
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
      // a token whose tip is owner-only: the marker of the state it really spends
      const moved = states.filter((st, i) => st !== spends[i])
      if (markers !== undefined && moved.length > 0) {
        const more = await markers.knownMany(moved.map(stateHashOf)).catch(() => [])
        const hit = more.findIndex((m) => m !== undefined && m.txid !== txid)
        if (hit >= 0) return no(`Token state is exhausted, token state ${moved[hit]!} is being double spent (spent by ${more[hit]!.txid})`, true)
      }
      this.log.debug(`prepare ${txid.slice(0, 12)}: validation ${tValid - tStart} ms, known markers +${Date.now() - tValid} ms`)
      // With claims, every vote carries the quorum's signed claim of its states, which the sender
      // makes at their arbiters for all five signers at once; the quorum signs only with the grants
      // of its own claim (sign). Without claims, the network's markers are asked in the background
      // by the quorums likely to be designated checkers of the final block (see networkCheckers);
      // SIGN waits for the answer (bounded).
      // With its states, every vote keeps the burnt ancestors of the parts it spends (a burn is
      // signed by its owner alone): its grants must cover them too.
      const chainOf = async (id: string): Promise<readonly Uint8Array[] | undefined> => req.bundle.chains[id] ?? memory.learned.get(id)?.chain ?? await this.ledger.chain(id)
      // read from chains validated here only (a bundle chain validation skipped is the sender's word)
      let burns: BurnClaim[] = []
      if (!isNftTx) {
        try {
          burns = await validatorBurns(states.map((st) => { const at = st.indexOf('@'); return [st.slice(0, at), st.slice(at + 1)] as const }), req.bundle, memory, this.ledger, this.opts.verifier, this.cache)
        } catch (e) {
          if (e instanceof AncestryMissing) return { ...no(errorMessage(e)), missing: e.missing }
          return no(errorMessage(e))
        }
      }
      // a state before the contract's tip: the arbiters are shown the owner-only blocks from it to the tip
      const paths = await anchorPaths(states.map((state, i) => ({ state, tip: spends[i]! })), chainOf)
      const held = { quorumDid, txid, states, burns, ...(Object.keys(paths).length > 0 ? { paths } : {}) }
      // the claim's nonce is the hash of a secret kept with the vote, revealed only with the signature (its consent to seal)
      const secret = sealSecret()
      const claimProof = this.claims !== undefined ? await this.claims.proof(quorumDid, txid, nonceOfSecret(secret)) : undefined
      if (this.claims === undefined && markers !== undefined && (likely === undefined || likely.includes(quorumDid))) {
        this.networkChecks.set(voteKey(quorumDid, txid), this.networkCheck(markers, states, txid))
      }
      // 4. pledge
      const share = pledgePerQuorum(totalMilli)
      const tp = Date.now()
      const pledged = await this.pledging.pledgeTokens(quorumDid, share, txid)
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
        states, pledge, pledgeMilli, credit, createdAt: now, updatedAt: now, burns, ...(isNftTx && req.nft !== undefined ? { nft: req.nft } : {}),
        ...(moved.length > 0 ? { spends } : {}),
        ...(held.paths !== undefined ? { paths: held.paths } : {}),
        // the quorum's claim, kept to answer a PREPARE asked again the same and to release it signed
        ...(claimProof !== undefined ? { claimNonce: claimProof.nonce, claimSig: claimProof.sig, claimSecret: secret } : {})
      }
      // a seat's own table grants the quorum's claim beside the vote's write (the grants ride the vote)
      const granting = this.claims !== undefined && claimProof !== undefined ? this.claims.grantOwn(quorumDid, txid, states, burns, claimProof) : undefined
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
      this.pledging.refillPledgePieces(quorumDid, share, voteKey(quorumDid, txid))
      const grants = await granting ?? []
      return { vote: 'yes', quorumDid, credit, pledge, pledgeMilli, ...this.voteClaim(vote), ...(grants.length > 0 ? { grants } : {}) }
    })
  }

  /**
   * An NFT transaction's checks: the contract states the operation; a deploy names an id derived
   * from the deployer (and, for a child, a parent the deployer owns, whole chain valid); an
   * execution spends the latest state of a valid NFT chain owned by the initiator.
   */
  private async validateNft (req: PrepareRequest, contract: DecodedContract, sender: string, receiver: string): Promise<string | { valueMilli: number, state: string, spend?: string }> {
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
    // held at its spend anchor, as a token's state: an NFT at its deploy block is at GENESIS_ANCHOR,
    // so a deploy block written twice (its id does not fix its bytes) still leaves one state to spend;
    // past the deploy block the anchor is the tip (an NFT chain holds no owner-only block)
    return { valueMilli: v, state: stateKey(tokenId, tip.anchorBlockId ?? (tip.blockNumber === 0 ? GENESIS_ANCHOR : tip.blockId)), spend: stateKey(tokenId, tip.blockId) }
  }


  /** Settles when the background refills under way are done (tests, shutdown). */
  async refills (): Promise<void> { await this.pledging.refills() }

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
    const spent = new Set(vote.spends ?? vote.states)
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
    // this node's own seal of what it holds for the transaction as an arbiter (docs/protocol.md, "A
    // signer's own seal"), started once the grants of this signer's claim are checked, beside the
    // signature's write: nothing is left between them but the signature itself
    let sealing: Promise<PeerSeal[]> | undefined
    const sealOwn = (v: VoteRecord): Promise<PeerSeal[]> | undefined => {
      if (this.claims === undefined || v.claimSecret === undefined) return undefined
      const p = this.burnsOf(v).then(async ({ burns }) => await this.claims!.sealSigned(quorumDid, txid, v.states, burns ?? [], v.claimNonce), () => [])
      // awaited below, unless the signature's write fails first
      p.catch(() => {})
      return p
    }
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
      // ranked by the states the block spends among its signers (credit signers = block signers)
      tChecked = Date.now()
      if (this.claims !== undefined) {
        // every signer signs only with its own claim of every state held granted by their arbiters
        // (the sender's claim made for it; grants checked against this node's count of arbiters):
        // an owner's quorum among the five can neither skip the claim nor give it up for the others
        // (or of a fellow signer's claim granted by a seat as it voted: the block's other signers)
        const fellows = (block.content.quorumSignatures ?? []).map((c) => c.did).filter((d) => d !== quorumDid)
        const r = await this.claims.check(quorumDid, txid, vote.states, (await this.burnsOf(vote)).burns ?? [], req.grants, vote.claimNonce, fellows)
        tMarkers = Date.now()
        if (!r.granted) {
          // not signed now, and the vote is kept: the sender is past its decision to sign (SIGNING)
          // and asks again (a claim that could not reach enough arbiters holds once they are back);
          // a released vote could never sign this transfer again, which stranded its tokens
          throw new RbtError(r.code === 'CLAIM_UNREACHABLE' ? ErrorCode.CLAIM_UNREACHABLE : ErrorCode.STATE_CLAIMED, r.reason, { details: r.holder !== undefined ? { claimedBy: r.holder } : {} })
        }
        sealing = sealOwn(vote)
      } else {
        const checker = networkCheckers(checkerKey(spentStatesOf(block.content.transInfo.tokens)), (block.content.quorumSignatures ?? []).map((c) => c.did), NETWORK_CHECKERS).includes(quorumDid)
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
    // (the same block asked again: sealed now, beside the evidence)
    sealing ??= sealOwn(vote)
    // read outside the quorum's lock: the pledged tokens stay Locked for this transaction meanwhile
    const pledgeChains = await this.pledgeEvidence(vote)
    const sealed = await sealing ?? []
    this.log.debug(`sign ${txid.slice(0, 12)}: lock wait ${tWaited - t0} ms, block checked ${tChecked - tWaited} ms, network check awaited ${tMarkers - tChecked} ms, signature+commit ${tSigned - tMarkers} ms, pledge evidence ${Date.now() - tSigned} ms`)
    return { quorumDid, signature, ...(pledgeChains !== undefined ? { pledgeChains } : {}), ...(vote.claimSecret !== undefined ? { seal: vote.claimSecret } : {}), ...(sealed.length > 0 ? { sealed } : {}) }
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
      this.log.debug(`abort ${req.txid.slice(0, 12)}: vote of ${req.quorumDid.slice(0, 12)} released (${req.reason})`)
      await this.release(vote, req.reason)
    })
  }

  private async release (vote: VoteRecord, reason: string, keepStates = false): Promise<void> {
    this.networkChecks.delete(voteKey(vote.quorumDid, vote.txid))
    // a vote released before it signed gives its claim up; one that signed keeps it (a block may exist)
    if (this.claims !== undefined) {
      if (!keepStates && vote.signature === undefined) this.claims.release(vote.quorumDid, vote.txid, vote.states, vote.burns ?? [], vote.claimNonce)
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
