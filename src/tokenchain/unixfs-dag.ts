/**
 * A file's UnixFS DAG as a default `ipfs add` builds it (see cid.ts), built and read one 256 KiB
 * chunk at a time, so a file of any size is hashed, served and checked without being held whole:
 *   - `UnixFsFileBuilder` takes the chunks in order and gives the root CID and the inner nodes
 *     (the only nodes worth keeping: leaves are the file's bytes with a few bytes around them);
 *   - `leafBlock` / `leafData` turn a chunk into its leaf node and back (a leaf's frame and
 *     digest are in unixfs-leaf.ts, which needs nothing but node:crypto: the hash worker loads it);
 *   - `decodeInnerNode` reads an inner node's links and the file size under each;
 *   - `blockMatchesCid` checks a block fetched from a peer against the CID it was asked for.
 */
import { createHash } from 'node:crypto'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import { CID } from 'multiformats/cid'
import { create as createDigest } from 'multiformats/hashes/digest'
import { ErrorCode, RbtError } from '../util/errors.js'
import { CHUNK_SIZE, frameOf, leafDigest, leafFrame } from './unixfs-leaf.js'

export { CHUNK_SIZE, leafDigest, leafFrame }

export const MAX_LINKS = 174
const SHA2_256 = 0x12

/** The leaf node (the block a peer serves) of one chunk. */
export function leafBlock (chunk: Uint8Array): Buffer {
  const f = frameOf(chunk.length)
  return Buffer.concat([f.prefix, chunk, f.suffix])
}

/** The CIDv0 of a sha2-256 digest. */
export function cidOfDigest (digest: Uint8Array): CID {
  return CID.createV0(createDigest(SHA2_256, digest))
}

/** The CIDv0 of a DAG node's own bytes. */
export function nodeCid (node: Uint8Array): string {
  return cidOfDigest(createHash('sha256').update(node).digest()).toString()
}

/** The file bytes a leaf node carries, or undefined when `block` is not a UnixFS file leaf. */
export function leafData (block: Uint8Array): Uint8Array | undefined {
  // the encoding `ipfs add` gives (leafFrame): read in place, no decoding; anything else is decoded
  for (let overhead = 14; overhead >= 4; overhead--) {
    const length = block.length - overhead
    if (length < 0 || length > CHUNK_SIZE) continue
    const f = frameOf(length)
    if (f.prefix.length + length + f.suffix.length !== block.length) continue
    if (Buffer.from(block.buffer, block.byteOffset, f.prefix.length).equals(f.prefix) &&
      Buffer.from(block.buffer, block.byteOffset + block.length - f.suffix.length, f.suffix.length).equals(f.suffix)) {
      return block.subarray(f.prefix.length, f.prefix.length + length)
    }
  }
  try {
    const n = dagPb.decode(block)
    if (n.Links.length > 0 || n.Data === undefined) return undefined
    const fs = UnixFS.unmarshal(n.Data)
    if (fs.type !== 'file' && fs.type !== 'raw') return undefined
    return fs.data ?? new Uint8Array(0)
  } catch {
    return undefined
  }
}

export interface InnerNode {
  /** children in file order, each with the file bytes under it */
  links: Array<{ cid: string, size: number }>
}

/** An inner (linking) node of a file DAG; throws VERIFICATION_FAILED when it is not one. */
export function decodeInnerNode (block: Uint8Array): InnerNode {
  let n: dagPb.PBNode
  let fs: UnixFS
  try {
    n = dagPb.decode(block)
    fs = UnixFS.unmarshal(n.Data ?? new Uint8Array(0))
  } catch {
    throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'a DAG node is not a dag-pb UnixFS node')
  }
  if (fs.type !== 'file' || n.Links.length === 0 || fs.blockSizes.length !== n.Links.length || (fs.data !== undefined && fs.data.length > 0)) {
    throw new RbtError(ErrorCode.VERIFICATION_FAILED, 'a DAG node is not an inner node of a UnixFS file')
  }
  return { links: n.Links.map((l, i) => ({ cid: l.Hash.toString(), size: Number(fs.blockSizes[i]) })) }
}

/** Whether a node has links (an inner node) rather than data (a leaf). */
export function hasLinks (block: Uint8Array): boolean {
  try { return dagPb.decode(block).Links.length > 0 } catch { return false }
}

/** Whether sha2-256(block) is the digest `cid` names (CIDv0 or a sha2-256 CIDv1). */
export function blockMatchesCid (cid: string, block: Uint8Array): boolean {
  let parsed: CID
  try { parsed = CID.parse(cid) } catch { return false }
  if (parsed.multihash.code !== SHA2_256) return false
  return Buffer.from(parsed.multihash.digest).equals(createHash('sha256').update(block).digest())
}

interface Built { cid: CID, fileSize: number, cumulative: number }

/**
 * Builds a file's DAG from its chunks in order (every chunk CHUNK_SIZE bytes but the last): the
 * balanced layout of at most MAX_LINKS links a node, grouped level by level as `ipfs add` does.
 * Memory: one pending list per level (at most MAX_LINKS entries each) and the inner nodes made.
 */
export class UnixFsFileBuilder {
  private readonly levels: Built[][] = []
  private readonly inner: Uint8Array[] = []
  private chunks = 0
  private done = false

  /** Adds the next chunk (hashed here); gives its leaf's CID. */
  addChunk (chunk: Uint8Array): string {
    return this.addLeafDigest(leafDigest(chunk), chunk.length).toString()
  }

  /**
   * Adds the next chunk by its leaf digest (when the caller hashed it); gives its leaf's CID, not
   * turned into text (an upload adds thousands and needs none of their strings).
   */
  addLeafDigest (digest: Uint8Array, length: number): CID {
    if (this.done) throw new Error('the DAG is finished')
    if (length > CHUNK_SIZE) throw new Error('a chunk is larger than the chunk size')
    const f = frameOf(length)
    const cid = cidOfDigest(digest)
    this.chunks++
    this.push(0, { cid, fileSize: length, cumulative: f.prefix.length + length + f.suffix.length })
    return cid
  }

  private push (level: number, node: Built): void {
    const list = (this.levels[level] ??= [])
    if (list.length === MAX_LINKS) {
      this.push(level + 1, this.parent(list))
      list.length = 0
    }
    list.push(node)
  }

  private parent (children: Built[]): Built {
    const fs = new UnixFS({ type: 'file' })
    for (const c of children) fs.addBlockSize(BigInt(c.fileSize))
    const bytes = dagPb.encode({ Data: fs.marshal(), Links: children.map((c) => ({ Hash: c.cid, Name: '', Tsize: c.cumulative })) })
    this.inner.push(bytes)
    const cid = cidOfDigest(createHash('sha256').update(bytes).digest())
    return { cid, fileSize: children.reduce((s, c) => s + c.fileSize, 0), cumulative: bytes.length + children.reduce((s, c) => s + c.cumulative, 0) }
  }

  /** The root CID, the file size and the inner nodes (none for a file of one chunk). */
  finish (): { cid: string, size: number, inner: Uint8Array[] } {
    if (this.done) throw new Error('the DAG is finished')
    if (this.chunks === 0) this.addChunk(new Uint8Array(0))
    this.done = true
    for (let level = 0; ; level++) {
      const list = this.levels[level] ?? []
      const higher = this.levels.slice(level + 1).some((l) => l !== undefined && l.length > 0)
      if (!higher && list.length === 1) {
        const root = list[0]
        return { cid: root.cid.toString(), size: root.fileSize, inner: this.inner }
      }
      if (list.length > 0) this.push(level + 1, this.parent(list))
      list.length = 0
    }
  }
}
