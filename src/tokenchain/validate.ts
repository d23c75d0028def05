/**
 * Whole-chain and incremental validation of one token's chain.
 *
 * Checks, per block, in this order (the first failure throws RbtError(CHAIN_INVALID) naming the
 * block number and the check):
 *  decode          the envelope and content decode, the content is canonical CBOR
 *  hash            a hash stated by the caller equals the recomputed SHA3-256 of the content
 *  token-entry     the block carries an entry for this token, with the chain's token type
 *  block-number    entry number = position in the chain (0, 1, 2, …)
 *  previous-block  entry's previous block ID = `<n-1>-<hash of block n-1>` ("" for the genesis)
 *  genesis         block 0 is a well-formed genesis for the token's kind and for this token ID
 *  transaction     the transaction type may appear at this position; nothing follows a burn
 *  owner           each transfer's sender (and contract sender) is the previous owner; blocks that
 *                  do not move the token keep the owner
 *  contract        embedded contract: TID = SHA3(contract), initiator hash = contract hash,
 *                  contract's token entry points at the previous block
 *  signature       every signature the block kind requires is present and verifies
 */
import { decodeBlockEnvelope, encodeBlockEnvelope, formatBlockId, parseBlockId, tokenEntry, type Block, type DecodedBlock } from './block.js'
import { decodeContract } from './contract.js'
import { isCidV0 } from './cid.js'
import { sha3Hex } from './hash.js'
import { floatToMilliExact } from './amount.js'
import { decodeRacEnvelope, racFromTokenContent } from './rac.js'
import { cidV0ForContent } from './cid.js'
import { ftTokenId, wholeTokenId } from './token-id.js'
import { RacType, TokenType, TransactionType, isDid, tokenKindOf, type TokenKind } from './types.js'
import { RbtError, ErrorCode, errorMessage } from '../util/errors.js'

export type SignerRole = 'owner' | 'quorum'

/**
 * Checks a DER signature (hex) made by `did` over the ASCII bytes of `messageAsciiHex` (the
 * reference signs only the leftmost 32 bytes). `role` says which key of the DID is meant:
 * its own key, or its quorum key.
 */
export interface SignatureVerifier {
  verify (did: string, messageAsciiHex: string, signatureHex: string, role?: SignerRole): Promise<boolean>
  /** Image-share (NLSS) signatures; when absent, NLSS signatures are rejected. */
  verifyNlss? (did: string, messageAsciiHex: string, shareSignatureHex: string, keySignatureHex: string, role?: SignerRole): Promise<boolean>
  /**
   * Optional observer: told after each chain validation that used this verifier, with the blocks
   * it checked and whether the chain passed (the node counts them for its metrics). Must not throw.
   */
  chainValidated? (blocks: number, valid: boolean): void
  /**
   * Optional: where whole chains are validated instead of on this thread (the node's worker pool).
   * `validateChain` hands every chain to it; it must give exactly what `validateChainHere` gives.
   */
  chains?: ChainValidator
}

/**
 * Port: something that validates whole chains, possibly elsewhere (worker threads), with the same
 * result and the same first failure as `validateChainHere` on this thread.
 */
export interface ChainValidator {
  validateChain (blocks: readonly ChainBlockInput[], ctx: ChainValidationContext): Promise<ChainValidationResult>
}

/** Tells the verifier's observer, if any, how a validation went; never lets it disturb the result. */
function observed<R extends { length: number }> (ctx: ChainValidationContext, run: Promise<R>): Promise<R> {
  if (ctx.verifier.chainValidated === undefined) return run
  const tell = (blocks: number, valid: boolean): void => { try { ctx.verifier.chainValidated?.(blocks, valid) } catch { /* observer only */ } }
  return run.then((r) => { tell(r.length, true); return r }, (e: unknown) => { tell(0, false); throw e })
}

/** Memo of envelopes whose signatures were already verified (a Set<string> fits). */
export interface VerifiedBlockCache {
  has (key: string): boolean
  add (key: string): unknown
}

export interface ChainValidationContext {
  tokenId: string
  verifier: SignatureVerifier
  cache?: VerifiedBlockCache
  /** Token content (RAC hex text) for RAC-backed tokens (test RBT, part): checked against the ID. */
  tokenContent?: string | Uint8Array
  /** Refuse a test-RBT/part chain when `tokenContent` is not given. Default false. */
  requireTokenContent?: boolean
  /** FT name; default: read from the genesis comment ("… for FT Name : <name>"). */
  ftName?: string
  /** Quorum signatures required on consensus blocks. Default 5 (the reference's minimum). */
  minQuorumSignatures?: number
  /** DIDs allowed to sign a migration ("03") genesis. When absent any verified signer is accepted. */
  arbitrationDids?: readonly string[]
  /** Fail unless the chain's token kind is this one. */
  expectedKind?: TokenKind
}

