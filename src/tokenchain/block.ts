/**
 * Token-chain blocks: typed content, canonical encoding, hash, envelope and block IDs.
 *
 * content   = canonical CBOR of the text-keyed block map, without "98" (hash) and "99" (signatures)
 * hash      = hex SHA3-256(content)
 * envelope  = canonical CBOR {"1": bstr(content), "2": bstr(cbor({did: hexSig}))}; "2" absent when unsigned
 * block ID  = `<blockNumber>-<hash>` where blockNumber is the decimal string of the token's entry
 */
import { decodeCbor, decodeCborChecked, encodeCbor, equalBytes, float, isCborObject, numberOf, type CborObject, type CborValue } from './cbor.js'
import { sha3Hex } from './hash.js'
import { TokenType, TransactionType } from './types.js'
import { RbtError, ErrorCode } from '../util/errors.js'

// ---------------------------------------------------------------------------------------------
// Types
// ---------------------------------------------------------------------------------------------

/** Per-token entry of a block ("5"/"6"/<tokenID>, and committed-token maps). */
export interface TransTokenEntry {
  tokenType: number
  /** Decimal string: "0" for a genesis, previous + 1 after. */
  blockNumber: string
  /** `<n>-<hash>` of the previous block of this token; "" in a genesis. */
  previousBlockId: string
  unpledgedId?: string
  committedDid?: string
}

/** Block key "5". Text fields are written only when non-empty; `tokens` always. */
export interface BlockTransInfo {
  sender?: string
  receiver?: string
  comment?: string
  /** Transaction ID (hex SHA3 of the contract envelope). */
  tid?: string
  block?: Uint8Array
  tokens: Record<string, TransTokenEntry>
  refId?: string
  deployer?: string
  executor?: string
  committedTokens?: Record<string, TransTokenEntry>
  pinningDid?: string
}

/** Per-token info inside a genesis ("4"/"2"/<tokenID>). */
export interface GenesisTokenInfo {
  level: number
  number: number
  migratedBlockId?: string
  previousId?: string
  parentId?: string
  /** Written whenever present, even empty. */
  grandParentIds?: string[]
  /** Always written, possibly empty. */
  committedTokens: Record<string, TransTokenEntry>
  /** Smart-contract value (float), written only when non-zero. */
  smartContractValue?: number
}

/** Block key "4". `type` is "05", "03", or "" (parts and FTs). */
export interface GenesisBlock {
  type: string
  info: Record<string, GenesisTokenInfo>
}

/** Quorum credit signature (elements of "7"). */
export interface CreditSignature {
  did: string
  hash: string
  /** "1" NLSS, "0" PKI. */
  signType: string
  /** Hex NLSS share signature, "" for PKI signers. */
  signature: string
  /** Hex DER key signature over the TID. */
  privSignature: string
}

/** Sender/deployer/executor signature over the contract hash (key "12"). */
export interface InitiatorSignature {
  hash: string
  /** 0 PKI, 1 NLSS. */
  signType: number
  initiatorDid: string
  privSignature: string
  nlssShareSignature: string
}

export interface PledgeToken { token: string, tokenType: number, tokenBlockId: string }

export interface BlockContent {
  /** Key "1": never written by the reference; kept only for blocks that carry it. */
  tokenType?: number
  transactionType: string
  /** Owner after this block. */
  owner: string
  genesis?: GenesisBlock
  transInfo: BlockTransInfo
  /** Whole contract envelope bytes. */
  smartContract?: Uint8Array
  quorumSignatures?: CreditSignature[]
  pledgeDetails?: Record<string, PledgeToken[]>
  smartContractData?: string
  /** Value in RBT (float64 on the wire); written only when > 0. */
  tokenValue?: number
  childTokens: string[]
  initiatorSignature?: InitiatorSignature
  nftData?: string
  /** Unix seconds; written only when non-zero. */
  epoch?: number
}

export type SignatureMap = Readonly<Record<string, string>>

export interface Block {
  readonly content: BlockContent
  readonly contentBytes: Uint8Array
  readonly hash: string
  readonly signatures: SignatureMap
}

