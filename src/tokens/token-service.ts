/**
 * The token domain service: minting local test RBT, splitting tokens into parts, ingesting chains
 * that arrive from elsewhere (validated before anything is stored), balances, token lists and
 * chain dumps. Storage goes through the repositories and the ledger; signing through a
 * `TokenSigner` the caller binds to the two-step flow. No HTTP, no libp2p.
 */
import { timeInComment } from '../util/go-time.js'
import {
  blockIdFor, createBlock, createRac, decodeBlockEnvelope, encodeBlockEnvelope, encodeRacEnvelope,
  floatToMilliExact, formatAmount, formatBlockId, isCidV0, isDid, racTokenContent,
  racTokenId, RacType, setSignature, sha3Hex, testTokenGenesis, TokenType, TransactionType, validateChain,
  type Block, type ChainValidationResult, type SignatureVerifier, type TokenKind
} from '../tokenchain/index.js'
import { buildSplit } from './part-split.js'
import type { TokenLedger, StoredBlockInput } from '../storage/token-ledger.js'
import type { TokenRepositories } from '../storage/token-repositories.js'
import {
  familyOf, TokenStatus, type BalanceRecord, type BlockRecord, type TokenFamily, type TokenKindName, type TokenRecord, type TransactionRecord
} from '../storage/token-records.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { referenceDumpMap, type DumpValue } from '../tokenchain/dump-map.js'

/** Signs the ASCII of a hex hash as `did` (PvtSign), answering the DER signature as hex. */
export interface TokenSigner {
  readonly did: string
  sign: (hashHex: string) => Promise<string>
}

export interface TokenServiceOptions {
  ledger: TokenLedger
  repos: TokenRepositories
  /** Verifier used for every chain that arrives from outside. */
  verifier: SignatureVerifier
  /** Whether this node may mint local test RBT (test or local network). */
  localMint: { allowed: boolean, refusal: string }
  /** Whether the wire types are the test-net ones (test RBT 3, test part 5). Default true. */
  testNet?: boolean
  now?: () => number
  /** Largest number of tokens one mint call may create. */
  maxMintPerCall?: number
}

/** A mint; without `startIndex` it continues from the DID's next free index (one past the highest minted). */
export interface MintRequest { did: string, count: number, startIndex?: number }
export interface MintResult { did: string, tx_id: string, count: number, start_index: number, token_ids: string[] }

export interface SplitResult { tx_id: string, parent: string, parts: Array<{ token_id: string, value: number }> }

export interface RbtBalance { balance: number, locked: number, pledged: number, pinned: number }
export interface FtBalanceItem { name: string, creator: string, count: number, value: number }
export interface NftBalanceItem { nft_id: string, value: number }
export interface Balances { did: string, rbt_balance: RbtBalance[], ft_balance: FtBalanceItem[], nft_balance: NftBalanceItem[] }
export interface AccountInfo { did: string, did_type: number, rbt_amount: number, pledged_rbt: number, locked_rbt: number, pinned_rbt: number }

export interface TokenListItem {
  token_id: string
  token_type: number
  kind: TokenKindName
  token_value: number
  token_status: string
  token_status_code: number
  did: string
  parent_token_id: string
  transaction_id: string
  latest_block_id: string
}

export interface ChainDumpBlock {
  number: number
  block_id: string
  hash: string
  type: string
  type_name: string
  owner: string
  signers: string[]
  tx_id: string
  sender?: string
  receiver?: string
  comment?: string
  value?: number
  child_tokens?: string[]
  epoch?: number
  /** ISO time: the block's epoch when it has one, else the time its comment names (Go text), else when this node stored it. */
  time: string
  /** Envelope bytes, base64. */
  envelope: string
  /** The block as the reference's dump.json holds it (asked for with `maps`). */
  map?: { [key: string]: DumpValue }
}

export interface ChainDump {
  token_id: string
  token_type: number
  kind: TokenKindName
  owner: string
  status: string
  value: number
  length: number
  blocks: ChainDumpBlock[]
  next_block_id: string
}

export interface IngestOptions {
  /** Status the token gets on this node after ingestion. */
  status: TokenStatus
  /** Token content (RAC hex) of RAC-backed tokens; checked against the token id when given. */
  tokenContent?: string
  /** Refuse a RAC-backed chain without its content. Default false. */
  requireTokenContent?: boolean
  txId?: string
  minQuorumSignatures?: number
}

