/**
 * Files and folders into the blockstore as `ipfs add` lays them out, in the two shapes the
 * reference uses (256 KiB chunks, balanced DAG of at most 174 links a node, both ways):
 *   - 'v0': a default `ipfs add` (tokens, NFT files): CIDv0, sha2-256, dag-pb leaves. The leaves
 *     and the DAG are those of src/tokenchain/unixfs-dag.ts, the builder the NFT artifacts use;
 *   - 'v1-sha3': `ipfs add -r --cid-version 1 --hash sha3-256` (a DID's folder): CIDv1, sha3-256,
 *     raw leaves (a file of one chunk is its raw block).
 * A file is read one chunk at a time; only the inner nodes (one per 174 chunks) are held.
 */
import { createReadStream } from 'node:fs'
import * as dagPb from '@ipld/dag-pb'
import { UnixFS } from 'ipfs-unixfs'
import type { CID } from 'multiformats/cid'
import { CHUNK_SIZE, MAX_LINKS, leafBlock } from '../../tokenchain/unixfs-dag.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { DAG_PB, RAW, SHA2_256, SHA3_256, cidFor, type Blockstore } from './blockstore.js'

export type CidLayout = 'v0' | 'v1-sha3'

interface Node { cid: CID, fileSize: number, tsize: number }

function shapeOf (layout: CidLayout): { version: 0 | 1, hash: number, rawLeaves: boolean } {
  return layout === 'v0' ? { version: 0, hash: SHA2_256, rawLeaves: false } : { version: 1, hash: SHA3_256, rawLeaves: true }
}

/** Cuts any sequence of byte pieces into CHUNK_SIZE chunks (the last may be shorter). */
export async function * rechunk (source: AsyncIterable<Uint8Array> | Iterable<Uint8Array>): AsyncGenerator<Uint8Array> {
  let buf = Buffer.allocUnsafe(CHUNK_SIZE)
  let fill = 0
  for await (const piece of source) {
    let off = 0
    while (off < piece.length) {
      const n = Math.min(CHUNK_SIZE - fill, piece.length - off)
      buf.set(piece.subarray(off, off + n), fill)
      fill += n
      off += n
      if (fill === CHUNK_SIZE) {
        yield buf
        buf = Buffer.allocUnsafe(CHUNK_SIZE)
        fill = 0
      }
    }
  }
  if (fill > 0) yield buf.subarray(0, fill)
}

/** Builds one file's DAG chunk by chunk, storing every block as it is made. */
class FileDag {
  private readonly levels: Node[][] = []
  private chunks = 0
  private readonly shape: ReturnType<typeof shapeOf>

  constructor (private readonly store: Blockstore, layout: CidLayout) {
    this.shape = shapeOf(layout)
  }

  async addChunk (chunk: Uint8Array): Promise<void> {
    if (chunk.length > CHUNK_SIZE) throw new Error('a chunk is larger than the chunk size')
    const { version, hash, rawLeaves } = this.shape
    const block = rawLeaves ? chunk : leafBlock(chunk)
    const cid = cidFor(version, rawLeaves ? RAW : DAG_PB, hash, block)
    await this.store.put(cid, block, { verified: true })
    this.chunks++
    await this.push(0, { cid, fileSize: chunk.length, tsize: block.length })
  }

  private async push (level: number, node: Node): Promise<void> {
    const list = (this.levels[level] ??= [])
    if (list.length === MAX_LINKS) {
      const parent = await this.parent(list)
      list.length = 0
      await this.push(level + 1, parent)
    }
    list.push(node)
  }

  private async parent (children: Node[]): Promise<Node> {
    const fs = new UnixFS({ type: 'file' })
    for (const c of children) fs.addBlockSize(BigInt(c.fileSize))
    const bytes = dagPb.encode({ Data: fs.marshal(), Links: children.map((c) => ({ Hash: c.cid, Name: '', Tsize: c.tsize })) })
    const cid = cidFor(this.shape.version, DAG_PB, this.shape.hash, bytes)
    await this.store.put(cid, bytes, { verified: true })
    return { cid, fileSize: children.reduce((s, c) => s + c.fileSize, 0), tsize: bytes.length + children.reduce((s, c) => s + c.tsize, 0) }
  }

  async finish (): Promise<Node> {
    if (this.chunks === 0) await this.addChunk(new Uint8Array(0))
    for (let level = 0; ; level++) {
      const list = this.levels[level] ?? []
      const higher = this.levels.slice(level + 1).some((l) => l !== undefined && l.length > 0)
      if (!higher && list.length === 1) return list[0]
      if (list.length > 0) {
        const parent = await this.parent(list)
        list.length = 0
        await this.push(level + 1, parent)
      }
    }
  }
}

export interface Imported {
  cid: CID
  /** bytes of the file (the sum of its files for a folder) */
  size: number
  /** bytes of every block under the root, as a parent link's Tsize counts them */
  tsize: number
}

/** Adds a file given as bytes, byte pieces or a path on disk. */
export async function importFile (store: Blockstore, source: Uint8Array | AsyncIterable<Uint8Array> | Iterable<Uint8Array> | { path: string }, layout: CidLayout = 'v0'): Promise<Imported> {
  const dag = new FileDag(store, layout)
  const pieces = source instanceof Uint8Array
    ? [source]
    : 'path' in source ? createReadStream(source.path, { highWaterMark: CHUNK_SIZE }) : source
  for await (const chunk of rechunk(pieces)) await dag.addChunk(chunk)
  const root = await dag.finish()
  return { cid: root.cid, size: root.fileSize, tsize: root.tsize }
}

/** A folder's content: file bytes or sub-folders, by name. */
export interface FolderTree { [name: string]: Uint8Array | FolderTree }

const UNIXFS_DIRECTORY = Uint8Array.of(0x08, 0x01)

/**
 * Adds a folder (`ipfs add -r`): each entry, then the directory node linking them in byte order
 * of their names. With 'v1-sha3' over a DID's public files the root is the DID itself.
 */
export async function importFolder (store: Blockstore, tree: FolderTree, layout: CidLayout = 'v1-sha3'): Promise<Imported> {
  const names = Object.keys(tree).sort((a, b) => Buffer.compare(Buffer.from(a, 'utf8'), Buffer.from(b, 'utf8')))
  const links: dagPb.PBLink[] = []
  let size = 0
  let childTsize = 0
  for (const name of names) {
    if (name === '' || name.includes('/') || name === '.' || name === '..') throw new RbtError(ErrorCode.INVALID_INPUT, `invalid name in a folder: ${JSON.stringify(name)}`)
    const entry = tree[name]
    const r = entry instanceof Uint8Array ? await importFile(store, entry, layout) : await importFolder(store, entry, layout)
    links.push({ Name: name, Tsize: r.tsize, Hash: r.cid })
    size += r.size
    childTsize += r.tsize
  }
  const { version, hash } = shapeOf(layout)
  const bytes = dagPb.encode({ Data: UNIXFS_DIRECTORY, Links: links })
  const cid = cidFor(version, DAG_PB, hash, bytes)
  await store.put(cid, bytes, { verified: true })
  return { cid, size, tsize: bytes.length + childTsize }
}