export interface DecodedBlock extends Block {
  /** The exact bytes received (kept and forwarded as-is). */
  readonly envelopeBytes: Uint8Array
  /** The generic decoded content map, including keys the typed view does not name. */
  readonly raw: CborObject
  /** True when the content bytes are in canonical form. */
  readonly canonical: boolean
}

// ---------------------------------------------------------------------------------------------
// Encoding
// ---------------------------------------------------------------------------------------------

const nonEmpty = (s: string | undefined): s is string => s !== undefined && s !== ''

function entryToCbor (e: TransTokenEntry): CborObject {
  const m: CborObject = { 1: e.tokenType, 4: e.blockNumber, 5: e.previousBlockId }
  if (nonEmpty(e.unpledgedId)) m['6'] = e.unpledgedId
  if (nonEmpty(e.committedDid)) m['7'] = e.committedDid
  return m
}

const entriesToCbor = (r: Record<string, TransTokenEntry>): CborObject =>
  Object.fromEntries(Object.entries(r).map(([k, v]) => [k, entryToCbor(v)]))

function transInfoToCbor (t: BlockTransInfo): CborObject {
  const m: CborObject = {}
  if (nonEmpty(t.sender)) m['1'] = t.sender
  if (nonEmpty(t.receiver)) m['2'] = t.receiver
  if (nonEmpty(t.comment)) m['3'] = t.comment
  if (nonEmpty(t.tid)) m['4'] = t.tid
  if (t.block !== undefined && t.block.length > 0) m['5'] = t.block
  m['6'] = entriesToCbor(t.tokens)
  if (nonEmpty(t.refId)) m['7'] = t.refId
  if (nonEmpty(t.deployer)) m['8'] = t.deployer
  if (nonEmpty(t.executor)) m['9'] = t.executor
  if (t.committedTokens !== undefined && Object.keys(t.committedTokens).length > 0) m['10'] = entriesToCbor(t.committedTokens)
  if (nonEmpty(t.pinningDid)) m['11'] = t.pinningDid
  return m
}

function genesisToCbor (g: GenesisBlock): CborObject {
  const info: CborObject = {}
  for (const [id, gi] of Object.entries(g.info)) {
    const m: CborObject = { 1: gi.level, 2: gi.number }
    if (nonEmpty(gi.migratedBlockId)) m['3'] = gi.migratedBlockId
    if (nonEmpty(gi.previousId)) m['4'] = gi.previousId
    if (nonEmpty(gi.parentId)) m['5'] = gi.parentId
    if (gi.grandParentIds !== undefined) m['6'] = [...gi.grandParentIds]
    m['7'] = entriesToCbor(gi.committedTokens)
    if (gi.smartContractValue !== undefined && gi.smartContractValue !== 0) m['8'] = float(gi.smartContractValue)
    info[id] = m
  }
  return { 1: g.type, 2: info }
}

const creditToCbor = (c: CreditSignature): CborObject =>
  ({ did: c.did, hash: c.hash, sign_type: c.signType, signature: c.signature, priv_signature: c.privSignature })

const initiatorToCbor = (s: InitiatorSignature): CborObject => ({
  hash: s.hash,
  sign_type: s.signType,
  InitiatorDID: s.initiatorDid,
  priv_signature: s.privSignature,
  nlss_share_signature: s.nlssShareSignature
})

/** The block map (without "98"/"99") as generic CBOR values. */
export function blockContentToCbor (c: BlockContent): CborObject {
  const m: CborObject = {}
  if (c.tokenType !== undefined) m['1'] = c.tokenType
  m['2'] = c.transactionType
  m['3'] = c.owner
  if (c.genesis !== undefined) m['4'] = genesisToCbor(c.genesis)
  m['5'] = transInfoToCbor(c.transInfo)
  if (c.smartContract !== undefined && c.smartContract.length > 0) m['6'] = c.smartContract
  if (c.quorumSignatures !== undefined && c.quorumSignatures.length > 0) m['7'] = c.quorumSignatures.map(creditToCbor)
  if (c.pledgeDetails !== undefined && Object.keys(c.pledgeDetails).length > 0) {
    m['8'] = Object.fromEntries(Object.entries(c.pledgeDetails).map(([did, list]) =>
      [did, list.map(p => ({ 1: p.token, 2: p.tokenType, 3: p.tokenBlockId }))]))
  }
  if (nonEmpty(c.smartContractData)) m['9'] = c.smartContractData
  if (c.tokenValue !== undefined && c.tokenValue > 0) m['10'] = float(c.tokenValue)
  m['11'] = [...c.childTokens]
  if (c.initiatorSignature !== undefined) m['12'] = initiatorToCbor(c.initiatorSignature)
  if (nonEmpty(c.nftData)) m['13'] = c.nftData
  if (c.epoch !== undefined && c.epoch !== 0) m.epoch = c.epoch
  return m
}