export const TRANSACTION_TYPE_NAMES: Record<string, string> = {
  '01': 'Minted', '02': 'Transferred', '03': 'Migrated', '04': 'Pledged', '05': 'Generated', '06': 'Unpledged', '07': 'Committed',
  '08': 'Burnt', '09': 'Deployed', '10': 'Executed', '11': 'ContractCommitted', '12': 'PinnedAsService', '13': 'BurntForFT'
}

const STATUS_CODES: Record<string, number> = Object.fromEntries(Object.values(TokenStatus).map((s, i) => [s, i]))

/** The storage kind of a chain's token kind. */
export const kindName = (k: TokenKind): TokenKindName => {
  switch (k) {
    case 'rbt': case 'test-rbt': return 'rbt'
    case 'part': return 'part'
    case 'ft': return 'ft'
    case 'nft': return 'nft'
    case 'smart-contract': return 'sc'
    default: throw new RbtError(ErrorCode.INVALID_INPUT, `${k} tokens are not kept by this node`)
  }
}

/** Go's time.Time String() layout without the monotonic part: "2006-01-02 15:04:05.999999999 +0000 UTC". */
export function goTimeString (ms: number): string {
  const d = new Date(ms)
  const p = (n: number, w = 2): string => String(n).padStart(w, '0')
  const frac = d.getUTCMilliseconds() === 0 ? '' : '.' + p(d.getUTCMilliseconds(), 3).replace(/0+$/, '')
  return `${d.getUTCFullYear()}-${p(d.getUTCMonth() + 1)}-${p(d.getUTCDate())} ${p(d.getUTCHours())}:${p(d.getUTCMinutes())}:${p(d.getUTCSeconds())}${frac} +0000 UTC`
}

const milliOf = (v: number | undefined): number | undefined => v === undefined ? undefined : floatToMilliExact(v)
const rbt = (m: number | undefined): number => (m ?? 0) / 1000

/** The readable summary stored for one block of one token's chain. */
export function blockRecordOf (tokenId: string, b: Block, storedAt: number): Omit<BlockRecord, 'bodyKey'> {
  const e = b.content.transInfo.tokens[tokenId]!
  const number = Number(e.blockNumber)
  const rec: Omit<BlockRecord, 'bodyKey'> = {
    tokenId,
    number,
    blockId: formatBlockId(number, b.hash),
    hash: b.hash,
    transactionType: b.content.transactionType,
    owner: b.content.owner,
    signers: Object.keys(b.signatures).sort(),
    storedAt
  }
  const t = b.content.transInfo
  if (t.tid !== undefined) rec.txId = t.tid
  if (t.sender !== undefined) rec.sender = t.sender
  if (t.receiver !== undefined) rec.receiver = t.receiver
  if (t.comment !== undefined) rec.comment = t.comment
  const v = milliOf(b.content.tokenValue)
  if (v !== undefined) rec.value = v
  if (b.content.childTokens.length > 0) rec.childTokens = [...b.content.childTokens]
  if (b.content.epoch !== undefined) rec.epoch = b.content.epoch
  return rec
}

/** One stored block as the chain dumps show it. */
export function chainDumpBlock (b: BlockRecord, envelope: Uint8Array): ChainDumpBlock {
  // a block without an epoch: the time its comment names (the reference's geneses and burns), else when it was stored
  const when = b.epoch !== undefined ? b.epoch * 1000 : timeInComment(b.comment) ?? b.storedAt
  const out: ChainDumpBlock = {
    number: b.number,
    block_id: b.blockId,
    hash: b.hash,
    type: b.transactionType,
    type_name: TRANSACTION_TYPE_NAMES[b.transactionType] ?? 'Unknown',
    owner: b.owner,
    signers: b.signers,
    tx_id: b.txId ?? '',
    time: when !== undefined ? new Date(when).toISOString() : '',
    envelope: Buffer.from(envelope).toString('base64')
  }
  if (b.sender !== undefined) out.sender = b.sender
  if (b.receiver !== undefined) out.receiver = b.receiver
  if (b.comment !== undefined) out.comment = b.comment
  if (b.value !== undefined) out.value = rbt(b.value)
  if (b.childTokens !== undefined) out.child_tokens = b.childTokens
  if (b.epoch !== undefined) out.epoch = b.epoch
  return out
}

