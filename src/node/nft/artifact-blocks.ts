/**
 * The serving side of artifact blocks (`nft.blocks`, docs/protocol.md "Artifact blocks"): any
 * block of a held artifact's UnixFS DAG by CID, the inner nodes from the NFT's DAG index, a leaf
 * read from the artifact file at its offset and wrapped into its node. Each block is read into a
 * buffer of its own that goes down the stream as it is (binary frames, no copy); the pages a
 * caller has not granted credit for are not read, so a request holds at most its credit window of
 * blocks.
 */
import { open } from 'node:fs/promises'
import { CHUNK_SIZE, decodeInnerNode, leafFrame, nodeCid } from '../../tokenchain/unixfs-dag.js'
import type { NftFileStore } from '../../token-files/nft/nft-files.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { Lru } from '../../util/lru.js'

/** Blocks asked for in one request, at most. */
export const MAX_BLOCKS_PER_REQUEST = 64

interface BlockIndex {
  path: string
  size: number
  inner: Map<string, Uint8Array>
  /** leaf CID → chunk numbers (the same chunk content can appear more than once) */
  leaves: Map<string, number[]>
}

/**
 * Test builds only (RBTNODE_TEST_HOOKS=1): RBTNODE_NFT_FAULT=corrupt:<n> flips a byte of every
 * n-th leaf served, slow:<ms> waits that long before each leaf (to cut a fetch midway in tests).
 */
export interface BlockFault { corruptEvery?: number, delayMs?: number }

export function blockFaultFromEnv (env: NodeJS.ProcessEnv = process.env): BlockFault | undefined {
  if (env.RBTNODE_TEST_HOOKS !== '1' || env.RBTNODE_NFT_FAULT === undefined) return undefined
  const f: BlockFault = {}
  for (const part of env.RBTNODE_NFT_FAULT.split(',')) {
    const [k, v] = part.split(':')
    if (k === 'corrupt') f.corruptEvery = Number(v)
    if (k === 'slow') f.delayMs = Number(v)
  }
  return f
}

export class ArtifactBlockServer {
  private readonly indexes = new Lru<BlockIndex>(16)
  private served = 0

  constructor (private readonly files: NftFileStore, private readonly fault?: BlockFault) {}

  private async index (nftId: string): Promise<BlockIndex> {
    const hit = this.indexes.get(nftId)
    if (hit !== undefined) return hit
    const a = await this.files.artifactFile(nftId)
    const innerList = await this.files.dagIndex(nftId)
    const inner = new Map<string, Uint8Array>()
    for (const n of innerList) inner.set(nodeCid(n), n)
    const leaves = new Map<string, number[]>()
    const walk = (cid: string, offset: number): void => {
      const node = inner.get(cid)
      if (node === undefined) {
        if (offset % CHUNK_SIZE !== 0) throw new RbtError(ErrorCode.STORAGE, `NFT ${nftId}: the DAG index is not in the 256 KiB layout`)
        const list = leaves.get(cid) ?? []
        list.push(offset / CHUNK_SIZE)
        leaves.set(cid, list)
        return
      }
      let off = offset
      for (const l of decodeInnerNode(node).links) { walk(l.cid, off); off += l.size }
    }
    walk(a.cid, 0)
    const idx: BlockIndex = { path: a.path, size: a.size, inner, leaves }
    this.indexes.set(nftId, idx)
    return idx
  }

  /**
   * The blocks asked for, in order; NOT_FOUND for a CID that is not a block of the artifact. A leaf
   * is read from the file straight into a buffer of its own, framed in place (its node's prefix and
   * suffix around the data), and handed on without further copies.
   */
  async * blocks (nftId: string, cids: readonly string[], signal?: AbortSignal): AsyncGenerator<{ cid: string, block: Uint8Array }> {
    const idx = await this.index(nftId)
    const fh = await open(idx.path, 'r')
    const full = leafFrame(CHUNK_SIZE)
    try {
      for (const cid of cids) {
        if (signal?.aborted === true) return
        const node = idx.inner.get(cid)
        if (node !== undefined) { yield { cid, block: plain(node) }; continue }
        const chunk = idx.leaves.get(cid)?.[0]
        if (chunk === undefined) throw new RbtError(ErrorCode.NOT_FOUND, `block ${cid} is not part of NFT ${nftId}'s artifact`)
        const offset = chunk * CHUNK_SIZE
        const length = Math.min(CHUNK_SIZE, idx.size - offset)
        const f = length === CHUNK_SIZE ? full : leafFrame(length)
        // not a pooled or reused buffer: the stream may still hold it after this page is yielded
        const block = new Uint8Array(f.prefix.length + length + f.suffix.length)
        block.set(f.prefix, 0)
        const { bytesRead } = await fh.read(block, f.prefix.length, length, offset)
        if (bytesRead !== length) throw new RbtError(ErrorCode.STORAGE, `NFT ${nftId}: the artifact file is shorter than its DAG`)
        block.set(f.suffix, f.prefix.length + length)
        this.served++
        if (this.fault?.delayMs !== undefined) await new Promise((resolve) => setTimeout(resolve, this.fault?.delayMs))
        if (this.fault?.corruptEvery !== undefined && this.served % this.fault.corruptEvery === 0) block[block.length >> 1] ^= 0xff
        yield { cid, block }
      }
    } finally {
      await fh.close()
    }
  }
}

/**
 * The bytes as a plain Uint8Array: the JSON frame encoder's JSON.stringify would first call a
 * Buffer's toJSON, which turns the bytes into an array of numbers only to be thrown away.
 */
const plain = (b: Uint8Array): Uint8Array => Buffer.isBuffer(b) ? new Uint8Array(b.buffer, b.byteOffset, b.byteLength) : b
