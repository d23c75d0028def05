/**
 * RAC blocks: the signed descriptor whose hex text is the content (and so the ID) of test tokens,
 * part tokens and FT/NFT/data descriptors. Content = canonical CBOR map with text keys "1".."14";
 * envelope = {"1": bstr(content), "2": signature hex as a text string}.
 */
import { decodeCbor, encodeCbor, float, isCborObject, numberOf, type CborObject, type CborValue } from './cbor.js'
import { bytesToHex, hexToBytes, sha3Hex } from './hash.js'
import { cidV0ForContent } from './cid.js'
import { RbtError, ErrorCode } from '../util/errors.js'

export const RAC_VERSION = 1

export interface RacPartInfo {
  parentId: string
  partNumber: number
  /** Part value in RBT (float64 on the wire). */
  value: number
}

export interface RacContent {
  type: number
  version: number
  did: string
  tokenNumber: number
  totalSupply: number
  timestamp?: string
  creatorId?: string
  creatorInput?: string
  contentIds?: CborValue
  contentHashes?: CborValue
  contentUrls?: CborValue
  transInfo?: CborValue
  partInfo?: RacPartInfo
  tokenLevel?: number
}

export interface Rac {
  content: RacContent
  contentBytes: Uint8Array
  /** hex SHA3-256 of the content bytes: what the owner signs. */
  hash: string
  signature?: string
}

export function racContentToCbor (c: RacContent): CborObject {
  const m: CborObject = { 1: c.type, 2: c.version, 3: c.did, 4: c.tokenNumber, 5: c.totalSupply }
  if (c.timestamp !== undefined && c.timestamp !== '') m['6'] = c.timestamp
  if (c.creatorId !== undefined && c.creatorId !== '') m['7'] = c.creatorId
  if (c.creatorInput !== undefined && c.creatorInput !== '') m['8'] = c.creatorInput
  if (c.contentIds !== undefined) m['9'] = c.contentIds
  if (c.contentHashes !== undefined) m['10'] = c.contentHashes
  if (c.contentUrls !== undefined) m['11'] = c.contentUrls
  if (c.transInfo !== undefined) m['12'] = c.transInfo
  if (c.partInfo !== undefined) m['13'] = { 1: c.partInfo.parentId, 2: c.partInfo.partNumber, 3: float(c.partInfo.value) }
  if (c.tokenLevel !== undefined) m['14'] = c.tokenLevel
  return m
}

export function createRac (content: RacContent): Rac {
  const contentBytes = encodeCbor(racContentToCbor(content))
  return { content, contentBytes, hash: sha3Hex(contentBytes) }
}

export function encodeRacEnvelope (rac: Rac): Uint8Array {
  const env: CborObject = { 1: rac.contentBytes }
  if (rac.signature !== undefined) env['2'] = rac.signature
  return encodeCbor(env)
}

const racErr = (msg: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `RAC: ${msg}`)

export function decodeRacEnvelope (bytes: Uint8Array): Rac {
  const env = decodeCbor(bytes)
  if (!isCborObject(env) || !(env['1'] instanceof Uint8Array)) throw racErr('envelope must be a map with byte string "1"')
  const sig = env['2']
  if (sig !== undefined && typeof sig !== 'string') throw racErr('signature "2" must be text')
  const contentBytes = env['1']
  const m = decodeCbor(contentBytes)
  if (!isCborObject(m)) throw racErr('content must be a text-keyed map')
  const int = (k: string): number => {
    const v = m[k]
    if (typeof v !== 'number' || !Number.isInteger(v)) throw racErr(`key "${k}" must be an integer`)
    return v
  }
  const str = (k: string): string | undefined => {
    const v = m[k]
    if (v === undefined) return undefined
    if (typeof v !== 'string') throw racErr(`key "${k}" must be text`)
    return v
  }
  const did = str('3')
  if (did === undefined) throw racErr('missing DID "3"')
  const content: RacContent = { type: int('1'), version: int('2'), did, tokenNumber: int('4'), totalSupply: int('5') }
  const opt: Array<[keyof RacContent, string | undefined]> = [['timestamp', str('6')], ['creatorId', str('7')], ['creatorInput', str('8')]]
  for (const [k, v] of opt) if (v !== undefined) (content as unknown as Record<string, unknown>)[k] = v
  if (m['9'] !== undefined) content.contentIds = m['9']
  if (m['10'] !== undefined) content.contentHashes = m['10']
  if (m['11'] !== undefined) content.contentUrls = m['11']
  if (m['12'] !== undefined) content.transInfo = m['12']
  const p = m['13']
  if (p !== undefined) {
    if (!isCborObject(p) || typeof p['1'] !== 'string') throw racErr('part info "13" is malformed')
    const value = numberOf(p['3'] ?? 0)
    const partNumber = numberOf(p['2'] ?? 0)
    if (value === undefined || partNumber === undefined) throw racErr('part info "13" is malformed')
    content.partInfo = { parentId: p['1'], partNumber, value }
  }
  if (m['14'] !== undefined) content.tokenLevel = int('14')
  const rac: Rac = { content, contentBytes, hash: sha3Hex(contentBytes) }
  if (sig !== undefined) rac.signature = sig
  return rac
}

/** Token content of a RAC-backed token: the lowercase hex text of the whole envelope. */
export const racTokenContent = (envelope: Uint8Array): string => bytesToHex(envelope)

/** Token ID of a RAC-backed token (test RBT, part token): CIDv0 of the envelope's hex text. */
export const racTokenId = (envelope: Uint8Array): string => cidV0ForContent(racTokenContent(envelope))

/** Reads RAC token content (hex text) back into a RAC. */
export function racFromTokenContent (content: string | Uint8Array): Rac {
  const text = typeof content === 'string' ? content : new TextDecoder().decode(content)
  return decodeRacEnvelope(hexToBytes(text.trim()))
}