function rbtOf (b: BalanceRecord | undefined): RbtBalance {
  const s = b?.sums.rbt ?? {}
  return { balance: rbt(s.Free), locked: rbt(s.Locked), pledged: rbt(s.Pledged), pinned: rbt(s.PinnedAsService) }
}

function ftOf (b: BalanceRecord | undefined): FtBalanceItem[] {
  return Object.values(b?.ftGroups ?? {}).map((g) => ({ name: g.name, creator: g.creator, count: g.count, value: rbt(g.value) }))
}

export class TokenService {
  private readonly ledger: TokenLedger
  private readonly repos: TokenRepositories
  private readonly verifier: SignatureVerifier
  private readonly now: () => number
  private readonly testNet: boolean
  private readonly maxMint: number
  /** Envelope digests whose signatures were already verified (bounded). */
  private readonly verified = new Set<string>()
  /** Per DID, the index after the last one handed to a mint without a start index (see mintStart). */
  private readonly mintReserved = new Map<string, number>()

  constructor (private readonly opts: TokenServiceOptions) {
    this.ledger = opts.ledger
    this.repos = opts.repos
    this.verifier = opts.verifier
    this.now = opts.now ?? Date.now
    this.testNet = opts.testNet ?? true
    this.maxMint = opts.maxMintPerCall ?? 10_000
  }

  // ------------------------------------------------------------------ minting

