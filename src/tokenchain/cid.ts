/**
 * Content addressing as the reference gets it from a default `ipfs add` (kubo v0.21 defaults):
 * CIDv0, sha2-256, dag-pb nodes carrying UnixFS "file" data, fixed 262,144-byte chunks, a balanced
 * DAG of at most 174 links per node, and no raw leaves.
 */
import { CID } from 'multiformats/cid'
import { utf8 } from './hash.js'
import { hash } from 'node:crypto'
import { base58btcEncode } from './base58.js'
import { Lru } from '../util/lru.js'
import { CHUNK_SIZE, UnixFsFileBuilder } from './unixfs-dag.js'

export { CHUNK_SIZE, MAX_LINKS } from './unixfs-dag.js'
const SHA2_256 = 0x12

/**
 * CIDs of recent short text contents. A validator hashes the same token content several times in
 * one transfer (a part's genesis check, then again as a sibling when its parent's burn is added
 * up, and the part that was split off the same parent): the id of a text never changes.
 *
 * The memo is keyed by the text itself, so it is bounded by the characters it holds as well as by
 * entries: a token's content is about 950 characters, and 4,096 of them held about 4 MiB, which a
 * quorum or a paying node filled in some 2,000 transfers (heap snapshots: 1.7 KB a transfer, the
 * largest growth of either). 256 KiB holds some 270 such texts, the contents of many transfers.
 */
const TEXT_MEMO_MAX = 4096
export const TEXT_MEMO_BYTES = 256 * 1024
const TEXT_MEMO_LONGEST = 4096
const textCids = new Lru<string>(TEXT_MEMO_MAX, { maxBytes: TEXT_MEMO_BYTES, sizeOf: (cid, text) => text.length + cid.length })

/** Entries and characters the text memo holds (tests). */
export function textMemoSize (): { entries: number, bytes: number } {
  return { entries: textCids.size, bytes: [...textCids.entries()].reduce((n, [k, v]) => n + k.length + v.length, 0) }
}

/** The CIDv0 (`Qm…`) that a default `ipfs add` gives for this file content. */
export function cidV0ForContent (content: Uint8Array | string): string {
  if (typeof content !== 'string' || content.length > TEXT_MEMO_LONGEST) return cidV0Uncached(content)
  const hit = textCids.get(content)
  if (hit !== undefined) return hit
  const cid = cidV0Uncached(content)
  textCids.set(content, cid)
  return cid
}

/** Writes the protobuf varint of `n` (below 2^53) at `at`; returns the offset after it. */
function varintAt (buf: Uint8Array, at: number, n: number): number {
  while (n >= 0x80) { buf[at++] = (n % 0x80) | 0x80; n = Math.floor(n / 0x80) }
  buf[at++] = n
  return at
}

const varintLength = (n: number): number => { let l = 1; while (n >= 0x80) { n = Math.floor(n / 0x80); l++ } return l }

/** Where short nodes are built (the hash is taken at once, so one buffer serves every call). */
const scratch = Buffer.allocUnsafe(4096)

/**
 * The CIDv0 of content that fits one chunk (`length` bytes; text as UTF-8), encoded by hand: the
 * dag-pb node {Data: UnixFS{Type: file, Data: content, filesize}} with no links, what `leaf`
 * builds through the libraries at several times the cost (a quorum hashes a token state for
 * every token of every transfer). test/unit/tokenchain/token-id.test.ts checks both give the same
 * id at every length class.
 */
function singleChunkCidV0 (content: Uint8Array | string, length: number): string {
  const unixfsLength = 2 + (length > 0 ? 1 + varintLength(length) : 0) + length + 1 + varintLength(length)
  const total = 1 + varintLength(unixfsLength) + unixfsLength
  const node = total <= scratch.length ? scratch : Buffer.allocUnsafe(total)
  let at = 0
  node[at++] = 0x0a
  at = varintAt(node, at, unixfsLength)
  node[at++] = 0x08
  node[at++] = 0x02
  if (length > 0) {
    node[at++] = 0x12
    at = varintAt(node, at, length)
    if (typeof content === 'string') at += node.write(content, at, 'utf8')
    else { node.set(content, at); at += length }
  }
  node[at++] = 0x18
  at = varintAt(node, at, length)
  const multihash = new Uint8Array(34)
  multihash[0] = SHA2_256
  multihash[1] = 32
  multihash.set(hash('sha256', node.subarray(0, at), 'buffer'), 2)
  return base58btcEncode(multihash)
}

function cidV0Uncached (content: Uint8Array | string): string {
  const length = typeof content === 'string' ? Buffer.byteLength(content, 'utf8') : content.length
  if (length <= CHUNK_SIZE) return singleChunkCidV0(content, length)
  const bytes = typeof content === 'string' ? utf8(content) : content
  const dag = new UnixFsFileBuilder()
  for (let off = 0; off < bytes.length; off += CHUNK_SIZE) dag.addChunk(bytes.subarray(off, off + CHUNK_SIZE))
  return dag.finish().cid
}

const CIDV0_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/
/** A 46-character base58btc CIDv0, the shape the reference requires of token IDs. */
export function isCidV0 (s: unknown): s is string {
  if (typeof s !== 'string' || !CIDV0_RE.test(s)) return false
  try { return CID.parse(s).version === 0 } catch { return false }
}
