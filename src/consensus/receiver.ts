import { decodeBlockEnvelope, formatBlockId, parseBlockId, type DecodedBlock } from '../tokenchain/block.js'
import { decodeContract } from '../tokenchain/contract.js'
import { floatToMilliExact, pledgePerQuorum } from '../tokenchain/amount.js'
import type { Block } from '../tokenchain/block.js'
import { OWNER_ONLY, spendAnchor, type VerifiedBlockCache } from '../tokenchain/validate.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { flagDiverged, type DoubleSpendSink } from './double-spends.js'
import { heldStates, ledgerAncestry, linksHold, type AncestryMemory, storedPrefix, storeLearned, validateBundleToken, validateBundleTokenOrCollect, validateHeldToken } from './bundle.js'
import { KeyedMutex } from './keyed-mutex.js'
import type { ChainBundle, DeliverReply, DeliverRequest, ReceiverPolicy, SpentState } from './messages.js'
import type { Clock, Ledger, StateClaims, TokenState, Verifier } from './ports.js'
import { systemClock, VERIFIED_MEMO } from './ports.js'
import { BoundedSet } from '../util/lru.js'
import { MIN_QUORUM_SIGNATURES } from './quorum-selection.js'
import { stateKey, type IncomingRecord } from './records.js'
import { validatorBurns, type BurnClaim } from './burn-claims.js'
import { isPeerSeal, stateHashOf } from './quorum-claims.js'
import type { PeerSeal } from './claim-proofs.js'
import { ACCEPTED_CERTS, certificatesToKeep } from './carried-certificates.js'
import { isScContractType } from './smart-contract.js'
import type { DecodedContract } from '../tokenchain/contract.js'
import { ContractType, TokenType } from '../tokenchain/types.js'
import { carriesFt, ftIdentity } from './ft.js'
import { notify, type ConsensusObserver, type ConsensusOutcome } from './observe.js'
import { silentLogger, type Logger } from '../util/logger.js'

/** How a receiver refuses a delivery whose certificate falls short of q(n) seals as it counts the arbiters (a sender grows it then). */
export const CERTIFICATE_SHORT = 'the block\'s certificate does not hold here'

export interface ReceiverOptions {
  /** told once a delivery's tokens are stored here (not for a repeated delivery): the tokens and their types */
  onReceived?: (txid: string, receiver: string, tokens: Array<{ tokenId: string, tokenType: number }>) => void
  ledger: Ledger
  verifier: Verifier
  /** envelopes whose signatures this node verified (shared by its roles); default: a memo of its own */
  verified?: VerifiedBlockCache
  isLocalDid: (did: string) => Promise<boolean>
  /** this node's quorum list */
  ownQuorums: () => Promise<string[]>
  /**
   * The strict rule (`trustOwnQuorumList`): only signers of this node's own quorum list count.
   * Off by default: a signer counts when it backs its signature with a valid pledge.
   */
  trustOwnQuorumList?: () => boolean
  clock?: Clock
  fault?: (step: string) => void
  /** told how each delivery ended for the receiver (metrics) */
  observe?: ConsensusObserver
  logger?: Logger
  /** told of two spends of one state this receiver sees (a delivered chain forking from the one it stores) */
  doubleSpends?: DoubleSpendSink
  /**
   * with claims on, the block's certificate is checked before the tokens are taken: every state it
   * spends sealed to it by the arbiters as this node counts them
   */
  claims?: Pick<StateClaims, 'checkSeals' | 'priorSeals'>
}

/**
 * The receiver's side: verifies the new block (sender's and quorums' signatures) and every token's
 * whole chain before anything is stored, then takes the tokens as Free in one commit. Delivering
 * the same transaction again answers the same.
 */
export class TransferReceiver {
  private readonly clock: Clock
  private readonly locks = new KeyedMutex()
  private readonly cache: VerifiedBlockCache
  private readonly log: Logger

  constructor (private readonly opts: ReceiverOptions) {
    this.clock = opts.clock ?? systemClock
    this.cache = opts.verified ?? new BoundedSet(VERIFIED_MEMO)
    this.log = opts.logger ?? silentLogger
  }