  /** Input checks of a mint, done before any password is asked for. */
  checkMintRequest (req: MintRequest): void {
    if (!this.opts.localMint.allowed) throw new RbtError(ErrorCode.FORBIDDEN, this.opts.localMint.refusal)
    if (!isDid(req.did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    if (!Number.isSafeInteger(req.count) || req.count <= 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid RBT amount, tokens generated should be a whole number and greater than 0')
    if (req.count > this.maxMint) throw new RbtError(ErrorCode.INVALID_INPUT, `at most ${this.maxMint} tokens can be generated per call, ${req.count} asked`)
    if (req.startIndex === undefined) return
    if (!Number.isSafeInteger(req.startIndex) || req.startIndex < 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'start_index must be a whole number, 0 or greater')
    if (req.startIndex + req.count > Number.MAX_SAFE_INTEGER) throw new RbtError(ErrorCode.INVALID_INPUT, 'start_index is too large')
  }

  /**
   * The first index of a mint: the one asked for, or the DID's next free index. Indexes handed out
   * to mints still under way are reserved in memory, so concurrent mints for one DID never take
   * the same index (the ledger's commit refuses a clash in any case). The reservation is taken
   * synchronously after the ledger read, so no other mint interleaves between the two.
   */
  private async mintStart (req: MintRequest): Promise<number> {
    if (req.startIndex !== undefined) {
      await this.ledger.checkMintIndexesFree(req.did, req.startIndex, req.count)
      // a mint without a start index running meanwhile goes after these indexes
      this.mintReserved.set(req.did, Math.max(this.mintReserved.get(req.did) ?? 0, req.startIndex + req.count))
      return req.startIndex
    }
    const stored = await this.ledger.nextMintIndex(req.did)
    const start = Math.max(stored, this.mintReserved.get(req.did) ?? 0)
    this.mintReserved.set(req.did, start + req.count)
    return start
  }

  /** Everything that can be checked before a password is asked for: input, mode, free indexes. */
  async precheckMint (req: MintRequest): Promise<void> {
    this.checkMintRequest(req)
    if (req.startIndex !== undefined) await this.ledger.checkMintIndexesFree(req.did, req.startIndex, req.count)
  }

  /**
   * Mints `count` whole test RBT for `did`, numbered from `startIndex` (or from the DID's next
   * free index when none is given): each token is a RAC block
   * (type test token, number = its index) signed by the owner, whose hex text is the token content
   * and whose CIDv0 is the token id; each gets a signed "05" genesis. Tokens, blocks, contents, the
   * transaction record and the balance are written in one atomic batch. An explicit index already
   * minted for this DID is refused.
   */
  async mintLocalRbt (req: MintRequest, signer: TokenSigner): Promise<MintResult> {
    this.checkMintRequest(req)
    if (signer.did !== req.did) throw new RbtError(ErrorCode.INTERNAL, 'signer does not match the minting DID')
    const startIndex = await this.mintStart(req)
    const now = this.now()
    const ts = goTimeString(now)
    const tokens: Array<{ record: TokenRecord, expect: { exists: false } }> = []
    const blocks: StoredBlockInput[] = []
    const contents: Record<string, string> = {}
    const mintIndexes: Array<{ did: string, index: number, tokenId: string }> = []
    for (let i = 0; i < req.count; i++) {
      const index = startIndex + i
      const rac = createRac({ type: RacType.TEST_TOKEN, version: 1, did: req.did, tokenNumber: index, totalSupply: 1, timestamp: ts })
      rac.signature = await signer.sign(rac.hash)
      const racEnv = encodeRacEnvelope(rac)
      const tokenId = racTokenId(racEnv)
      let block: Block = createBlock(testTokenGenesis({ tokenId, owner: req.did, comment: `Test token generated at : ${ts}` }))
      block = setSignature(block, req.did, await signer.sign(block.hash))
      const envelope = encodeBlockEnvelope(block)
      const blockId = blockIdFor(block, tokenId)
      contents[tokenId] = racTokenContent(racEnv)
      blocks.push({ record: blockRecordOf(tokenId, block, now), envelope })
      mintIndexes.push({ did: req.did, index, tokenId })
      tokens.push({
        record: {
          tokenId, kind: 'rbt', tokenType: TokenType.TEST_RBT, value: 1000, owner: req.did, status: TokenStatus.Free,
          latestBlockId: blockId, latestBlockNumber: 0, createdAt: now, updatedAt: now, txId: ''
        },
        expect: { exists: false }
      })
    }
    const tokenIds = tokens.map((t) => t.record.tokenId)
    const txId = sha3Hex(`mint:${req.did}:${tokenIds.join(',')}`)
    for (const t of tokens) t.record.txId = txId
    const tx: TransactionRecord = {
      txId, kind: 'mint', transactionType: TransactionType.GENERATED, initiator: req.did, tokens: tokenIds, amount: req.count * 1000,
      comment: `local RBT ${startIndex}..${startIndex + req.count - 1}`, status: 'committed',
      blockIds: blocks.map((b) => b.record.blockId), epoch: Math.floor(now / 1000), createdAt: now, updatedAt: now
    }
    await this.ledger.commit({ tokens, blocks, contents, mintIndexes, transactions: [tx] })
    return { did: req.did, tx_id: txId, count: req.count, start_index: startIndex, token_ids: tokenIds }
  }

  // ------------------------------------------------------------------ splitting

  /**
   * Splits a Free token of the signer into two part tokens worth `need` and the rest (milli-RBT):
   * the parts get RAC-backed ids and signed "05" genesis blocks naming the parent, the parent gets a
   * signed "08" burnt block, and everything commits in one batch, provided the parent is still
   * Free at the same block (otherwise CONFLICT and nothing changes).
   */
  async splitToken (tokenId: string, need: number, signer: TokenSigner): Promise<SplitResult> {
    const parent = await this.requireToken(tokenId)
    if (parent.owner !== signer.did) throw new RbtError(ErrorCode.FORBIDDEN, `token ${tokenId} is owned by ${parent.owner}, not ${signer.did}`)
    if (parent.status !== TokenStatus.Free) throw new RbtError(ErrorCode.CONFLICT, `token ${tokenId} is ${parent.status}, only Free tokens can be split`)
    if (parent.kind !== 'rbt' && parent.kind !== 'part') throw new RbtError(ErrorCode.INVALID_INPUT, `only RBT tokens can be split, ${tokenId} is ${parent.kind}`)
    if (!Number.isSafeInteger(need) || need <= 0 || need >= parent.value) {
      throw new RbtError(ErrorCode.INVALID_INPUT, `cannot split ${formatAmount(parent.value)} RBT to take ${Number.isSafeInteger(need) && need > 0 ? formatAmount(need) : String(need)}: each part must be at least 0.001`)
    }
    const latest = await this.repos.blocks.latest(tokenId)
    if (latest === undefined) throw new RbtError(ErrorCode.STORAGE, `token ${tokenId} has no stored chain`)
    const [prevEnv] = await this.repos.blocks.envelopes([latest])
    const now = this.now()
    const ts = goTimeString(now)
    const test = parent.tokenType === TokenType.TEST_RBT || parent.tokenType === TokenType.TEST_PART || (this.testNet && parent.tokenType !== TokenType.RBT && parent.tokenType !== TokenType.PART)
    const built = await buildSplit({ tokenId, tokenType: parent.tokenType, valueMilli: parent.value, owner: parent.owner, parentId: parent.parent }, prevEnv!, need, signer, {
      test, timestamp: ts, partComment: `Part token generated at : ${ts}`, burnComment: `Token burnt for parts at : ${ts}`
    })
    const blocks: StoredBlockInput[] = []
    const contents: Record<string, string> = {}
    const partRecords: TokenRecord[] = built.parts.map((p) => {
      contents[p.tokenId] = p.content
      blocks.push({ record: blockRecordOf(p.tokenId, p.block, now), envelope: p.genesis })
      return {
        tokenId: p.tokenId, kind: 'part' as const, tokenType: p.tokenType, value: p.valueMilli, owner: signer.did, status: TokenStatus.Free, parent: tokenId,
        latestBlockId: p.blockId, latestBlockNumber: 0, createdAt: now, updatedAt: now
      }
    })
    const burnt = built.burn.block
    const burntRec = blockRecordOf(tokenId, burnt, now)
    blocks.push({ record: burntRec, envelope: built.burn.envelope })
    const values = [need, parent.value - need]
    const txId = sha3Hex(`split:${tokenId}:${burnt.hash}`)
    for (const p of partRecords) p.txId = txId
    const tx: TransactionRecord = {
      txId, kind: 'split', transactionType: TransactionType.BURNT, initiator: signer.did, tokens: [tokenId, ...partRecords.map((p) => p.tokenId)],
      amount: parent.value, comment: `split ${formatAmount(parent.value)} into ${formatAmount(values[0]!)} + ${formatAmount(values[1]!)}`,
      status: 'committed', blockIds: blocks.map((b) => b.record.blockId), epoch: Math.floor(now / 1000), createdAt: now, updatedAt: now
    }
    await this.ledger.commit({
      tokens: [
        { record: { ...parent, status: TokenStatus.Burnt, latestBlockId: burntRec.blockId, latestBlockNumber: burntRec.number, txId }, expect: { status: [TokenStatus.Free], owner: signer.did, latestBlockId: parent.latestBlockId } },
        ...partRecords.map((record) => ({ record, expect: { exists: false } }))
      ],
      blocks,
      contents,
      transactions: [tx]
    })
    return { tx_id: txId, parent: tokenId, parts: partRecords.map((p) => ({ token_id: p.tokenId, value: rbt(p.value) })) }
  }

  // ------------------------------------------------------------------ chains from outside

  /**
   * Validates a whole chain (every link and every signature) and stores it with the given status.
   * When this node already holds the token, the incoming chain must extend the stored one (same
   * block ids up to the stored tip); a fork is refused. Nothing is stored unless all checks pass.
   */
  async ingestChain (tokenId: string, envelopes: Uint8Array[], opts: IngestOptions): Promise<{ token: TokenRecord, validation: ChainValidationResult, added: number }> {
    if (!isCidV0(tokenId)) throw new RbtError(ErrorCode.INVALID_INPUT, `"${tokenId}" is not a token id (46 characters starting with Qm)`)
    const tokenContent = opts.tokenContent ?? await this.repos.tokens.content(tokenId)
    const validation = await validateChain(envelopes, {
      tokenId,
      verifier: this.verifier,
      cache: this.verifiedCache(),
      tokenContent,
      requireTokenContent: opts.requireTokenContent,
      minQuorumSignatures: opts.minQuorumSignatures
    })
    const existing = await this.repos.tokens.get(tokenId)
    const stored = existing === undefined ? [] : await this.repos.blocks.chain(tokenId)
    if (stored.length > envelopes.length) throw new RbtError(ErrorCode.CONFLICT, `token ${tokenId}: this node already holds ${stored.length} blocks, the incoming chain has ${envelopes.length}`)
    stored.forEach((s, i) => {
      if (validation.blockIds[i] !== s.blockId) throw new RbtError(ErrorCode.CONFLICT, `token ${tokenId}: incoming block ${i} is ${validation.blockIds[i]!}, this node holds ${s.blockId} (a fork)`)
    })
    const now = this.now()
    const blocks: StoredBlockInput[] = []
    for (let i = stored.length; i < envelopes.length; i++) {
      const b = decodeBlockEnvelope(envelopes[i]!)
      blocks.push({ record: blockRecordOf(tokenId, b, now), envelope: envelopes[i]! })
    }
    const tip = validation.tip
    const value = tip.value !== undefined ? floatToMilliExact(tip.value) : existing?.value
    if (value === undefined) throw new RbtError(ErrorCode.CHAIN_INVALID, `token ${tokenId}: the chain states no usable value`)
    const kind = kindName(validation.kind)
    const genesisParent = await this.genesisParent(tokenId, envelopes[0]!)
    const record: TokenRecord = {
      tokenId, kind, tokenType: validation.tokenType, value, owner: tip.owner, status: opts.status,
      latestBlockId: tip.blockId, latestBlockNumber: tip.blockNumber, createdAt: existing?.createdAt ?? now, updatedAt: now,
      ...(genesisParent !== undefined ? { parent: genesisParent } : {}),
      ...(existing?.ftName !== undefined ? { ftName: existing.ftName, creator: existing.creator } : {})
    }
    const txId = opts.txId ?? (blocks.length > 0 ? blocks[blocks.length - 1]!.record.txId : undefined) ?? sha3Hex(`ingest:${tokenId}:${tip.blockId}`)
    record.txId = txId
    const existingTx = await this.repos.transactions.get(txId)
    const tx: TransactionRecord = existingTx !== undefined
      ? { ...existingTx, tokens: [...new Set([...existingTx.tokens, tokenId])], blockIds: [...new Set([...existingTx.blockIds, tip.blockId])] }
      : {
          txId, kind: 'ingest', transactionType: blocks[blocks.length - 1]?.record.transactionType ?? TransactionType.GENERATED, initiator: tip.owner,
          tokens: [tokenId], amount: value, status: 'committed', blockIds: [tip.blockId], epoch: Math.floor(now / 1000), createdAt: now, updatedAt: now
        }
    await this.ledger.commit({
      tokens: [{ record, expect: existing === undefined ? { exists: false } : { latestBlockId: existing.latestBlockId } }],
      blocks,
      contents: tokenContent !== undefined && existing === undefined ? { [tokenId]: tokenContent } : {},
      transactions: [tx]
    })
    return { token: record, validation, added: blocks.length }
  }

  /** Validates the chain this node stores for a token (used by audits and before forwarding). */
  async validateStoredChain (tokenId: string): Promise<ChainValidationResult> {
    const recs = await this.repos.blocks.chain(tokenId)
    if (recs.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, `token ${tokenId} is not stored on this node`)
    const envs = await this.repos.blocks.envelopes(recs)
    return await validateChain(envs, { tokenId, verifier: this.verifier, tokenContent: await this.repos.tokens.content(tokenId) })
  }

  private async genesisParent (tokenId: string, genesis: Uint8Array): Promise<string | undefined> {
    try {
      return decodeBlockEnvelope(genesis).content.genesis?.info[tokenId]?.parentId || undefined
    } catch (e) {
      throw new RbtError(ErrorCode.CHAIN_INVALID, errorMessage(e))
    }
  }

  private verifiedCache (): { has: (k: string) => boolean, add: (k: string) => void } {
    return {
      has: (k) => this.verified.has(k),
      add: (k) => {
        if (this.verified.size >= 100_000) this.verified.clear()
        this.verified.add(k)
      }
    }
  }

  // ------------------------------------------------------------------ reads

  async requireToken (tokenId: string): Promise<TokenRecord> {
    if (typeof tokenId !== 'string' || !isCidV0(tokenId)) throw new RbtError(ErrorCode.INVALID_INPUT, `Invalid token id "${String(tokenId)}": expected 46 characters starting with Qm`)
    const t = await this.repos.tokens.get(tokenId)
    if (t === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `token ${tokenId} is not known to this node`)
    return t
  }

  async balanceRecord (did: string): Promise<BalanceRecord | undefined> {
    if (!isDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    return await this.repos.balances.get(did)
  }

  async rbtBalance (did: string): Promise<RbtBalance> {
    return rbtOf(await this.balanceRecord(did))
  }

  async ftBalance (did: string): Promise<FtBalanceItem[]> {
    return ftOf(await this.balanceRecord(did))
  }

  async nftBalance (did: string): Promise<NftBalanceItem[]> {
    if (!isDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    const b = await this.repos.balances.get(did)
    return await this.nftOf(did, b)
  }

  /** One balance-record read; the NFT list is scanned only when the record counts free NFTs. */
  async balances (did: string): Promise<Balances> {
    const b = await this.balanceRecord(did)
    return { did, rbt_balance: [rbtOf(b)], ft_balance: ftOf(b), nft_balance: await this.nftOf(did, b) }
  }

  private async nftOf (did: string, b: BalanceRecord | undefined): Promise<NftBalanceItem[]> {
    if ((b?.counts.nft?.Free ?? 0) === 0) return []
    const list = await this.repos.owners.list(did, 'nft', TokenStatus.Free)
    return list.map((t) => ({ nft_id: t.tokenId, value: rbt(t.value) }))
  }

  async accountInfo (did: string, didType: number): Promise<AccountInfo> {
    const r = await this.rbtBalance(did)
    return { did, did_type: didType, rbt_amount: r.balance, pledged_rbt: r.pledged, locked_rbt: r.locked, pinned_rbt: r.pinned }
  }

  /** Tokens a DID holds on this node, of one family (rbt includes part tokens). */
  async listTokens (did: string, family: TokenFamily): Promise<TokenListItem[]> {
    if (!isDid(did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    const entries = await this.repos.owners.list(did, family)
    const recs = await this.repos.tokens.getMany(entries.map((e) => e.tokenId))
    return recs.filter((r): r is TokenRecord => r !== undefined).map((t) => ({
      token_id: t.tokenId,
      token_type: t.tokenType,
      kind: t.kind,
      token_value: rbt(t.value),
      token_status: t.status,
      token_status_code: STATUS_CODES[t.status] ?? -1,
      did: t.owner,
      parent_token_id: t.parent ?? '',
      transaction_id: t.txId ?? '',
      latest_block_id: t.latestBlockId
    }))
  }

  /** Free holdings of a DID in one family (what a transfer can spend). */
  async freeHoldings (did: string, family: TokenFamily = 'rbt'): Promise<Array<{ tokenId: string, value: number }>> {
    const list = await this.repos.owners.list(did, family, TokenStatus.Free)
    return list.map((e) => ({ tokenId: e.tokenId, value: e.value }))
  }

  /** The chain of a token as stored here, oldest first, from the block after `afterBlockId`. */
  async chainDump (tokenId: string, opts: { afterBlockId?: string, limit?: number, maps?: boolean } = {}): Promise<ChainDump> {
    const token = await this.requireToken(tokenId)
    let from = 0
    if (opts.afterBlockId !== undefined && opts.afterBlockId !== '') {
      const n = Number(opts.afterBlockId.split('-')[0])
      if (!Number.isSafeInteger(n) || n < 0) throw new RbtError(ErrorCode.INVALID_INPUT, `"${opts.afterBlockId}" is not a block id`)
      from = n + 1
    }
    const limit = Math.max(1, Math.min(opts.limit ?? 1000, 10_000))
    const recs = await this.repos.blocks.chain(tokenId, { fromNumber: from, limit: limit + 1 })
    const more = recs.length > limit
    const page = more ? recs.slice(0, limit) : recs
    const envs = await this.repos.blocks.envelopes(page)
    return {
      token_id: tokenId,
      token_type: token.tokenType,
      kind: token.kind,
      owner: token.owner,
      status: token.status,
      value: rbt(token.value),
      length: token.latestBlockNumber + 1,
      blocks: page.map((b, i) => opts.maps === true ? { ...chainDumpBlock(b, envs[i]!), map: referenceDumpMap(envs[i]!) } : chainDumpBlock(b, envs[i]!)),
      next_block_id: more ? page[page.length - 1]!.blockId : ''
    }
  }

  async transaction (txId: string): Promise<TransactionRecord | undefined> {
    return await this.repos.transactions.get(txId)
  }
}

export { familyOf }