export interface ExtensionContext extends ChainValidationContext {
  /** Owner after the known tip; needed to check the first new block's sender when the tip is a bare ID. */
  tipOwner?: string
  tipTokenType?: number
}

export interface ChainTip {
  tokenId: string
  blockId: string
  blockNumber: number
  hash: string
  owner: string
  tokenType: number
  burnt: boolean
  /** Latest value written on the chain (RBT). */
  value?: number
  /**
   * The last state of the chain signed by quorums (or its genesis): the id of the latest block that
   * is not an owner-only "04", "06" or "11". Every double-spend record (claims, spent markers, a
   * quorum's held states, burnt ancestors) is keyed on it, not on the tip: see spendAnchor.
   * Undefined when not known (a tip read from elsewhere whose own block is owner-only).
   */
  anchorBlockId?: string
}

export interface ChainValidationResult {
  tokenId: string
  tokenType: number
  kind: TokenKind
  /** Blocks checked by this call. */
  length: number
  blockIds: string[]
  genesisOwner?: string
  tip: ChainTip
  signaturesVerified: number
  /** Blocks whose signature checks were skipped thanks to the cache. */
  cacheHits: number
  /** False only for an extension from a bare tip ID without `tipOwner`. */
  ownerLinkChecked: boolean
}

export type ChainBlockInput = Uint8Array | Block

class ChainCheckError extends Error {
  constructor (readonly check: string, message: string) { super(message) }
}

const fail = (check: string, msg: string): never => { throw new ChainCheckError(check, msg) }