export const encodeBlockContent = (c: BlockContent): Uint8Array => encodeCbor(blockContentToCbor(c))

export const blockHash = (contentBytes: Uint8Array): string => sha3Hex(contentBytes)

function checkSignatureMap (sigs: Record<string, string>): void {
  for (const [did, sig] of Object.entries(sigs)) {
    if (did === '' || typeof sig !== 'string') throw new RbtError(ErrorCode.INVALID_INPUT, 'signature map entries must be DID → hex text')
  }
}

/** Builds a block from typed content; signatures optional. */
export function createBlock (content: BlockContent, signatures: Record<string, string> = {}): Block {
  if (Object.keys(content.transInfo.tokens).length === 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'a block must carry at least one token')
  checkSignatureMap(signatures)
  const contentBytes = encodeBlockContent(content)
  return { content, contentBytes, hash: blockHash(contentBytes), signatures: { ...signatures } }
}

/** Returns a copy with `did`'s signature set (added, or replaced when present). */
export function setSignature<B extends Block> (block: B, did: string, signatureHex: string): Block {
  checkSignatureMap({ [did]: signatureHex })
  return { content: block.content, contentBytes: block.contentBytes, hash: block.hash, signatures: { ...block.signatures, [did]: signatureHex } }
}

/** Like setSignature, but refuses to overwrite a different existing signature. */
export function addSignature<B extends Block> (block: B, did: string, signatureHex: string): Block {
  const prev = block.signatures[did]
  if (prev !== undefined && prev !== signatureHex) throw new RbtError(ErrorCode.CONFLICT, `block ${block.hash} already has a different signature from ${did}`)
  return setSignature(block, did, signatureHex)
}

/** Signs a block hash (ASCII hex) as `did`. */
export interface BlockSigner { sign (did: string, messageAsciiHex: string): Promise<string> }

export async function signBlock (block: Block, did: string, signer: BlockSigner): Promise<Block> {
  return setSignature(block, did, await signer.sign(did, block.hash))
}

export function encodeSignatureMap (sigs: SignatureMap): Uint8Array {
  return encodeCbor({ ...sigs })
}

export function encodeBlockEnvelope (block: Block): Uint8Array {
  const env: CborObject = { 1: block.contentBytes }
  if (Object.keys(block.signatures).length > 0) env['2'] = encodeSignatureMap(block.signatures)
  return encodeCbor(env)
}

// ---------------------------------------------------------------------------------------------
// Decoding
// ---------------------------------------------------------------------------------------------

const decErr = (msg: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `block: ${msg}`)

function asText (v: CborValue, where: string, optional = false): string | undefined {
  if (v === undefined && optional) return undefined
  if (typeof v !== 'string') throw decErr(`${where} must be text`)
  return v
}

function asInt (v: CborValue, where: string): number {
  if (typeof v === 'number' && Number.isInteger(v)) return v
  if (typeof v === 'bigint' && v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER)) return Number(v)
  throw decErr(`${where} must be an integer`)
}

function asMap (v: CborValue, where: string): CborObject {
  if (!isCborObject(v)) throw decErr(`${where} must be a text-keyed map`)
  return v
}

