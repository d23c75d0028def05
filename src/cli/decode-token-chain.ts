import { goJsonString } from '../util/go-json.js'

/**
 * `decodetokenchain`: the reference CLI's local rewrite of a token-chain dump (dump.json, blocks
 * as maps with numeric keys) into output.json with symbolic key names. The key names and the
 * rewrite rule follow the reference's `command/decodeTokenChain.go`:
 * - a numeric key is prefixed with the path of the numeric keys above it ("5" → "6" → "4" gives
 *   "5-6-4"); a non-numeric key (a DID, a token id, "epoch") keeps its name and passes its path on;
 * - each resulting key found in the table below is renamed, any other stays as it is;
 * - the output is indented by two spaces with keys in byte order, as Go's encoding/json writes it.
 */
export const TOKEN_CHAIN_KEY_NAMES: Readonly<Record<string, string>> = {
  1: 'TCTokenTypeKey',
  2: 'TCTransTypeKey',
  3: 'TCTokenOwnerKey',
  4: 'TCGenesisBlockKey',
  5: 'TCTransInfoKey',
  6: 'TCSmartContractKey',
  7: 'TCQuorumSignatureKey',
  8: 'TCPledgeDetailsKey',
  9: 'TCSmartContractDataKey',
  10: 'TCTokenValueKey',
  11: 'TCChildTokensKey',
  12: 'TCSenderSignatureKey',
  98: 'TCBlockHashKey',
  99: 'TCSignatureKey',
  epoch: 'TCEpoch',
  // the genesis block ("4") and its info ("4-2")
  '4-1': 'GBTypeKey',
  '4-2': 'GBInfoKey',
  '4-2-1': 'GITokenLevelKey',
  '4-2-2': 'GITokenNumberKey',
  '4-2-3': 'GIMigratedBlkIDKey',
  '4-2-4': 'GIPreviousIDKey',
  '4-2-5': 'GIParentIDKey',
  '4-2-6': 'GIGrandParentIDKey',
  '4-2-7': 'GICommitedTokensKey',
  '4-2-8': 'GISmartContractValueKey',
  // the transaction info ("5"), its tokens ("5-6") and committed tokens ("5-10")
  '5-1': 'TISenderDIDKey',
  '5-2': 'TIReceiverDIDKey',
  '5-3': 'TICommentKey',
  '5-4': 'TITIDKey',
  '5-5': 'TIBlockKey',
  '5-6': 'TITokensKey',
  '5-7': 'TIRefIDKey',
  '5-8': 'TIDeployerDIDKey',
  '5-9': 'TIExecutorDIDKey',
  '5-10': 'TICommitedTokensKey',
  '5-6-1': 'TTTokenTypeKey',
  '5-6-2': 'TTPledgedTokenKey',
  '5-6-3': 'TTPledgedDIDKey',
  '5-6-4': 'TTBlockNumberKey',
  '5-6-5': 'TTPreviousBlockIDKey',
  '5-6-6': 'TTUnpledgedIDKey',
  '5-6-7': 'TTCommitedDIDKey',
  '5-10-1': 'TTTokenTypeKey',
  '5-10-4': 'TTBlockNumberKey',
  '5-10-5': 'TTPreviousBlockIDKey',
  '5-10-6': 'TTUnpledgedIDKey',
  '5-10-7': 'TTCommitedDIDKey'
}

/** What Go's strconv.Atoi accepts (an optional sign, decimal digits, within 64 bits). */
const NUMERIC_KEY = /^[+-]?\d{1,18}$/

type Json = null | boolean | number | string | Json[] | { [k: string]: Json }

function isObject (v: unknown): v is Record<string, Json> {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function withPaths (value: Json, path: string): Json {
  if (Array.isArray(value)) return value.map((v) => withPaths(v, path))
  if (!isObject(value)) return value
  const out: Record<string, Json> = {}
  for (const [k, v] of Object.entries(value)) {
    if (NUMERIC_KEY.test(k)) {
      const key = path === '' ? k : `${path}-${k}`
      out[key] = withPaths(v, key)
    } else {
      out[k] = withPaths(v, path)
    }
  }
  return out
}

function renamed (value: Json): Json {
  if (Array.isArray(value)) return value.map(renamed)
  if (!isObject(value)) return value
  const out: Record<string, Json> = {}
  for (const [k, v] of Object.entries(value)) out[Object.hasOwn(TOKEN_CHAIN_KEY_NAMES, k) ? TOKEN_CHAIN_KEY_NAMES[k]! : k] = renamed(v)
  return out
}

/** The blocks of a dump with symbolic key names. */
export function decodeTokenChain (blocks: unknown[]): Json[] {
  return blocks.map((b) => renamed(withPaths(b as Json, '')))
}

/** JSON as Go's json.MarshalIndent(v, "", "  ") writes it: keys in byte order, <, > and & escaped. */
export function goMarshalIndent (value: Json, indent = ''): string {
  const inner = indent + '  '
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]'
    return '[\n' + value.map((v) => inner + goMarshalIndent(v, inner)).join(',\n') + '\n' + indent + ']'
  }
  if (isObject(value)) {
    const keys = Object.keys(value).sort(byteOrder)
    if (keys.length === 0) return '{}'
    return '{\n' + keys.map((k) => `${inner}${goJsonString(k)}: ${goMarshalIndent(value[k]!, inner)}`).join(',\n') + '\n' + indent + '}'
  }
  if (typeof value === 'string') return goJsonString(value)
  return JSON.stringify(value)
}

function byteOrder (a: string, b: string): number {
  const x = Buffer.from(a, 'utf8')
  const y = Buffer.from(b, 'utf8')
  return Buffer.compare(x, y)
}