function chainError (tokenId: string, blockNumber: number, e: unknown): RbtError {
  const check = e instanceof ChainCheckError ? e.check : 'decode'
  return new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId} block ${blockNumber}: ${check} check failed: ${errorMessage(e)}`, {
    cause: e, details: { tokenId, blockNumber, check }
  })
}

function normalise (input: ChainBlockInput): DecodedBlock {
  if (input instanceof Uint8Array) return decodeBlockEnvelope(input)
  const decoded = decodeBlockEnvelope(encodeBlockEnvelope(input))
  if (input.hash !== decoded.hash) fail('hash', `stated hash ${input.hash} differs from the recomputed ${decoded.hash}`)
  return decoded
}

const GENESIS_TYPES = new Set<string>([TransactionType.GENERATED, TransactionType.MIGRATED, TransactionType.DEPLOYED])
const QUORUM_SIGNED = new Set<string>([TransactionType.TRANSFERRED, TransactionType.DEPLOYED, TransactionType.EXECUTED, TransactionType.PINNED_AS_SERVICE])
/**
 * Blocks their owner signs alone that leave the token where it was (same owner, not burnt): the
 * reference writes "04"/"06" on a quorum's own pledged RBT and "11" on an RBT committed to a smart
 * contract. Anyone holding the owner's keys can append one, so two copies of a wallet can give one
 * state two different tips: a double-spend record keyed on the tip would let both spends through.
 * They are kept in chains (main-net chains hold them) but never make a new state to spend: see
 * spendAnchor.
 */
export const OWNER_ONLY = new Set<string>([TransactionType.PLEDGED, TransactionType.UNPLEDGED, TransactionType.CONTRACT_COMMITTED])
/**
 * The one state of a token at its genesis, whatever its block 0 holds. A genesis ("05" of a part,
 * an FT or a minted token) is signed by its owner alone and its token ID does not fix its bytes (a
 * comment, an epoch), so the owner can write two geneses of one token: keyed on the block's hash,
 * their two spends never met (a part kept by a split, paid twice; the claim of its burnt ancestor
 * is granted to every spend of a part of that burn). Every double-spend record of a token at its
 * genesis is keyed on this instead: see spendAnchor.
 */
export const GENESIS_ANCHOR = formatBlockId(0, '0'.repeat(64))
const NEEDS_INITIATOR = new Set<string>([TransactionType.TRANSFERRED, TransactionType.DEPLOYED, TransactionType.EXECUTED])

const FT_NAME_RE = / for FT Name : (.+)$/

interface WalkState {
  index: number
  prevId: string
  owner?: string
  tokenType?: number
  burnt: boolean
  value?: number
  genesisOwner?: string
  /** id of the last block that is not owner-only (see ChainTip.anchorBlockId); undefined: unknown */
  anchorId?: string
}

interface Counters { verified: number, cacheHits: number }

async function check (verifier: SignatureVerifier, c: Counters, did: string, msg: string, sig: string, role: SignerRole, what: string): Promise<void> {
  let ok = false
  try { ok = await verifier.verify(did, msg, sig, role) } catch (e) { fail('signature', `${what} by ${did} could not be checked: ${errorMessage(e)}`) }
  if (!ok) fail('signature', `${what} by ${did} does not verify`)
  c.verified++
}

async function checkNlss (verifier: SignatureVerifier, c: Counters, did: string, msg: string, share: string, key: string, role: SignerRole, what: string): Promise<void> {
  if (verifier.verifyNlss === undefined) fail('signature', `${what} by ${did} is an NLSS signature and no NLSS verifier is configured`)
  let ok = false
  try { ok = await verifier.verifyNlss!(did, msg, share, key, role) } catch (e) { fail('signature', `${what} by ${did} could not be checked: ${errorMessage(e)}`) }
  if (!ok) fail('signature', `${what} by ${did} does not verify`)
  c.verified++
}

/** Checks that depend only on the envelope bytes (signatures, embedded contract): cacheable. */
async function verifyBlockSignatures (b: DecodedBlock, ctx: ChainValidationContext, c: Counters): Promise<void> {
  const t = b.content.transactionType
  const sigs = b.signatures
  const ownerSigned = async (signer: string, role: SignerRole): Promise<void> => {
    const s = sigs[signer]
    if (s === undefined) fail('signature', `block is not signed by ${signer}`)
    await check(ctx.verifier, c, signer, b.hash, s!, role, 'block signature')
  }
  switch (t) {
    case TransactionType.GENERATED: case TransactionType.BURNT: case TransactionType.BURNT_FOR_FT:
      return ownerSigned(b.content.owner, 'owner')
    case TransactionType.PLEDGED: case TransactionType.UNPLEDGED:
      return ownerSigned(b.content.owner, 'quorum')
    case TransactionType.CONTRACT_COMMITTED:
      return ownerSigned(b.content.transInfo.deployer ?? b.content.owner, 'owner')
    case TransactionType.MIGRATED: {
      const signers = Object.keys(sigs)
      if (signers.length === 0) fail('signature', 'migration block carries no signature')
      for (const did of signers) {
        if (ctx.arbitrationDids !== undefined && !ctx.arbitrationDids.includes(did)) fail('signature', `${did} is not an arbitration DID`)
        await check(ctx.verifier, c, did, b.hash, sigs[did]!, 'owner', 'block signature')
      }
      return
    }
    default:
      if (!QUORUM_SIGNED.has(t)) fail('transaction', `unsupported transaction type "${t}"`)
  }
  // Consensus blocks: quorum signatures over the block hash and over the TID, sender over the contract.
  const min = ctx.minQuorumSignatures ?? 5
  const tid = b.content.transInfo.tid
  if (tid === undefined || !/^[0-9a-f]{64}$/.test(tid)) fail('contract', 'consensus block has no transaction ID')
  if (b.content.smartContract !== undefined) {
    let contract
    try { contract = decodeContract(b.content.smartContract) } catch (e) { fail('contract', `embedded contract does not decode: ${errorMessage(e)}`) }
    if (contract!.transactionId !== tid) fail('contract', `TID ${tid} is not the hash of the embedded contract (${contract!.transactionId})`)
    const init = b.content.initiatorSignature
    if (init !== undefined && init.hash !== contract!.hash) fail('contract', `initiator signed ${init.hash}, the contract hash is ${contract!.hash}`)
  } else if (t === TransactionType.TRANSFERRED) {
    fail('contract', 'transfer block carries no contract')
  }
  const credits = b.content.quorumSignatures ?? []
  if (credits.length < min) fail('signature', `${credits.length} quorum credit signatures, at least ${min} required`)
  const creditDids = new Set<string>()
  for (const cr of credits) {
    if (creditDids.has(cr.did)) fail('signature', `quorum ${cr.did} appears twice in the credit signatures`)
    creditDids.add(cr.did)
  }
  const signers = Object.keys(sigs)
  if (signers.length < min) fail('signature', `${signers.length} quorum block signatures, at least ${min} required`)
  for (const did of Object.keys(b.content.pledgeDetails ?? {})) {
    if (sigs[did] === undefined) fail('signature', `pledging quorum ${did} did not sign the block`)
  }
  for (const did of signers) {
    if (!creditDids.has(did)) fail('signature', `block signer ${did} is not among the quorum credit signers`)
  }
  // and every credit signer signed the block: a credit that never signs would otherwise rank among
  // the signers every validator computes (the designated checker among them) and move it
  for (const did of creditDids) {
    if (sigs[did] === undefined) fail('signature', `quorum ${did} gave a credit signature but did not sign the block`)
  }
  const jobs: Array<Promise<void>> = []
  for (const did of signers) jobs.push(check(ctx.verifier, c, did, b.hash, sigs[did]!, 'quorum', 'block signature'))
  for (const cr of credits) {
    if (cr.signType === '0') jobs.push(check(ctx.verifier, c, cr.did, tid!, cr.privSignature, 'quorum', 'credit signature over the TID'))
    else if (cr.signType === '1') jobs.push(checkNlss(ctx.verifier, c, cr.did, tid!, cr.signature, cr.privSignature, 'quorum', 'credit signature over the TID'))
    else fail('signature', `credit signature of ${cr.did} has unknown sign type "${cr.signType}"`)
  }
  const init = b.content.initiatorSignature
  if (init === undefined) {
    if (NEEDS_INITIATOR.has(t)) fail('signature', 'block carries no initiator signature')
  } else {
    const what = 'initiator signature over the contract hash'
    if (init.signType === 0) jobs.push(check(ctx.verifier, c, init.initiatorDid, init.hash, init.privSignature, 'owner', what))
    else if (init.signType === 1) jobs.push(checkNlss(ctx.verifier, c, init.initiatorDid, init.hash, init.nlssShareSignature, init.privSignature, 'owner', what))
    else fail('signature', `initiator signature has unknown sign type ${init.signType}`)
  }
  const results = await Promise.allSettled(jobs)
  for (const r of results) if (r.status === 'rejected') throw r.reason
}

function checkTokenContent (b: DecodedBlock, ctx: ChainValidationContext, kind: TokenKind, tokenType: number, value: number): Rac | undefined {
  if (ctx.tokenContent === undefined) {
    if (ctx.requireTokenContent === true) fail('genesis', `the ${kind} token content is needed to check the token ID`)
    return undefined
  }
  const text = typeof ctx.tokenContent === 'string' ? ctx.tokenContent : new TextDecoder().decode(ctx.tokenContent)
  if (cidV0ForContent(text) !== ctx.tokenId) fail('genesis', 'the token content does not hash to the token ID')
  let rac: Rac
  try { rac = racFromTokenContent(text) } catch (e) { fail('genesis', `token content is not a RAC block: ${errorMessage(e)}`) }
  if (rac!.content.did !== b.content.owner) fail('genesis', `token content names ${rac!.content.did}, the genesis owner is ${b.content.owner}`)
  if (kind === 'test-rbt' && rac!.content.type !== RacType.TEST_TOKEN) fail('genesis', `RAC type ${rac!.content.type} is not a test token`)
  if (kind === 'part') {
    const want = tokenType === TokenType.PART ? RacType.PART_TOKEN : RacType.TEST_PART_TOKEN
    if (rac!.content.type !== want) fail('genesis', `RAC type ${rac!.content.type} does not match token type ${tokenType}`)
    const p = rac!.content.partInfo
    const parent = b.content.genesis?.info[ctx.tokenId]?.parentId
    if (p === undefined || p.parentId !== parent) fail('genesis', 'RAC part info does not name the genesis parent')
    if (p!.value !== value) fail('genesis', `RAC part value ${p!.value} differs from the genesis value ${value}`)
  }
  if (rac!.signature === undefined) fail('genesis', 'token content RAC is not signed')
  return rac!
}

type Rac = ReturnType<typeof decodeRacEnvelope>

async function checkGenesis (b: DecodedBlock, ctx: ChainValidationContext, c: Counters): Promise<number> {
  const e = tokenEntry(b, ctx.tokenId)!
  if (e.previousBlockId !== '') fail('previous-block', `genesis links to "${e.previousBlockId}", expected ""`)
  const t = b.content.transactionType
  if (!GENESIS_TYPES.has(t)) fail('genesis', `transaction type "${t}" cannot start a chain`)
  const kind = tokenKindOf(e.tokenType)
  if (kind === undefined) fail('genesis', `unknown token type ${e.tokenType}`)
  if (ctx.expectedKind !== undefined && ctx.expectedKind !== kind) fail('genesis', `chain is a ${kind!} chain, expected ${ctx.expectedKind}`)
  const g = b.content.genesis
  if (g === undefined) fail('genesis', 'block 0 has no genesis section "4"')
  const info = Object.prototype.hasOwnProperty.call(g!.info, ctx.tokenId) ? g!.info[ctx.tokenId] : undefined
  if (info === undefined) fail('genesis', 'genesis section does not describe this token')
  const value = b.content.tokenValue
  const needValue = (): number => {
    if (value === undefined || floatToMilliExact(value) === undefined || value <= 0) fail('genesis', `token value ${String(value)} is not a positive 3-decimal amount`)
    return value!
  }
  const expectTypes = (tx: string, gt: string): void => {
    if (t !== tx || g!.type !== gt) fail('genesis', `a ${kind!} genesis must be "${tx}" with genesis type "${gt}", got "${t}"/"${g!.type}"`)
  }
  switch (kind) {
    case 'test-rbt': {
      expectTypes(TransactionType.GENERATED, TransactionType.GENERATED)
      if (info!.level !== 0 || info!.number !== 0) fail('genesis', 'a test token genesis has level 0 and number 0')
      if (value !== 1) fail('genesis', `a test token is worth 1.0, genesis says ${String(value)}`)
      const rac = checkTokenContent(b, ctx, kind, e.tokenType, 1)
      if (rac !== undefined) await check(ctx.verifier, c, b.content.owner, rac.hash, rac.signature!, 'owner', 'token content (RAC) signature')
      break
    }
    case 'part': {
      expectTypes(TransactionType.GENERATED, '')
      if (info!.parentId === undefined || !isCidV0(info!.parentId)) fail('genesis', 'a part token genesis must name its parent token')
      const v = needValue()
      if (v >= 1) fail('genesis', `a part token is worth less than 1, genesis says ${v}`)
      const rac = checkTokenContent(b, ctx, kind, e.tokenType, v)
      if (rac !== undefined) await check(ctx.verifier, c, b.content.owner, rac.hash, rac.signature!, 'owner', 'token content (RAC) signature')
      break
    }
    case 'ft': {
      expectTypes(TransactionType.GENERATED, '')
      needValue()
      if (info!.level !== 0) fail('genesis', 'an FT genesis has level 0')
      if (info!.parentId === undefined || info!.parentId === '') fail('genesis', 'an FT genesis must name the RBT tokens burnt for it')
      const name = ctx.ftName ?? FT_NAME_RE.exec(b.content.transInfo.comment ?? '')?.[1]
      if (name === undefined) fail('genesis', 'the FT name is unknown (no ftName given and none in the genesis comment)')
      let id = ''
      try { id = ftTokenId(name!, info!.number, b.content.owner) } catch (err) { fail('genesis', errorMessage(err)) }
      if (id !== ctx.tokenId) fail('genesis', `FT "${name!}" #${info!.number} by ${b.content.owner} has ID ${id}, not ${ctx.tokenId}`)
      break
    }
    case 'rbt': {
      expectTypes(TransactionType.MIGRATED, TransactionType.MIGRATED)
      if (info!.migratedBlockId === undefined || info!.migratedBlockId === '') fail('genesis', 'a migrated genesis must name the migrated block')
      let ids: string[] = []
      try {
        ids = [wholeTokenId(info!.level, info!.number)]
        if (info!.level === 1) ids.push(wholeTokenId(1, info!.number, { legacyTwoDigitLevel: true }))
      } catch (err) { fail('genesis', errorMessage(err)) }
      if (!ids.includes(ctx.tokenId)) fail('genesis', `level ${info!.level} number ${info!.number} is token ${ids[0]!}, not ${ctx.tokenId}`)
      break
    }
    case 'nft': case 'smart-contract':
      expectTypes(TransactionType.DEPLOYED, TransactionType.GENERATED)
      if (b.content.initiatorSignature !== undefined && b.content.initiatorSignature.initiatorDid !== b.content.owner) {
        fail('genesis', 'the deployer must own the new chain')
      }
      break
    default:
      fail('genesis', `${kind!} chains are not supported`)
  }
  return e.tokenType
}

