/**
 * Content addressing as the reference gets it from a default `ipfs add` (kubo v0.21 defaults):
 * CIDv0, sha2-256, dag-pb nodes carrying UnixFS "file" data, fixed 262,144-byte chunks, a balanced
 * DAG of at most 174 links per node, and no raw leaves.
 */
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { sha256 } from '@noble/hashes/sha2.js'
import { create as createDigest } from 'multiformats/hashes/digest'
import { utf8 } from './hash.js'
import { createHash } from 'node:crypto'
import { base58btc } from 'multiformats/bases/base58'
import { Lru } from '../util/lru.js'

export const CHUNK_SIZE = 262_144
export const MAX_LINKS = 174
const SHA2_256 = 0x12

interface DagNode { cid: CID, fileSize: number, cumulative: number }

function putNode (node: dagPb.PBNode, fileSize: number, childCumulative: number): DagNode {
  const bytes = dagPb.encode(node)
  const cid = CID.createV0(createDigest(SHA2_256, sha256(bytes)))
  return { cid, fileSize, cumulative: bytes.length + childCumulative }
}

function leaf (chunk: Uint8Array): DagNode {
  const fs = new UnixFS({ type: 'file', data: chunk })
  return putNode({ Data: fs.marshal(), Links: [] }, chunk.length, 0)
}

function parent (children: DagNode[]): DagNode {
  const fs = new UnixFS({ type: 'file' })
  for (const c of children) fs.addBlockSize(BigInt(c.fileSize))
  const links = children.map(c => ({ Hash: c.cid, Name: '', Tsize: c.cumulative }))
  const fileSize = children.reduce((s, c) => s + c.fileSize, 0)
  const cum = children.reduce((s, c) => s + c.cumulative, 0)
  return putNode({ Data: fs.marshal(), Links: links }, fileSize, cum)
}

/**
 * CIDs of recent short text contents. A validator hashes the same token content several times in
 * one transfer (a part's genesis check, then again as a sibling when its parent's burn is added
 * up, and the part that was split off the same parent): the id of a text never changes.
 */
const TEXT_MEMO_MAX = 4096
const TEXT_MEMO_LONGEST = 4096
const textCids = new Lru<string>(TEXT_MEMO_MAX)

/** The CIDv0 (`Qm…`) that a default `ipfs add` gives for this file content. */
export function cidV0ForContent (content: Uint8Array | string): string {
  if (typeof content !== 'string' || content.length > TEXT_MEMO_LONGEST) return cidV0Uncached(content)
  const hit = textCids.get(content)
  if (hit !== undefined) return hit
  const cid = cidV0Uncached(content)
  textCids.set(content, cid)
  return cid
}

/** Protobuf varint of a non-negative integer below 2^53. */
function varint (n: number, out: number[]): void {
  while (n >= 0x80) { out.push((n % 0x80) | 0x80); n = Math.floor(n / 0x80) }
  out.push(n)
}

/**
 * The CIDv0 of content that fits one chunk, encoded by hand: the dag-pb node {Data: UnixFS{Type:
 * file, Data: content, filesize}} with no links, what `leaf` builds through the libraries at
 * several times the cost (a quorum hashes a token state for every token of every transfer).
 * test/unit/tokenchain/token-id.test.ts checks both give the same id at every length class.
 */
function singleChunkCidV0 (bytes: Uint8Array): string {
  const unixfs: number[] = [0x08, 0x02]
  if (bytes.length > 0) { unixfs.push(0x12); varint(bytes.length, unixfs) }
  const unixfsHead = unixfs.length
  const tail: number[] = [0x18]
  varint(bytes.length, tail)
  const dataLen = unixfsHead + bytes.length + tail.length
  const head: number[] = [0x0a]
  varint(dataLen, head)
  const node = Buffer.allocUnsafe(head.length + dataLen)
  node.set(head, 0)
  node.set(unixfs, head.length)
  node.set(bytes, head.length + unixfsHead)
  node.set(tail, head.length + unixfsHead + bytes.length)
  const multihash = Buffer.allocUnsafe(34)
  multihash[0] = SHA2_256
  multihash[1] = 32
  createHash('sha256').update(node).digest().copy(multihash, 2)
  return base58btc.baseEncode(multihash)
}

function cidV0Uncached (content: Uint8Array | string): string {
  const bytes = typeof content === 'string' ? utf8(content) : content
  let nodes: DagNode[] = []
  if (bytes.length <= CHUNK_SIZE) return singleChunkCidV0(bytes)
  for (let off = 0; off < bytes.length; off += CHUNK_SIZE) nodes.push(leaf(bytes.subarray(off, off + CHUNK_SIZE)))
  while (nodes.length > 1) {
    const next: DagNode[] = []
    for (let i = 0; i < nodes.length; i += MAX_LINKS) next.push(parent(nodes.slice(i, i + MAX_LINKS)))
    nodes = next
  }
  return nodes[0]!.cid.toString()
}

const CIDV0_RE = /^Qm[1-9A-HJ-NP-Za-km-z]{44}$/
/** A 46-character base58btc CIDv0, the shape the reference requires of token IDs. */
export function isCidV0 (s: unknown): s is string {
  if (typeof s !== 'string' || !CIDV0_RE.test(s)) return false
  try { return CID.parse(s).version === 0 } catch { return false }
}