  async deliver (req: DeliverRequest): Promise<DeliverReply> {
    const started = Date.now()
    let fresh = false
    const observed = (outcome: ConsensusOutcome): void => { notify(this.opts.observe, { kind: 'transaction', role: 'receiver', outcome, ms: Date.now() - started }) }
    try {
      const reply = await this.take(req, () => { fresh = true })
      if (fresh) observed('committed')
      return reply
    } catch (e) {
      observed(e instanceof RbtError && (e.code === ErrorCode.VERIFICATION_FAILED || e.code === ErrorCode.NOT_FOUND || e.code === ErrorCode.CHAIN_INVALID) ? 'refused' : 'failed')
      throw e
    }
  }

  /** Verifies and stores one delivery; `stored` is called when this call (not an earlier one) took the tokens. */
  private async take (req: DeliverRequest, stored: () => void): Promise<DeliverReply> {
    const { ledger } = this.opts
    return await this.locks.run(req.txid, async () => {
      if (await ledger.record<IncomingRecord>('cs-incoming', req.txid) !== undefined) return { txid: req.txid, accepted: true }
      this.opts.fault?.('delivering')
      if (!await this.opts.isLocalDid(req.receiver)) throw new RbtError(ErrorCode.NOT_FOUND, `receiver ${req.receiver} is not hosted on this node`)
      const contract = decodeContract(req.contract)
      if (contract.transactionId !== req.txid) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'transaction id is not the hash of the contract')
      const ti = contract.content.transInfo
      if (ti.receiver !== req.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the contract pays someone else')
      const block = decodeBlockEnvelope(req.block)
      if (block.content.transInfo.tid !== req.txid || block.content.owner !== req.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the block does not hand the tokens to this receiver')
      const signers = Object.keys(block.signatures)
      const t0 = Date.now()
      // the pledge evidence is validated without the node's memory: each pledged part is pledged
      // once, so keeping what its validation learned cost more writes than it saved (a quorum's
      // split tokens form a shallow tree, see QuorumService.splitForPledge)
      await this.checkSigners(req, block, signers, floatToMilliExact(contract.content.totalRbts) ?? NaN)
      const tSigners = Date.now()
      // ancestors and token states validated before are not validated again
      const memory = ledgerAncestry(ledger)
      const now = this.clock.now()
      const incoming: TokenState[] = []
      let total = 0
      const missing: string[] = []
      // tokens delivered without a chain: this node said it holds them at the state spent (receiverHolds)
      const chainless = Object.keys(ti.transTokens ?? {}).filter((id) => req.bundle.chains[id] === undefined)
      const storedRecs = chainless.length === 0 ? [] : await ledger.tokensById(chainless)
      const heldBefore = new Map(chainless.map((id, i) => [id, storedRecs[i]]))
      await memory.preload(Object.keys(ti.transTokens ?? {}))
      const extended: Array<[string, number]> = []
      for (const [tokenId, t] of Object.entries(ti.transTokens ?? {})) {
        const chain = req.bundle.chains[tokenId]
        let tip
        let known: Pick<TokenState, 'parentId' | 'content' | 'ftName' | 'creator'>
        if (chain === undefined) {
          // the new block, 5 quorum signatures and the sender's, as the next link of the state held here
          tip = await validateHeldToken(tokenId, req.block, heldBefore.get(tokenId), this.opts.verifier, memory, this.cache)
          if (tip === undefined) { missing.push(tokenId); continue }
          const { parentId, content, ftName, creator } = heldBefore.get(tokenId)!
          known = { parentId, content, ftName, creator }
          extended.push([tokenId, tip.blockNumber])
        } else {
          if (decodeBlockEnvelope(chain[chain.length - 1]).hash !== block.hash) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `chain of ${tokenId} does not end with the new block`)
          // validates every block, including the new one's 5 quorum signatures and the sender's
          tip = await validateBundleTokenOrCollect(req.bundle, tokenId, this.opts.verifier, missing, this.cache, memory)
          if (tip === undefined) continue
          const genesis = decodeBlockEnvelope(chain[0])
          const parentId = genesis.content.genesis?.info[tokenId]?.parentId
          known = { parentId: parentId !== undefined && parentId !== '' ? parentId : undefined, content: req.bundle.contents[tokenId], ...ftIdentity(tokenId, tip.tokenType, genesis) }
        }
        if (tip.owner !== req.receiver) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `token ${tokenId} does not end with this receiver as owner`)
        const value = floatToMilliExact(t.tokenValue)
        if (value === undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `token ${tokenId} has a bad value`)
        total += value
        incoming.push({
          tokenId,
          tokenType: tip.tokenType,
          valueMilli: value,
          owner: req.receiver,
          status: 'Free',
          latestBlockId: tip.blockId,
          ...known,
          txid: req.txid,
          updatedAt: now
        })
      }
      const tTokens = Date.now()
      await flagDiverged(memory.diverged, ledger, this.opts.doubleSpends, 'receiver', this.log)
      // nothing is stored: the sender delivers again with these ancestors' chains
      if (missing.length > 0) return { txid: req.txid, accepted: false, missing: [...new Set(missing)] }
      if (incoming.length === 0) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the contract transfers no token')
      const certified = await this.checkCertificate(req, contract, block, memory)
      const certs = await certificatesToKeep(ledger, certified)
      const tCert = Date.now()
      // the blocks and contents of tokens this node held before (change coming back, a part's
      // parent it burnt itself) are stored already: only what it lacks is written
      const ids = [...new Set([...Object.keys(req.bundle.chains), ...Object.keys(req.bundle.contents)])]
      const held = new Map((await ledger.tokensById(ids)).map((t, i) => [ids[i], t]))
      const chains: Array<[string, readonly Uint8Array[], number]> = []
      for (const [id, chain] of Object.entries(req.bundle.chains)) {
        // the ancestors learned now are written with their chains by storeLearned
        if (memory.learned.has(id)) continue
        // a chain of the bundle that validation did not read (an ancestor remembered here, a token
        // this node holds, anything else the sender put in) is the sender's word: kept only where
        // nothing of that token is stored yet, never over a stored chain (a payer could otherwise
        // overwrite the chains of the receiver's own tokens, or of the ancestors the burnt-ancestor
        // walk reads)
        if (ti.transTokens?.[id] === undefined && memory.checked?.has(id) !== true && (held.get(id) !== undefined || (await ledger.chain(id)).length > 0)) continue
        const from = storedPrefix(held.get(id)?.latestBlockId, chain)
        // a token validated from a state known here had only the blocks after it checked: the
        // blocks before it are stored only when they link up to it
        if (ti.transTokens?.[id] !== undefined && memory.checked?.has(id) !== true && !linksHold(chain, id, from)) {
          throw new RbtError(ErrorCode.VERIFICATION_FAILED, `the chain of token ${id} does not link up to the state validated here`)
        }
        chains.push([id, chain, from])
      }
      // likewise a content: a token of the transaction's, or one not stored here yet
      const storedContents = await ledger.recordsByKey<string>('cs-contents', Object.keys(req.bundle.contents))
      const contents = Object.entries(req.bundle.contents).filter(([id, c], i) => held.get(id)?.content !== c &&
        (ti.transTokens?.[id] !== undefined || (held.get(id)?.content === undefined && storedContents[i] === undefined)))
      await ledger.commit((w) => {
        storeLearned(w, memory)
        for (const [id, chain, from] of chains) for (let i = from; i < chain.length; i++) w.putBlock(id, i, chain[i])
        for (const [id, n] of extended) w.putBlock(id, n, req.block)
        for (const [id, c] of contents) w.putRecord('cs-contents', id, c)
        for (const [holder, seals] of certs) w.putRecord(ACCEPTED_CERTS, holder, seals)
        for (const t of incoming) w.putToken(t)
        const first = incoming[0]
        w.putTransaction({
          txid: req.txid, tokenType: contract.content.type === ContractType.NFT_EXECUTE ? 'nft' : carriesFt(block) ? 'ft' : 'rbt', sender: ti.sender ?? '', receiver: req.receiver, amountMilli: total, tokens: incoming.map((t) => t.tokenId),
          quorums: signers, memo: req.memo, epoch: req.epoch, role: 'receiver', blockId: first.latestBlockId, status: 'committed'
        })
        w.putRecord('cs-incoming', req.txid, { txid: req.txid, receiver: req.receiver, sender: ti.sender ?? '', at: now } satisfies IncomingRecord)
      })
      stored()
      try { this.opts.onReceived?.(req.txid, req.receiver, incoming.map((t) => ({ tokenId: t.tokenId, tokenType: t.tokenType }))) } catch (e) { this.log.debug(`onReceived: ${errorMessage(e)}`) }
      this.log.debug(`deliver ${req.txid.slice(0, 12)}: signers' pledges ${tSigners - t0} ms, ${incoming.length} tokens (${chainless.length} without a chain) ${tTokens - tSigners} ms, certificate ${tCert - tTokens} ms, commit ${Date.now() - tCert} ms`)
      this.opts.fault?.('received')
      return { txid: req.txid, accepted: true }
    })
  }

  /**
   * Of the states a transaction spends, the tokens this node holds there (receiverHolds): `did`
   * must be hosted here. Their delivery carries no chain.
   */
  async holds (did: string, states: readonly SpentState[]): Promise<string[]> {
    if (!await this.opts.isLocalDid(did)) throw new RbtError(ErrorCode.NOT_FOUND, `receiver ${did} is not hosted on this node`)
    return await heldStates(this.opts.ledger, states)
  }

  /** What a sender is told before its decision: the strict rule's list, when this node keeps it. */
  async policy (): Promise<ReceiverPolicy> {
    return this.opts.trustOwnQuorumList?.() === true ? { quorums: await this.opts.ownQuorums() } : {}
  }

  /**
   * The block's certificate (docs/protocol.md, "Seals"): every state the block spends (keyed on its
   * last quorum-signed state, as the signers claimed it) sealed to this transaction, and every burnt
   * ancestor those rest on sealed to its burn, each by more than two thirds of the state's arbiters
   * as this node counts them. A seal is the arbiters' word that the claim still held when the block
   * was signed and never ends: the receiver relies on no signer and no sender for it, so five
   * signers that are all the owner's, whose claims he released after their grants, get no seal once
   * another transaction holds the state. An NFT handed to a new owner is checked the same way: its
   * state, keyed as its quorums claim it (its spend anchor, GENESIS_ANCHOR at its deploy block),
   * sealed to this transaction; an NFT rests on no burnt ancestor. Nothing is checked here for a
   * deploy or a smart contract's transaction: no honest sender delivers one (each stays with its
   * initiator), it spends no state another receiver takes, and the chain rules refuse a deploy
   * that hands a new chain to anyone but its deployer (docs/protocol.md, "Seals").
   */
  private async checkCertificate (req: DeliverRequest, contract: DecodedContract, block: DecodedBlock, memory: AncestryMemory): Promise<PeerSeal[]> {
    const claims = this.opts.claims
    if (claims === undefined) return []
    const type = contract.content.type
    if (type === ContractType.NFT_DEPLOY || isScContractType(type)) return []
    const nft = type === ContractType.NFT_EXECUTE
    const states: Array<readonly [string, string]> = []
    for (const [tokenId, e] of Object.entries(block.content.transInfo.tokens)) {
      const chain = req.bundle.chains[tokenId] ?? await this.opts.ledger.chain(tokenId)
      if (chain === undefined || chain.length === 0) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `no chain of token ${tokenId} to find the state its certificate is for`)
      states.push([tokenId, spendAnchor(chain, parseBlockId(e.previousBlockId ?? '').number)])
    }
    // the burnt ancestors from chains validated here only: a bundle chain that validation skipped
    // (its ancestor remembered here) is the sender's word, and an empty one hid the ancestor
    let burns: BurnClaim[] = []
    try {
      if (!nft) burns = await validatorBurns(states, req.bundle, memory, this.opts.ledger, this.opts.verifier, this.cache)
    } catch (e) {
      throw new RbtError(ErrorCode.VERIFICATION_FAILED, `the block's certificate cannot be checked: ${errorMessage(e)}`)
    }
    const own = new Set(states.map(([id, b]) => stateHashOf(stateKey(id, b))))
    const items = [...[...own].map((stateHash) => ({ stateHash, holder: req.txid })), ...burns.filter((b) => !own.has(b.stateHash)).map((b) => ({ stateHash: b.stateHash, holder: b.spender }))]
    const seals = Array.isArray(req.seals) ? req.seals.filter(isPeerSeal) : []
    if (seals.length === 0) throw new RbtError(ErrorCode.CLAIM_UNREACHABLE, `${CERTIFICATE_SHORT}: the delivery carries no sealed grant (a sender from before seals)`)
    if (claims.checkSeals === undefined) throw new RbtError(ErrorCode.CLAIM_UNREACHABLE, 'the block\'s certificate cannot be checked by this node')
    const r = await claims.checkSeals(items, seals)
    if (!r.granted) throw new RbtError(ErrorCode.CLAIM_UNREACHABLE, `${CERTIFICATE_SHORT}: ${r.reason}`)
    return [...r.seals ?? [], ...await this.checkEarlierBlocks(req, block, claims, memory, r.seals ?? [])]
  }

  /**
   * The blocks before the delivered one that this node did not hold (docs/security.md,
   * "Laundering"): a second spend of a sealed state, signed by the owner's own quorums and taken by
   * a receiver of his own, made a state no arbiter had a record of, which was then paid on through
   * honest quorums. The arbiters of the state each such block spent are asked for their record of
   * it: the block is refused when enough of them hold that state for another transaction and too
   * few sealed it to the block's (priorSeals). A state nobody holds (from before seals, arbiters
   * gone) passes as before. The delivery carries the certificates the sender's node kept for those
   * blocks (`earlier`): a block certified by q(n) of them needs no arbiter asked, and a block an
   * arbiter contests stands only on such a certificate (docs/security.md, "Carried certificates").
   * Resolves to the verified seals, kept with the tokens for this node's own deliveries.
   */
  private async checkEarlierBlocks (req: DeliverRequest, block: DecodedBlock, claims: Pick<StateClaims, 'priorSeals'>, memory: AncestryMemory, certified: readonly PeerSeal[]): Promise<PeerSeal[]> {
    if (claims.priorSeals === undefined) return []
    // the block's tokens and every chain validation read (a part's parent, an FT's backing token:
    // one laundered before it was burnt is spent again through the parts paid on); not the other
    // chains of the bundle, whatever the sender put there (made-up blocks by the thousand, asked of
    // the arbiters ahead of the laundered one, would spend this node's budget at them)
    const chains = new Map<string, readonly Uint8Array[]>(memory.checked ?? [])
    for (const id of Object.keys(block.content.transInfo.tokens)) {
      const c = req.bundle.chains[id]
      if (c !== undefined) chains.set(id, c)
    }
    const ids = [...chains].filter(([, c]) => c.length >= 2).map(([id]) => id)
    if (ids.length === 0) return []
    // what this node stores of each chain already: its token record names the last block it holds,
    // counted only where the delivered chain has that very block there (a stored chain of another
    // fork, from when this node held the token on the branch the laundered one left, covers nothing)
    const records = await this.opts.ledger.tokensById(ids, { content: false })
    const items = ids.flatMap((id, i) => earlierSpends(id, chains.get(id)!, storedPrefix(records[i]?.latestBlockId, chains.get(id)!)))
    if (items.length === 0) return []
    // the certificates carried for the earlier blocks, and the delivered block's own just verified
    // (the chains end with it: its state needs no arbiter asked again)
    const carried = [...(Array.isArray(req.earlier) ? req.earlier.filter(isPeerSeal) : []), ...certified]
    const r = await claims.priorSeals(items, carried.length > 0 ? { carried } : {})
    if (r.refused !== undefined) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `an earlier block of the token was never certified: ${r.refused}`)
    // the arbiters could not tell (too many silent): not taken now, the sender delivers again
    if (r.unanswered !== undefined) throw new RbtError(ErrorCode.CLAIM_UNREACHABLE, `the earlier blocks of the token cannot be checked now: ${r.unanswered}; try again when the network is whole`)
    return r.seals ?? []
  }

  /**
   * Who may sign a block this node accepts (docs/protocol.md, "Receiver acceptance"). By default at
   * least 5 of the block's signers must each back their signature with a valid pledge: the tokens
   * the block's pledge details name, whose chains (delivered as evidence) validate, end at the named
   * block with the signer as owner, and are worth the share the protocol requires. With the strict
   * rule only signers of this node's quorum list count. Every signature itself was verified with
   * the chain.
   */
  private async checkSigners (req: DeliverRequest, block: Block, signers: string[], totalMilli: number): Promise<void> {
    const own = await this.opts.ownQuorums()
    if (this.opts.trustOwnQuorumList?.() === true) {
      const known = signers.filter((s) => own.includes(s))
      if (known.length < MIN_QUORUM_SIGNATURES) throw new RbtError(ErrorCode.VERIFICATION_FAILED, `this node accepts only quorums of its own list (trustOwnQuorumList): ${known.length} of the block's signers are in it, ${MIN_QUORUM_SIGNATURES} needed`)
      return
    }
    if (!Number.isInteger(totalMilli) || totalMilli < 0) throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'the contract states no valid total')
    const share = totalMilli === 0 ? 0 : pledgePerQuorum(totalMilli)
    const problems: string[] = []
    let backed = 0
    for (const did of signers) {
      const problem = await this.pledgeProblem(did, block, req.pledges, share, own)
      if (problem === undefined) backed++
      else problems.push(`${did}: ${problem}`)
    }
    if (backed < MIN_QUORUM_SIGNATURES) {
      throw new RbtError(ErrorCode.VERIFICATION_FAILED, `only ${backed} of the block's ${signers.length} signers back their signature with a valid pledge, ${MIN_QUORUM_SIGNATURES} needed (${problems.join('; ')})`)
    }
  }

  /** Why `did`'s pledge does not back its signature, or undefined when it does. */
  private async pledgeProblem (did: string, block: Block, evidence: ChainBundle | undefined, shareMilli: number, own: string[]): Promise<string | undefined> {
    const pledged = block.content.pledgeDetails?.[did] ?? []
    if (shareMilli === 0) return undefined
    if (pledged.length === 0) return 'the block states no pledge for it'
    // a sender from before pledge evidence: only the operator's own quorum list vouches
    if (evidence === undefined) return own.includes(did) ? undefined : 'no pledge evidence was delivered'
    let sum = 0
    for (const p of pledged) {
      let tip
      try {
        tip = await validateBundleToken(evidence, p.token, this.opts.verifier, this.cache)
      } catch (e) {
        return `pledged token ${p.token}: ${e instanceof Error ? e.message : String(e)}`
      }
      if (tip.owner !== did) return `pledged token ${p.token} belongs to ${tip.owner}`
      if (tip.blockId !== p.tokenBlockId) return `pledged token ${p.token} is at block ${tip.blockId}, the pledge names ${p.tokenBlockId}`
      if (tip.burnt) return `pledged token ${p.token} is burnt`
      if (!PLEDGEABLE.has(tip.tokenType)) return `pledged token ${p.token} is not an RBT token`
      const v = tip.value !== undefined ? floatToMilliExact(tip.value) : (tip.tokenType === TokenType.RBT || tip.tokenType === TokenType.TEST_RBT ? 1000 : undefined)
      if (v === undefined) return `pledged token ${p.token} has no value`
      sum += v
    }
    if (sum < shareMilli) return `pledged ${sum / 1000} RBT, ${shareMilli / 1000} RBT required`
    return undefined
  }
}