/** Ownership rules between consecutive blocks. */
function checkTransition (b: DecodedBlock, s: WalkState, ctx: ChainValidationContext, kind: TokenKind): void {
  const t = b.content.transactionType
  const prevOwner = s.owner
  if (GENESIS_TYPES.has(t) && t !== TransactionType.DEPLOYED) fail('transaction', `"${t}" may only start a chain`)
  if (t === TransactionType.DEPLOYED) fail('transaction', '"09" may only start a chain')
  const sameOwner = (): void => {
    if (prevOwner !== undefined && b.content.owner !== prevOwner) fail('owner', `owner changed from ${prevOwner} to ${b.content.owner} in a "${t}" block`)
  }
  switch (t) {
    case TransactionType.TRANSFERRED: case TransactionType.PINNED_AS_SERVICE: {
      const sender = b.content.transInfo.sender
      if (sender === undefined) fail('owner', 'transfer block names no sender')
      if (prevOwner !== undefined && sender !== prevOwner) fail('owner', `sender ${sender!} is not the owner ${prevOwner}`)
      const receiver = b.content.transInfo.receiver
      if (t === TransactionType.TRANSFERRED && receiver !== undefined && receiver !== b.content.owner) fail('owner', `new owner ${b.content.owner} is not the receiver ${receiver}`)
      const init = b.content.initiatorSignature
      if (init !== undefined && init.initiatorDid !== sender) fail('owner', `initiator ${init.initiatorDid} is not the sender ${sender!}`)
      break
    }
    case TransactionType.EXECUTED:
      if (kind === 'nft') {
        const by = b.content.initiatorSignature?.initiatorDid
        if (prevOwner !== undefined && by !== prevOwner) fail('owner', `NFT executed by ${String(by)}, the owner is ${prevOwner}`)
      }
      break
    case TransactionType.PLEDGED: case TransactionType.UNPLEDGED: case TransactionType.CONTRACT_COMMITTED:
      // the reference pledges and commits RBT only (whole or part): on any other chain such a block
      // is one no honest node made
      if (kind !== 'rbt' && kind !== 'test-rbt' && kind !== 'part') fail('transaction', `an owner-only "${t}" block on a ${kind} chain`)
      sameOwner()
      break
    case TransactionType.BURNT: case TransactionType.BURNT_FOR_FT:
      sameOwner()
      break
    default:
      fail('transaction', `unsupported transaction type "${t}"`)
  }
  // The contract must spend this token from its previous block.
  if (b.content.smartContract !== undefined && (t === TransactionType.TRANSFERRED || t === TransactionType.PINNED_AS_SERVICE)) {
    let contract
    try { contract = decodeContract(b.content.smartContract) } catch (e) { fail('contract', `embedded contract does not decode: ${errorMessage(e)}`) }
    const ti = contract!.content.transInfo
    if (prevOwner !== undefined && ti.sender !== undefined && ti.sender !== prevOwner) fail('contract', `contract sender ${ti.sender} is not the owner ${prevOwner}`)
    const tok = ti.transTokens?.[ctx.tokenId]
    if (tok === undefined) fail('contract', 'the contract does not transfer this token')
    if (tok!.blockId !== undefined && tok!.blockId !== s.prevId) fail('contract', `contract spends block ${tok!.blockId}, the previous block is ${s.prevId}`)
  }
}