function entryFromCbor (v: CborValue, where: string): TransTokenEntry {
  const m = asMap(v, where)
  const e: TransTokenEntry = {
    tokenType: asInt(m['1'] ?? 0, `${where}."1"`),
    blockNumber: asText(m['4'] ?? '', `${where}."4"`)!,
    previousBlockId: asText(m['5'] ?? '', `${where}."5"`)!
  }
  const u = asText(m['6'], `${where}."6"`, true)
  if (u !== undefined) e.unpledgedId = u
  const c = asText(m['7'], `${where}."7"`, true)
  if (c !== undefined) e.committedDid = c
  return e
}

function entriesFromCbor (v: CborValue, where: string): Record<string, TransTokenEntry> {
  const m = v instanceof Map && v.size === 0 ? {} : asMap(v, where)
  const out: Record<string, TransTokenEntry> = {}
  for (const [k, x] of Object.entries(m)) out[k] = entryFromCbor(x, `${where}.${k}`)
  return out
}

function transInfoFromCbor (v: CborValue): BlockTransInfo {
  const m = asMap(v, '"5"')
  const t: BlockTransInfo = { tokens: entriesFromCbor(m['6'] ?? {}, '"5"."6"') }
  const texts: Array<[keyof BlockTransInfo, string]> = [['sender', '1'], ['receiver', '2'], ['comment', '3'], ['tid', '4'], ['refId', '7'], ['deployer', '8'], ['executor', '9'], ['pinningDid', '11']]
  for (const [field, key] of texts) {
    const s = asText(m[key], `"5"."${key}"`, true)
    if (s !== undefined) (t as unknown as Record<string, unknown>)[field] = s
  }
  if (m['5'] !== undefined) {
    if (!(m['5'] instanceof Uint8Array)) throw decErr('"5"."5" must be bytes')
    t.block = m['5']
  }
  if (m['10'] !== undefined) t.committedTokens = entriesFromCbor(m['10'], '"5"."10"')
  return t
}

function genesisFromCbor (v: CborValue): GenesisBlock {
  const m = asMap(v, '"4"')
  const info: Record<string, GenesisTokenInfo> = {}
  for (const [id, x] of Object.entries(asMap(m['2'] ?? {}, '"4"."2"'))) {
    const gm = asMap(x, `"4"."2".${id}`)
    const gi: GenesisTokenInfo = {
      level: asInt(gm['1'] ?? 0, 'genesis level'),
      number: asInt(gm['2'] ?? 0, 'genesis number'),
      committedTokens: gm['7'] === undefined ? {} : entriesFromCbor(gm['7'], 'genesis "7"')
    }
    const mb = asText(gm['3'], 'genesis "3"', true); if (mb !== undefined) gi.migratedBlockId = mb
    const pv = asText(gm['4'], 'genesis "4"', true); if (pv !== undefined) gi.previousId = pv
    const pa = asText(gm['5'], 'genesis "5"', true); if (pa !== undefined) gi.parentId = pa
    if (gm['6'] !== undefined) {
      if (!Array.isArray(gm['6'])) throw decErr('genesis "6" must be an array')
      gi.grandParentIds = gm['6'].map(s => asText(s, 'genesis "6" item')!)
    }
    if (gm['8'] !== undefined) {
      const n = numberOf(gm['8'])
      if (n === undefined) throw decErr('genesis "8" must be a number')
      gi.smartContractValue = n
    }
    info[id] = gi
  }
  return { type: asText(m['1'] ?? '', '"4"."1"')!, info }
}

function creditFromCbor (v: CborValue, i: number): CreditSignature {
  let x = v
  if (typeof x === 'string') { // very old blocks stored each credit as a JSON string
    try { x = JSON.parse(x) as CborValue } catch { throw decErr(`"7"[${i}] is not valid JSON`) }
  }
  const m = asMap(x, `"7"[${i}]`)
  const s = (k: string): string => asText(m[k] ?? '', `"7"[${i}].${k}`)!
  return { did: s('did'), hash: s('hash'), signType: s('sign_type'), signature: s('signature'), privSignature: s('priv_signature') }
}

function initiatorFromCbor (v: CborValue): InitiatorSignature {
  const m = asMap(v, '"12"')
  const s = (k: string): string => asText(m[k] ?? '', `"12".${k}`)!
  return { hash: s('hash'), signType: asInt(m.sign_type ?? 0, '"12".sign_type'), initiatorDid: s('InitiatorDID'), privSignature: s('priv_signature'), nlssShareSignature: s('nlss_share_signature') }
}

