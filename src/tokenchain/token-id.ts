/**
 * Token IDs. Every token ID is the CIDv0 a default `ipfs add` gives for the token's content; the
 * content rules differ per kind.
 */
import { cidV0ForContent } from './cid.js'
import { sha256Hex } from './hash.js'
import { RbtError, ErrorCode } from '../util/errors.js'
import { goJsonString } from '../util/go-json.js'

export { cidV0ForContent, isCidV0 } from './cid.js'
export { racTokenId, racTokenContent } from './rac.js'

const bad = (msg: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, msg)

/**
 * Tokens per level as far as the reference's table is known here; a whole token is valid only when
 * `0 <= number < limit`. Levels missing from this map are not range-checked.
 */
export const KNOWN_LEVEL_LIMITS: Readonly<Record<number, number>> = {
  1: 5_000_000, 2: 2_425_000, 3: 2_188_563, 4: 2_188_563, 78: 17_602
}
export const MAX_TOKEN_LEVEL = 78

export interface WholeTokenOptions {
  /** Old Java tokens wrote level 1 with two digits ("01…", 66 characters). */
  legacyTwoDigitLevel?: boolean
}

/** Main-net whole token content: zero-padded 3-digit level + hex SHA-256 of the decimal number. */
export function wholeTokenContent (level: number, tokenNumber: number, opts: WholeTokenOptions = {}): string {
  if (!Number.isSafeInteger(level) || level < 1 || level > MAX_TOKEN_LEVEL) throw bad(`token level ${level} is outside 1..${MAX_TOKEN_LEVEL}`)
  if (!Number.isSafeInteger(tokenNumber) || tokenNumber < 0) throw bad(`token number ${tokenNumber} must be a non-negative integer`)
  const limit = KNOWN_LEVEL_LIMITS[level]
  if (limit !== undefined && tokenNumber >= limit) throw bad(`token number ${tokenNumber} is beyond level ${level}'s ${limit} tokens`)
  const width = opts.legacyTwoDigitLevel === true ? 2 : 3
  return String(level).padStart(width, '0') + sha256Hex(String(tokenNumber))
}

export const wholeTokenId = (level: number, tokenNumber: number, opts: WholeTokenOptions = {}): string =>
  cidV0ForContent(wholeTokenContent(level, tokenNumber, opts))

/** The FT ID preimage: name, 0-based index and creator DID joined by single spaces. */
export function ftTokenPreimage (ftName: string, index: number, creatorDid: string): string {
  if (ftName === '') throw bad('FT name is empty')
  if (!Number.isSafeInteger(index) || index < 0) throw bad(`FT index ${index} must be a non-negative integer`)
  return `${ftName} ${index} ${creatorDid}`
}

export const ftTokenId = (ftName: string, index: number, creatorDid: string): string =>
  cidV0ForContent(ftTokenPreimage(ftName, index, creatorDid))

export { goJsonString }

/** Go `json.MarshalIndent(v, "", "  ")` of a flat struct of string fields, in field order. */
export function goIndentedJson (fields: Array<[string, string]>): string {
  if (fields.length === 0) return '{}'
  return '{\n' + fields.map(([k, v]) => `  ${goJsonString(k)}: ${goJsonString(v)}`).join(',\n') + '\n}'
}

/** NFT ID: CIDv0 of `{"DID", "ArtifactHash"}` as Go's indented JSON. */
export const nftTokenId = (creatorDid: string, artifactHash: string): string =>
  cidV0ForContent(goIndentedJson([['DID', creatorDid], ['ArtifactHash', artifactHash]]))

export interface SmartContractSources {
  /** CIDv0 of the wasm binary file (see {@link cidV0ForContent}). */
  binaryCodeHash: string
  rawCodeHash: string
  schemaCodeHash: string
  did: string
}

export const smartContractDescriptor = (s: SmartContractSources): string =>
  goIndentedJson([['binaryCodeHash', s.binaryCodeHash], ['rawCodeHash', s.rawCodeHash], ['schemaCodeHash', s.schemaCodeHash], ['did', s.did]])

/** Smart-contract token ID: CIDv0 of the indented JSON descriptor of the three source CIDs + DID. */
export const smartContractTokenId = (s: SmartContractSources): string => cidV0ForContent(smartContractDescriptor(s))

/** The token-state hash quorums pin to mark a state as spent: CIDv0 of tokenID ‖ blockID. */
export const tokenStateHash = (tokenId: string, blockId: string): string => cidV0ForContent(tokenId + blockId)
