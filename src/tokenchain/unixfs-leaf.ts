/**
 * A UnixFS file leaf as a default `ipfs add` encodes it (unixfs-dag.ts builds the rest of the
 * DAG): the frame around a chunk's bytes and the leaf's digest. Nothing here but node:crypto, so
 * the upload's hash worker (token-files/nft/leaf-hash-worker.ts) loads little.
 */
import { createHash } from 'node:crypto'

export const CHUNK_SIZE = 262_144

const varintLength = (n: number): number => { let l = 1; while (n >= 0x80) { n = Math.floor(n / 0x80); l++ } return l }
function varint (n: number): number[] {
  const out: number[] = []
  while (n >= 0x80) { out.push((n % 0x80) | 0x80); n = Math.floor(n / 0x80) }
  out.push(n)
  return out
}

/**
 * The bytes of a leaf node around its `length` data bytes: dag-pb {Data: UnixFS{Type: file,
 * Data, filesize}} and no links. An empty chunk carries no Data field (as `ipfs add` encodes it).
 */
export function leafFrame (length: number): { prefix: Buffer, suffix: Buffer } {
  const unixfsLength = 2 + (length > 0 ? 1 + varintLength(length) : 0) + length + 1 + varintLength(length)
  const prefix = [0x0a, ...varint(unixfsLength), 0x08, 0x02, ...(length > 0 ? [0x12, ...varint(length)] : [])]
  return { prefix: Buffer.from(prefix), suffix: Buffer.from([0x18, ...varint(length)]) }
}

const fullFrame = leafFrame(CHUNK_SIZE)
/** The frame of a leaf of `length` bytes (a full chunk's is made once). */
export const frameOf = (length: number): { prefix: Buffer, suffix: Buffer } => length === CHUNK_SIZE ? fullFrame : leafFrame(length)

/** The sha2-256 of a chunk's leaf node, without building the node. */
export function leafDigest (chunk: Uint8Array): Buffer {
  const f = frameOf(chunk.length)
  return createHash('sha256').update(f.prefix).update(chunk).update(f.suffix).digest()
}