/** Cache key of a decoded block (digest of its envelope), computed once per decoded block. */
const envelopeKeys = new WeakMap<DecodedBlock, string>()
function envelopeKey (b: DecodedBlock): string {
  let k = envelopeKeys.get(b)
  if (k === undefined) { k = sha3Hex(b.envelopeBytes); envelopeKeys.set(b, k) }
  return k
}

async function walk (inputs: readonly ChainBlockInput[], start: WalkState, ctx: ChainValidationContext): Promise<{ state: WalkState, ids: string[], counters: Counters, last?: DecodedBlock }> {
  const counters: Counters = { verified: 0, cacheHits: 0 }
  const s = { ...start }
  const ids: string[] = []
  let last: DecodedBlock | undefined
  for (const input of inputs) {
    const n = s.index
    try {
      let b: DecodedBlock
      try { b = normalise(input) } catch (e) { if (e instanceof ChainCheckError) throw e; fail('decode', errorMessage(e)) }
      if (!b!.canonical) fail('decode', 'content is not canonical CBOR')
      const e = tokenEntry(b!, ctx.tokenId)
      if (e === undefined) fail('token-entry', 'block does not carry this token')
      if (e!.blockNumber !== String(n)) fail('block-number', `block is numbered "${e!.blockNumber}", expected "${n}"`)
      if (n === 0) {
        s.tokenType = await checkGenesis(b!, ctx, counters)
        s.genesisOwner = b!.content.owner
      } else {
        if (e!.previousBlockId !== s.prevId) fail('previous-block', `block links to "${e!.previousBlockId}", expected "${s.prevId}"`)
        if (s.tokenType !== undefined && e!.tokenType !== s.tokenType) fail('token-entry', `token type ${e!.tokenType} differs from the chain's ${s.tokenType}`)
        s.tokenType ??= e!.tokenType
        if (s.burnt) fail('transaction', 'the token was burnt; no block may follow')
        checkTransition(b!, s, ctx, tokenKindOf(s.tokenType) ?? 'rbt')
      }
      const key = envelopeKey(b!)
      if (ctx.cache?.has(key) === true) counters.cacheHits++
      else {
        await verifyBlockSignatures(b!, ctx, counters)
        ctx.cache?.add(key)
      }
      const t = b!.content.transactionType
      if (t === TransactionType.BURNT || t === TransactionType.BURNT_FOR_FT) s.burnt = true
      if (b!.content.tokenValue !== undefined) s.value = b!.content.tokenValue
      s.owner = b!.content.owner
      s.prevId = formatBlockId(n, b!.hash)
      if (!OWNER_ONLY.has(t)) s.anchorId = n === 0 ? GENESIS_ANCHOR : s.prevId
      ids.push(s.prevId)
      last = b!
    } catch (e) {
      throw chainError(ctx.tokenId, n, e)
    }
    s.index++
  }
  return { state: s, ids, counters, last }
}