/** The typed view of a decoded block map. */
export function blockContentFromCbor (raw: CborValue): BlockContent {
  const m = asMap(raw, 'content')
  const c: BlockContent = {
    transactionType: asText(m['2'], '"2" (transaction type)')!,
    owner: asText(m['3'], '"3" (owner)')!,
    transInfo: transInfoFromCbor(m['5'] ?? {}),
    childTokens: []
  }
  if (m['1'] !== undefined) c.tokenType = asInt(m['1'], '"1"')
  if (m['4'] !== undefined) c.genesis = genesisFromCbor(m['4'])
  if (m['6'] !== undefined) {
    if (!(m['6'] instanceof Uint8Array)) throw decErr('"6" (contract) must be bytes')
    c.smartContract = m['6']
  }
  if (m['7'] !== undefined) {
    if (!Array.isArray(m['7'])) throw decErr('"7" must be an array')
    c.quorumSignatures = m['7'].map(creditFromCbor)
  }
  if (m['8'] !== undefined) {
    const pd: Record<string, PledgeToken[]> = {}
    for (const [did, list] of Object.entries(asMap(m['8'], '"8"'))) {
      if (!Array.isArray(list)) throw decErr(`"8".${did} must be an array`)
      pd[did] = list.map((p, i) => {
        const pm = asMap(p, `"8".${did}[${i}]`)
        return { token: asText(pm['1'] ?? '', 'pledge token')!, tokenType: asInt(pm['2'] ?? 0, 'pledge token type'), tokenBlockId: asText(pm['3'] ?? '', 'pledge block id')! }
      })
    }
    c.pledgeDetails = pd
  }
  const scd = asText(m['9'], '"9"', true); if (scd !== undefined) c.smartContractData = scd
  if (m['10'] !== undefined) {
    const n = numberOf(m['10'])
    if (n === undefined) throw decErr('"10" (token value) must be a number')
    c.tokenValue = n
  }
  if (m['11'] !== undefined) {
    if (!Array.isArray(m['11'])) throw decErr('"11" (child tokens) must be an array')
    c.childTokens = m['11'].map(s => asText(s, '"11" item')!)
  }
  if (m['12'] !== undefined) c.initiatorSignature = initiatorFromCbor(m['12'])
  const nd = asText(m['13'], '"13"', true); if (nd !== undefined) c.nftData = nd
  if (m.epoch !== undefined) c.epoch = asInt(m.epoch, '"epoch"')
  return c
}

/** Decodes a stored/transmitted envelope, keeping the raw bytes; the hash is over the raw content. */
/**
 * Decoded envelopes by byte array: a block shared by many tokens (a transfer of many tokens, a
 * genesis of many FTs) is decoded once per array, however many chains it appears in. Decoded
 * blocks are never modified, and callers never modify envelope arrays they hand in.
 */
const decodedCache = new WeakMap<Uint8Array, DecodedBlock>()

/**
 * The hash and the signers of a block envelope, read without decoding its content (a block
 * decoded already answers from the decode memo). For telling whether a block is one known by its
 * id, or who signed it; nothing is validated. Throws on bytes that are not an envelope.
 */
export function peekBlockEnvelope (envelopeBytes: Uint8Array): { hash: string, signers: string[] } {
  const hit = decodedCache.get(envelopeBytes)
  if (hit !== undefined) return { hash: hit.hash, signers: Object.keys(hit.signatures) }
  const env = decodeCbor(envelopeBytes)
  if (!isCborObject(env) || !(env['1'] instanceof Uint8Array)) throw decErr('not a block envelope')
  let signers: string[] = []
  if (env['2'] instanceof Uint8Array) {
    const sm = decodeCbor(env['2'])
    if (isCborObject(sm)) signers = Object.keys(sm)
  }
  return { hash: blockHash(env['1']), signers }
}