/** Token types a quorum pledges (whole and part RBT, test or not). */
const PLEDGEABLE = new Set<number>([TokenType.RBT, TokenType.PART, TokenType.TEST_RBT, TokenType.TEST_PART])


/**
 * The states spent by the quorum-signed blocks of `chain` from number `from` on (transfers and
 * executions; genesis and owner-only blocks spend no state a quorum claimed), each with the
 * transaction that spent it: what the arbiters of each state should have sealed it to.
 */
export function earlierSpends (tokenId: string, chain: readonly Uint8Array[], from: number): Array<{ stateHash: string, holder: string }> {
  const out: Array<{ stateHash: string, holder: string }> = []
  const start = Math.max(1, from)
  if (start >= chain.length) return out
  // the state each block spends: the last quorum-signed one before it, carried along the walk
  let anchor: string
  try { anchor = spendAnchor(chain, start - 1) } catch { return out }
  for (let i = start; i < chain.length; i++) {
    let b: DecodedBlock
    try { b = decodeBlockEnvelope(chain[i]!) } catch { return out }
    const tid = b.content.transInfo.tid
    if (tid !== undefined && tid !== '' && (b.content.quorumSignatures ?? []).length > 0 && b.content.transInfo.tokens[tokenId] !== undefined) {
      out.push({ stateHash: stateHashOf(stateKey(tokenId, anchor)), holder: spentBy(b, tokenId) ? tid : b.hash })
    }
    if (!OWNER_ONLY.has(b.content.transactionType)) anchor = formatBlockId(i, b.hash)
  }
  return out
}

/**
 * Whether block `b` is the block of the transaction its tid names, so that a seal of the state to
 * that transaction certifies this block: its embedded contract is that transaction's, moves this
 * token, and hands it to the block's owner. A block's tid alone is the signers' word (an "08" block
 * of the owner's own quorums, no contract, carrying the tid of his sealed first spend, counted the
 * arbiters' seals to that spend as its own): a block that is not is checked under its block hash
 * (64 hex, as a transaction id on the wire), a holder no arbiter ever sealed a state to.
 */
function spentBy (b: DecodedBlock, tokenId: string): boolean {
  if (b.content.smartContract === undefined) return false
  let c: DecodedContract
  try { c = decodeContract(b.content.smartContract) } catch { return false }
  if (c.transactionId !== b.content.transInfo.tid) return false
  const ti = c.content.transInfo
  if (ti.transTokens?.[tokenId] === undefined) return false
  return ti.receiver === undefined || ti.receiver === '' || ti.receiver === b.content.owner
}