function result (ctx: ChainValidationContext, r: Awaited<ReturnType<typeof walk>>, ownerLinkChecked: boolean): ChainValidationResult {
  const s = r.state
  const { number, hash } = parseBlockId(s.prevId)
  const tokenType = s.tokenType!
  return {
    tokenId: ctx.tokenId,
    tokenType,
    kind: tokenKindOf(tokenType) ?? 'rbt',
    length: r.ids.length,
    blockIds: r.ids,
    genesisOwner: s.genesisOwner,
    tip: { tokenId: ctx.tokenId, blockId: s.prevId, blockNumber: number, hash, owner: s.owner!, tokenType, burnt: s.burnt, value: s.value, ...(s.anchorId !== undefined ? { anchorBlockId: s.anchorId } : {}) },
    signaturesVerified: r.counters.verified,
    cacheHits: r.counters.cacheHits,
    ownerLinkChecked
  }
}

/** Were the signatures of this envelope verified here (is it in `cache`)? Nothing is checked now. */
export function knownVerified (envelope: Uint8Array, cache: VerifiedBlockCache | undefined): boolean {
  if (cache === undefined) return false
  try { return cache.has(envelopeKey(decodeBlockEnvelope(envelope))) } catch { return false }
}

/**
 * Verifies the signatures of one block envelope, exactly the checks a chain validation makes of a
 * block's own bytes, and remembers the envelope in `cache` when they hold. A node that verifies a
 * block outside a chain validation (a sender after its sign round, a quorum at FINALIZE) spares the
 * next validation of a chain holding those bytes its signature checks. Throws CHAIN_INVALID naming
 * the failing check; answers the number of signatures verified (0 when the cache knew the bytes).
 */