export function decodeBlockEnvelope (envelopeBytes: Uint8Array): DecodedBlock {
  const hit = decodedCache.get(envelopeBytes)
  if (hit !== undefined) return hit
  const decoded = decodeBlockEnvelopeUncached(envelopeBytes)
  decodedCache.set(envelopeBytes, decoded)
  return decoded
}

function decodeBlockEnvelopeUncached (envelopeBytes: Uint8Array): DecodedBlock {
  const env = decodeCbor(envelopeBytes)
  if (!isCborObject(env)) throw decErr('envelope must be a text-keyed map')
  const contentBytes = env['1']
  if (!(contentBytes instanceof Uint8Array)) throw decErr('envelope key "1" must be a byte string')
  for (const k of Object.keys(env)) if (k !== '1' && k !== '2') throw decErr(`unexpected envelope key "${k}"`)
  let signatures: Record<string, string> = {}
  if (env['2'] !== undefined) {
    if (!(env['2'] instanceof Uint8Array)) throw decErr('envelope key "2" must be a byte string')
    const sm = decodeCbor(env['2'])
    if (!isCborObject(sm)) throw decErr('signature map must be a text-keyed map')
    signatures = {}
    for (const [did, sig] of Object.entries(sm)) {
      if (typeof sig !== 'string') throw decErr(`signature of ${did} must be text`)
      signatures[did] = sig
    }
  }
  // canonical form is checked while decoding; only content not proven canonical is encoded again
  const { value: raw, canonical: provenCanonical } = decodeCborChecked(contentBytes)
  if (!isCborObject(raw)) throw decErr('content must be a text-keyed map')
  if (raw['98'] !== undefined || raw['99'] !== undefined) throw decErr('content must not carry "98"/"99"')
  const content = blockContentFromCbor(raw)
  return {
    content,
    // already a fresh copy: the decoder copies every byte string out of its input
    contentBytes,
    hash: blockHash(contentBytes),
    signatures,
    envelopeBytes: envelopeBytes.slice(),
    raw,
    canonical: provenCanonical || equalBytes(encodeCbor(raw), contentBytes)
  }
}

// ---------------------------------------------------------------------------------------------
// Block IDs and per-token entries
// ---------------------------------------------------------------------------------------------

export const formatBlockId = (blockNumber: number | string, hash: string): string => `${blockNumber}-${hash}`

const BLOCK_ID_RE = /^(0|[1-9]\d*)-([0-9a-f]{64})$/

export function parseBlockId (id: string): { number: number, hash: string } {
  const m = BLOCK_ID_RE.exec(id)
  if (m === null) throw new RbtError(ErrorCode.INVALID_INPUT, `"${id}" is not a block ID (<number>-<64 hex>)`)
  const number = Number(m[1])
  if (!Number.isSafeInteger(number)) throw new RbtError(ErrorCode.INVALID_INPUT, `block number in "${id}" is too large`)
  return { number, hash: m[2]! }
}

export const isBlockId = (id: unknown): id is string => typeof id === 'string' && BLOCK_ID_RE.test(id)

export function tokenEntry (block: Block, tokenId: string): TransTokenEntry | undefined {
  return Object.prototype.hasOwnProperty.call(block.content.transInfo.tokens, tokenId) ? block.content.transInfo.tokens[tokenId] : undefined
}

/** The block ID of `block` for `tokenId`. */
export function blockIdFor (block: Block, tokenId: string): string {
  const e = tokenEntry(block, tokenId)
  if (e === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `block ${block.hash} does not carry token ${tokenId}`)
  return formatBlockId(e.blockNumber, block.hash)
}

/** The entry a token gets in the block after `previous`: same type, next number, link to it. */
export function nextTokenEntry (previous: Block, tokenId: string): TransTokenEntry {
  const e = tokenEntry(previous, tokenId)
  if (e === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, `block ${previous.hash} does not carry token ${tokenId}`)
  return { tokenType: e.tokenType, blockNumber: String(Number(e.blockNumber) + 1), previousBlockId: formatBlockId(e.blockNumber, previous.hash) }
}

export const genesisEntry = (tokenType: number): TransTokenEntry => ({ tokenType, blockNumber: '0', previousBlockId: '' })

