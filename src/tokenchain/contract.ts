/**
 * The transfer contract ("smart contract" block of a transaction).
 *
 * content       = canonical CBOR {"1": type, "2": pledgeMode, "3": transInfo, "4": totalRBTs (float)}
 * contract hash = hex SHA3-256(content)                 — what the sender signs
 * envelope      = {"1": bstr(content), "2": bstr(cbor({did: shareSigHex})), "3": bstr(cbor({did: keySigHex}))}
 * TID           = hex SHA3-256(envelope)                — what the quorums sign
 */
import { decodeCbor, encodeCbor, float, isCborObject, numberOf, type CborObject, type CborValue } from './cbor.js'
import { sha3Hex } from './hash.js'
import { RbtError, ErrorCode } from '../util/errors.js'

export interface ContractToken {
  tokenType: number
  /** Value in RBT (float64 on the wire). */
  tokenValue: number
  /** Current owner; written only when non-empty. */
  owner?: string
  /** Current block ID of the token; written only when non-empty. */
  blockId?: string
}

/** Contract key "3"; each field only when non-empty. */
export interface ContractTransInfo {
  sender?: string
  receiver?: string
  comment?: string
  transTokens?: Record<string, ContractToken>
  exchangeTokens?: Record<string, ContractToken>
  deployer?: string
  scToken?: string
  committedTokens?: Record<string, ContractToken>
  executor?: string
  scData?: string
  pinningDid?: string
  nft?: string
  nftData?: string
}

export interface ContractContent {
  type: number
  pledgeMode: number
  transInfo: ContractTransInfo
  /** Total in RBT (float64 on the wire, always written). */
  totalRbts: number
}

export interface Contract {
  content: ContractContent
  contentBytes: Uint8Array
  /** hex SHA3-256 of the content. */
  hash: string
  /** DID → hex NLSS share signature ("" for PKI/lite signers). */
  shareSignatures: Record<string, string>
  /** DID → hex DER key signature over the contract hash. */
  keySignatures: Record<string, string>
}

const nonEmpty = (s: string | undefined): s is string => s !== undefined && s !== ''

function tokensToCbor (r: Record<string, ContractToken>): CborObject {
  const out: CborObject = {}
  for (const [id, t] of Object.entries(r)) {
    const m: CborObject = { 1: t.tokenType, 4: float(t.tokenValue) }
    if (nonEmpty(t.owner)) m['2'] = t.owner
    if (nonEmpty(t.blockId)) m['3'] = t.blockId
    out[id] = m
  }
  return out
}

const hasTokens = (r: Record<string, ContractToken> | undefined): r is Record<string, ContractToken> => r !== undefined && Object.keys(r).length > 0

export function contractContentToCbor (c: ContractContent): CborObject {
  const t = c.transInfo
  const ti: CborObject = {}
  if (nonEmpty(t.sender)) ti['1'] = t.sender
  if (nonEmpty(t.receiver)) ti['2'] = t.receiver
  if (nonEmpty(t.comment)) ti['3'] = t.comment
  if (hasTokens(t.transTokens)) ti['4'] = tokensToCbor(t.transTokens)
  if (hasTokens(t.exchangeTokens)) ti['5'] = tokensToCbor(t.exchangeTokens)
  if (nonEmpty(t.deployer)) ti['6'] = t.deployer
  if (nonEmpty(t.scToken)) ti['7'] = t.scToken
  if (hasTokens(t.committedTokens)) ti['8'] = tokensToCbor(t.committedTokens)
  if (nonEmpty(t.executor)) ti['9'] = t.executor
  if (nonEmpty(t.scData)) ti['10'] = t.scData
  if (nonEmpty(t.pinningDid)) ti['11'] = t.pinningDid
  if (nonEmpty(t.nft)) ti['12'] = t.nft
  if (nonEmpty(t.nftData)) ti['13'] = t.nftData
  return { 1: c.type, 2: c.pledgeMode, 3: ti, 4: float(c.totalRbts) }
}

export const encodeContractContent = (c: ContractContent): Uint8Array => encodeCbor(contractContentToCbor(c))

/** Contract hash of encoded content. */
export const contractHash = (contentBytes: Uint8Array): string => sha3Hex(contentBytes)

/** Transaction ID of a whole contract envelope. */
export const transactionId = (envelopeBytes: Uint8Array): string => sha3Hex(envelopeBytes)

export function createContract (content: ContractContent): Contract {
  const contentBytes = encodeContractContent(content)
  return { content, contentBytes, hash: contractHash(contentBytes), shareSignatures: {}, keySignatures: {} }
}

/** Returns a copy with the sender's signatures recorded (share "" for PKI signers). */
export function withContractSignature (c: Contract, did: string, keySignatureHex: string, shareSignatureHex = ''): Contract {
  return { ...c, shareSignatures: { ...c.shareSignatures, [did]: shareSignatureHex }, keySignatures: { ...c.keySignatures, [did]: keySignatureHex } }
}