export async function verifyEnvelope (envelope: Uint8Array, ctx: Pick<ChainValidationContext, 'verifier' | 'cache' | 'minQuorumSignatures' | 'arbitrationDids'> & { tokenId?: string }): Promise<number> {
  const counters: Counters = { verified: 0, cacheHits: 0 }
  let b: DecodedBlock | undefined
  try {
    b = decodeBlockEnvelope(envelope)
    const key = envelopeKey(b)
    if (ctx.cache?.has(key) === true) return 0
    await verifyBlockSignatures(b, { tokenId: ctx.tokenId ?? '', ...ctx }, counters)
    ctx.cache?.add(key)
    return counters.verified
  } catch (e) {
    const tokenId = ctx.tokenId ?? (b !== undefined ? Object.keys(b.content.transInfo.tokens)[0] : undefined) ?? '?'
    throw chainError(tokenId, Number(b?.content.transInfo.tokens[tokenId]?.blockNumber ?? 0), e)
  }
}

/**
 * Validates a whole chain, genesis first. Throws RbtError(CHAIN_INVALID) on the first failure.
 * When the verifier names a `ChainValidator` (`verifier.chains`), the chain is validated there.
 */
export async function validateChain (blocks: readonly ChainBlockInput[], ctx: ChainValidationContext): Promise<ChainValidationResult> {
  if (blocks.length === 0) throw emptyChain(ctx.tokenId)
  const elsewhere = ctx.verifier.chains
  return await observed(ctx, elsewhere !== undefined ? elsewhere.validateChain(blocks, ctx) : validateChainHere(blocks, ctx))
}