// ---------------------------------------------------------------------------------------------
// Genesis builders (one per kind)
// ---------------------------------------------------------------------------------------------

export interface TestTokenGenesisInput { tokenId: string, owner: string, comment?: string, epoch?: number }

/** Test-net whole token: "05"/"05", level 0, number 0, value 1.0, token type 3. */
export function testTokenGenesis (i: TestTokenGenesisInput): BlockContent {
  return {
    transactionType: TransactionType.GENERATED,
    owner: i.owner,
    genesis: { type: TransactionType.GENERATED, info: { [i.tokenId]: { level: 0, number: 0, committedTokens: {} } } },
    transInfo: { comment: i.comment, tokens: { [i.tokenId]: genesisEntry(TokenType.TEST_RBT) } },
    tokenValue: 1,
    childTokens: [],
    epoch: i.epoch
  }
}

export interface PartTokenGenesisInput {
  tokenId: string
  owner: string
  parentId: string
  /** As the reference writes it: normally the immediate grand-parent at most (may be empty). */
  grandParentIds: string[]
  /** Part value in RBT. */
  value: number
  /** 1 (main net) or 5 (test net). */
  tokenType: typeof TokenType.PART | typeof TokenType.TEST_PART
  comment?: string
}

/** Part token: "05" with genesis type "", parent and grand-parents, value = part value. */
export function partTokenGenesis (i: PartTokenGenesisInput): BlockContent {
  return {
    transactionType: TransactionType.GENERATED,
    owner: i.owner,
    genesis: { type: '', info: { [i.tokenId]: { level: 0, number: 0, parentId: i.parentId, grandParentIds: i.grandParentIds, committedTokens: {} } } },
    transInfo: { comment: i.comment, tokens: { [i.tokenId]: genesisEntry(i.tokenType) } },
    tokenValue: i.value,
    childTokens: []
  }
}

export interface FtGenesisInput {
  ftId: string
  creator: string
  index: number
  parentIds: string[]
  /** FT value in RBT. */
  value: number
  comment?: string
}

/** Reference comment of an FT genesis; `generatedAt` is the creation time as text. */
export const ftGenesisComment = (generatedAt: string, ftName: string): string => `FT generated at : ${generatedAt} for FT Name : ${ftName}`

/** FT: "05" with genesis type "", info {level 0, number = index, parent = comma-joined RBT IDs}. */
export function ftGenesis (i: FtGenesisInput): BlockContent {
  return {
    transactionType: TransactionType.GENERATED,
    owner: i.creator,
    genesis: { type: '', info: { [i.ftId]: { level: 0, number: i.index, parentId: i.parentIds.join(','), committedTokens: {} } } },
    transInfo: { comment: i.comment, tokens: { [i.ftId]: genesisEntry(TokenType.FT) } },
    tokenValue: i.value,
    childTokens: []
  }
}

export interface MigratedGenesisInput { tokenId: string, owner: string, level: number, number: number, migratedBlockId: string, previousId?: string, contract?: Uint8Array, comment?: string }

/** Main-net whole token migrated from the old chain: "03"/"03" with level and number. */
export function migratedTokenGenesis (i: MigratedGenesisInput): BlockContent {
  return {
    transactionType: TransactionType.MIGRATED,
    owner: i.owner,
    genesis: { type: TransactionType.MIGRATED, info: { [i.tokenId]: { level: i.level, number: i.number, migratedBlockId: i.migratedBlockId, previousId: i.previousId, committedTokens: {} } } },
    transInfo: { comment: i.comment, tokens: { [i.tokenId]: genesisEntry(TokenType.RBT) } },
    smartContract: i.contract,
    childTokens: []
  }
}

/** A burn ("08") of `tokenId` into `childTokens`, signed by the owner. */
export function burntBlock (previous: Block, tokenId: string, owner: string, value: number, childTokens: string[], comment?: string): BlockContent {
  return {
    transactionType: TransactionType.BURNT,
    owner,
    transInfo: { comment, tokens: { [tokenId]: nextTokenEntry(previous, tokenId) } },
    tokenValue: value,
    childTokens
  }
}