export function encodeContractEnvelope (c: Contract): Uint8Array {
  return encodeCbor({ 1: c.contentBytes, 2: encodeCbor({ ...c.shareSignatures }), 3: encodeCbor({ ...c.keySignatures }) })
}

const cErr = (msg: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `contract: ${msg}`)

function textOf (m: CborObject, k: string): string | undefined {
  const v = m[k]
  if (v === undefined) return undefined
  if (typeof v !== 'string') throw cErr(`transInfo "${k}" must be text`)
  return v
}

function tokensFromCbor (v: CborValue, where: string): Record<string, ContractToken> {
  if (!isCborObject(v)) throw cErr(`${where} must be a map`)
  const out: Record<string, ContractToken> = {}
  for (const [id, x] of Object.entries(v)) {
    if (!isCborObject(x)) throw cErr(`${where}.${id} must be a map`)
    const tokenType = x['1'] ?? 0
    const value = numberOf(x['4'] ?? 0)
    if (typeof tokenType !== 'number' || !Number.isInteger(tokenType) || value === undefined) throw cErr(`${where}.${id} is malformed`)
    const t: ContractToken = { tokenType, tokenValue: value }
    if (typeof x['2'] === 'string') t.owner = x['2']
    if (typeof x['3'] === 'string') t.blockId = x['3']
    out[id] = t
  }
  return out
}

export function contractContentFromCbor (v: CborValue): ContractContent {
  if (!isCborObject(v)) throw cErr('content must be a text-keyed map')
  const type = v['1']; const mode = v['2']
  if (typeof type !== 'number' || typeof mode !== 'number') throw cErr('type "1" and pledge mode "2" must be integers')
  const total = numberOf(v['4'] ?? 0)
  if (total === undefined) throw cErr('total "4" must be a number')
  const tiRaw = v['3'] ?? {}
  if (!isCborObject(tiRaw)) throw cErr('transInfo "3" must be a map')
  const ti: ContractTransInfo = {}
  const texts: Array<[keyof ContractTransInfo, string]> = [['sender', '1'], ['receiver', '2'], ['comment', '3'], ['deployer', '6'], ['scToken', '7'], ['executor', '9'], ['scData', '10'], ['pinningDid', '11'], ['nft', '12'], ['nftData', '13']]
  for (const [f, k] of texts) {
    const s = textOf(tiRaw, k)
    if (s !== undefined) (ti as Record<string, unknown>)[f] = s
  }
  if (tiRaw['4'] !== undefined) ti.transTokens = tokensFromCbor(tiRaw['4'], 'transInfo "4"')
  if (tiRaw['5'] !== undefined) ti.exchangeTokens = tokensFromCbor(tiRaw['5'], 'transInfo "5"')
  if (tiRaw['8'] !== undefined) ti.committedTokens = tokensFromCbor(tiRaw['8'], 'transInfo "8"')
  return { type, pledgeMode: mode, transInfo: ti, totalRbts: total }
}

function sigMap (b: CborValue, where: string): Record<string, string> {
  if (b === undefined) return {}
  if (!(b instanceof Uint8Array)) throw cErr(`${where} must be a byte string`)
  const m = decodeCbor(b)
  if (!isCborObject(m)) throw cErr(`${where} must encode a map`)
  const out: Record<string, string> = {}
  for (const [k, s] of Object.entries(m)) {
    if (typeof s !== 'string') throw cErr(`${where} values must be text`)
    out[k] = s
  }
  return out
}

export interface DecodedContract extends Contract {
  envelopeBytes: Uint8Array
  /** hex SHA3-256 of the envelope bytes as received. */
  transactionId: string
}

/** Decodes a contract envelope, keeping the raw bytes for hashing. */
/** Decoded contracts by byte array: a block shared by many tokens embeds one contract, decoded once. */
const decodedContracts = new WeakMap<Uint8Array, DecodedContract>()

export function decodeContract (envelopeBytes: Uint8Array): DecodedContract {
  const hit = decodedContracts.get(envelopeBytes)
  if (hit !== undefined) return hit
  const decoded = decodeContractUncached(envelopeBytes)
  decodedContracts.set(envelopeBytes, decoded)
  return decoded
}

function decodeContractUncached (envelopeBytes: Uint8Array): DecodedContract {
  const env = decodeCbor(envelopeBytes)
  if (!isCborObject(env) || !(env['1'] instanceof Uint8Array)) throw cErr('envelope must be a map with byte string "1"')
  const contentBytes = env['1'].slice()
  return {
    content: contractContentFromCbor(decodeCbor(contentBytes)),
    contentBytes,
    hash: contractHash(contentBytes),
    shareSignatures: sigMap(env['2'], 'share signatures "2"'),
    keySignatures: sigMap(env['3'], 'key signatures "3"'),
    envelopeBytes: envelopeBytes.slice(),
    transactionId: transactionId(envelopeBytes)
  }
}