const emptyChain = (tokenId: string): RbtError =>
  new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: the chain is empty`, { details: { tokenId, blockNumber: 0, check: 'length' } })

/**
 * `validateChain` on this thread, without handing the chain on and without telling the observer:
 * what a `ChainValidator` runs. With `after` (the state after block `after.blockNumber`, as
 * `chainTipOf` reads it from that block), `blocks` are the chain's blocks from the next number
 * on: a slice of a longer chain. Every link to `after` is checked as in a whole-chain walk, so
 * the slices of a chain, each valid, make a valid chain, and the first slice that fails fails
 * at the block a whole-chain walk would. The result of a slice has no genesis owner and its
 * tip's value is undefined unless a block of the slice states one.
 */
export async function validateChainHere (blocks: readonly ChainBlockInput[], ctx: ChainValidationContext, after?: ChainTip): Promise<ChainValidationResult> {
  if (blocks.length === 0) throw emptyChain(ctx.tokenId)
  const start: WalkState = after === undefined
    ? { index: 0, prevId: '', burnt: false }
    : { index: after.blockNumber + 1, prevId: after.blockId, owner: after.owner, tokenType: after.tokenType, burnt: after.burnt, anchorId: after.anchorBlockId }
  return result(ctx, await walk(blocks, start, ctx), true)
}

/**
 * The walk state after `block` (number `n` of `tokenId`'s chain) as a tip, read from the block
 * alone, not validated: where a slice of the chain starting at `n + 1` begins. Undefined when the
 * block does not decode or does not carry the token (then the slice ending there fails first).
 */
export function chainTipOf (block: Uint8Array, tokenId: string, n: number): ChainTip | undefined {
  try {
    const b = decodeBlockEnvelope(block)
    const e = tokenEntry(b, tokenId)
    if (e === undefined) return undefined
    const t = b.content.transactionType
    const blockId = formatBlockId(n, b.hash)
    return { tokenId, blockId, blockNumber: n, hash: b.hash, owner: b.content.owner, tokenType: e.tokenType, burnt: t === TransactionType.BURNT || t === TransactionType.BURNT_FOR_FT, ...(OWNER_ONLY.has(t) ? {} : { anchorBlockId: n === 0 ? GENESIS_ANCHOR : blockId }) }
  } catch {
    return undefined
  }
}

/**
 * Every DID a validation of these blocks may need a key of, found by scanning the envelope bytes
 * for DID-shaped text (`bafybmi` and 52 base32 characters) without decoding them: the signers of
 * the block, of the credits and of the contract, the owners, and any other DID the blocks name.
 * For fetching keys ahead of a validation; a DID it misses is simply looked up when needed.
 */
export function didsIn (blocks: readonly Uint8Array[]): Set<string> {
  const out = new Set<string>()
  for (const bytes of blocks) {
    const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
    for (let at = buf.indexOf(DID_HEAD); at >= 0; at = buf.indexOf(DID_HEAD, at + DID_LEN)) {
      if (at + DID_LEN > buf.length) break
      const did = buf.toString('latin1', at, at + DID_LEN)
      if (isDid(did)) out.add(did)
    }
  }
  return out
}

const DID_HEAD = Buffer.from('bafybmi', 'latin1')
const DID_LEN = 59

/** One result for a chain validated in consecutive slices (each from `validateChainHere`), in order. */
export function joinSliceResults (parts: readonly ChainValidationResult[]): ChainValidationResult {
  const first = parts[0]!
  const last = parts[parts.length - 1]!
  let value: number | undefined
  for (let i = parts.length - 1; i >= 0 && value === undefined; i--) value = parts[i]!.tip.value
  return {
    tokenId: first.tokenId,
    tokenType: first.tokenType,
    kind: first.kind,
    length: parts.reduce((n, p) => n + p.length, 0),
    blockIds: parts.flatMap((p) => p.blockIds),
    genesisOwner: first.genesisOwner,
    tip: { ...last.tip, value },
    signaturesVerified: parts.reduce((n, p) => n + p.signaturesVerified, 0),
    cacheHits: parts.reduce((n, p) => n + p.cacheHits, 0),
    ownerLinkChecked: true
  }
}

/**
 * Validates blocks that extend an already-validated chain whose tip is `knownTip` (a ChainTip from
 * an earlier validation, or a bare block ID plus `ctx.tipOwner`/`ctx.tipTokenType`).
 */
export async function validateExtension (knownTip: string | ChainTip, newBlocks: readonly ChainBlockInput[], ctx: ExtensionContext): Promise<ChainValidationResult> {
  const tipId = typeof knownTip === 'string' ? knownTip : knownTip.blockId
  let parsed: { number: number, hash: string }
  try { parsed = parseBlockId(tipId) } catch (e) { throw new RbtError(ErrorCode.INVALID_INPUT, errorMessage(e)) }
  if (typeof knownTip !== 'string' && knownTip.tokenId !== ctx.tokenId) throw new RbtError(ErrorCode.INVALID_INPUT, `tip belongs to ${knownTip.tokenId}, not ${ctx.tokenId}`)
  const start: WalkState = typeof knownTip === 'string'
    ? { index: parsed.number + 1, prevId: tipId, owner: ctx.tipOwner, tokenType: ctx.tipTokenType, burnt: false }
    : { index: parsed.number + 1, prevId: tipId, owner: knownTip.owner, tokenType: knownTip.tokenType, burnt: knownTip.burnt, value: knownTip.value, anchorId: knownTip.anchorBlockId }
  if (newBlocks.length === 0) {
    if (start.owner === undefined || start.tokenType === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'no new blocks and the tip is only an ID')
    return {
      tokenId: ctx.tokenId, tokenType: start.tokenType, kind: tokenKindOf(start.tokenType) ?? 'rbt', length: 0, blockIds: [],
      tip: { tokenId: ctx.tokenId, blockId: tipId, blockNumber: parsed.number, hash: parsed.hash, owner: start.owner, tokenType: start.tokenType, burnt: start.burnt, value: start.value, ...(start.anchorId !== undefined ? { anchorBlockId: start.anchorId } : {}) },
      signaturesVerified: 0, cacheHits: 0, ownerLinkChecked: true
    }
  }
  return await observed(ctx, walk(newBlocks, start, ctx).then((r) => result(ctx, r, start.owner !== undefined)))
}

/**
 * The state a spend of a chain's block `at` (default: its tip) really spends: the id of the latest
 * block at or before it that is not owner-only ("04", "06", "11"), the chain's last quorum-signed
 * state (or GENESIS_ANCHOR, the one state of every genesis). From one state, `… → bob` and `… → 11 → carol` are two spends of the
 * same state: keyed on their tips they never meet, keyed on this they do. Reads the blocks from
 * `at` back, decoding only those it passes (usually one). Throws when a block does not decode.
 */
export function spendAnchor (chain: readonly Uint8Array[], at = chain.length - 1): string {
  for (let i = at; i >= 0; i--) {
    const b = decodeBlockEnvelope(chain[i]!)
    if (i === 0) return GENESIS_ANCHOR
    if (!OWNER_ONLY.has(b.content.transactionType)) return formatBlockId(i, b.hash)
  }
  throw new RbtError(ErrorCode.CHAIN_INVALID, 'empty chain has no state to spend')
}
