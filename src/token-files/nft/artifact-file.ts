/**
 * An NFT artifact on disk, never held whole in memory:
 *   - `ArtifactWriter` takes an upload's bytes as they arrive, writes them to a temporary file
 *     and builds the file's UnixFS DAG (its CID) chunk by chunk, with a size limit; a full disk is
 *     INSUFFICIENT_STORAGE and leaves no file behind; the bytes are neither copied nor joined on
 *     the way (hashed in the pieces they came in, written a few chunks per vectored write);
 *   - the DAG index (`.dag` in the NFT's folder): the inner nodes of the artifact's DAG, so a
 *     node serves any block of the artifact by CID (docs/protocol.md, "Artifact blocks").
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { CHUNK_SIZE, UnixFsFileBuilder, leafDigestOfPieces } from '../../tokenchain/unixfs-dag.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import { fileWriteError } from '../../util/durable-write.js'

/** An artifact written to a temporary file, with its CID and DAG. */
export interface ArtifactUpload {
  /** the temporary file (moved into the NFT's folder, or removed) */
  path: string
  cid: string
  size: number
  /** the DAG's inner nodes, root last (none for an artifact of one chunk) */
  inner: Uint8Array[]
}

/** Prefix of temporary artifact files in the NFT directory (removed at start: nothing resumes them). */
export const UPLOAD_PREFIX = '.upload-'

/** Bytes handed to the disk in one system call: whole chunks, already hashed. */
const WRITE_BYTES = 4 * CHUNK_SIZE
/** Writes in flight at once, each at its own offset; the upload waits for the oldest beyond this. */
const WRITES_IN_FLIGHT = 3
/** Bytes written between background data syncs, so the sync before the answer has little left to flush. */
const SYNC_EVERY = 32 * 1024 * 1024
/** Pieces smaller than this are copied into a staging buffer rather than kept by reference. */
const SMALL_PIECE = 8 * 1024
const STAGE_BYTES = 64 * 1024

/**
 * Takes an upload's bytes without copying them: each chunk is hashed from the pieces it arrived
 * in, and a few chunks at a time go to the disk in one vectored write at their offset, up to
 * WRITES_IN_FLIGHT at once, so receiving, hashing and writing overlap. The bytes given to `write`
 * are kept (by reference) until written: the caller must not change them afterwards. While the
 * upload goes on the written data is synced in the background every SYNC_EVERY bytes; that is
 * only to spread the work: `close` syncs the file and only then is the upload acknowledged.
 */
export class ArtifactWriter {
  private readonly dag = new UnixFsFileBuilder()
  /** the chunk being filled, as pieces (views of the callers' bytes or of the staging buffer) */
  private leaf: Uint8Array[] = []
  private leafFill = 0
  /** hashed chunks waiting for their write, and where they go in the file */
  private batch: Uint8Array[] = []
  private batchBytes = 0
  private batchAt = 0
  private readonly writes: Array<Promise<void>> = []
  private stage: Buffer | undefined
  private stageFill = 0
  private syncedAt = 0
  private syncing: Promise<void> | undefined
  private size = 0
  private failed: unknown
  private closed = false

  private constructor (readonly path: string, private readonly fh: FileHandle, readonly maxBytes: number, private readonly what: string) {}

  /** A new temporary file in `dir` (the NFT directory, so the final rename stays on one disk). */
  static async open (dir: string, maxBytes: number, what = 'the NFT artifact'): Promise<ArtifactWriter> {
    const path = join(dir, `${UPLOAD_PREFIX}${randomBytes(8).toString('hex')}`)
    let fh: FileHandle
    try {
      await mkdir(dir, { recursive: true })
      fh = await open(path, 'wx', 0o644)
    } catch (e) { throw fileWriteError(what, e) }
    return new ArtifactWriter(path, fh, maxBytes, what)
  }

  get bytes (): number { return this.size }

  /** Appends bytes (kept until written: not to be changed by the caller); PAYLOAD_TOO_LARGE past the limit (the file is removed then). */
  async write (bytes: Uint8Array): Promise<void> {
    if (this.closed) throw new Error('artifact writer closed')
    if (this.failed !== undefined) await this.raise()
    if (this.size + bytes.length > this.maxBytes) {
      await this.abort()
      throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `the NFT artifact is larger than this node's limit of ${this.maxBytes} bytes (rbtnode run -nftArtifactLimit, config rbtnode.nft_artifact_limit)`)
    }
    this.size += bytes.length
    let off = 0
    while (off < bytes.length) {
      const n = Math.min(CHUNK_SIZE - this.leafFill, bytes.length - off)
      this.addPiece(n === bytes.length ? bytes : bytes.subarray(off, off + n))
      off += n
      if (this.leafFill === CHUNK_SIZE) await this.chunkDone()
    }
  }

  private addPiece (p: Uint8Array): void {
    this.leafFill += p.length
    if (p.length >= SMALL_PIECE) { this.leaf.push(p); return }
    // small pieces (a slow sender's reads) are gathered, so a chunk is never thousands of pieces
    if (this.stage === undefined || this.stageFill + p.length > this.stage.length) { this.stage = Buffer.allocUnsafeSlow(STAGE_BYTES); this.stageFill = 0 }
    const start = this.stageFill
    this.stage.set(p, start)
    this.stageFill += p.length
    const last = this.leaf[this.leaf.length - 1]
    if (last !== undefined && last.buffer === this.stage.buffer && last.byteOffset + last.length === start) this.leaf[this.leaf.length - 1] = this.stage.subarray(last.byteOffset, this.stageFill)
    else this.leaf.push(this.stage.subarray(start, this.stageFill))
  }

  /** The filled chunk (or the last, shorter one) is hashed and joins the next write. */
  private async chunkDone (): Promise<void> {
    this.dag.addLeafDigest(leafDigestOfPieces(this.leaf, this.leafFill), this.leafFill)
    for (const p of this.leaf) this.batch.push(p)
    this.batchBytes += this.leafFill
    this.leaf = []
    this.leafFill = 0
    if (this.batchBytes >= WRITE_BYTES) await this.startWrite()
  }

  /** Starts writing the batch at its offset, once fewer than WRITES_IN_FLIGHT writes are under way. */
  private async startWrite (): Promise<void> {
    while (this.writes.length >= WRITES_IN_FLIGHT) await this.writes.shift()
    if (this.failed !== undefined) await this.raise()
    const bufs = this.batch
    const len = this.batchBytes
    const at = this.batchAt
    this.batch = []
    this.batchBytes = 0
    this.batchAt += len
    this.writes.push(this.fh.writev(bufs, at).then(({ bytesWritten }) => {
      if (bytesWritten !== len) throw Object.assign(new Error('short write'), { code: 'ENOSPC' })
    }).catch((e) => { this.failed ??= e }))
    if (this.batchAt - this.syncedAt >= SYNC_EVERY && this.syncing === undefined) {
      this.syncedAt = this.batchAt
      const before = [...this.writes]
      this.syncing = Promise.all(before)
        .then(async () => { if (this.failed === undefined && !this.closed) await this.fh.datasync() })
        .catch((e) => { this.failed ??= e })
        .finally(() => { this.syncing = undefined })
    }
  }

  /** Waits for every write and background sync started. */
  private async settle (): Promise<void> {
    while (this.writes.length > 0) await this.writes.shift()
    await this.syncing
  }

  private async raise (): Promise<never> {
    const e = this.failed
    await this.abort()
    throw fileWriteError(this.what, e)
  }

  /** Writes the last chunk, syncs and closes the file: the upload, ready to move into place. */
  async close (): Promise<ArtifactUpload> {
    if (this.closed) throw new Error('artifact writer closed')
    if (this.leafFill > 0) await this.chunkDone()
    if (this.batchBytes > 0) await this.startWrite()
    await this.settle()
    if (this.failed !== undefined) await this.raise()
    try {
      await this.fh.sync()
    } catch (e) {
      await this.abort()
      throw fileWriteError(this.what, e)
    }
    this.closed = true
    await this.fh.close()
    const built = this.dag.finish()
    return { path: this.path, cid: built.cid, size: this.size, inner: built.inner }
  }

  /** Gives up: the temporary file is closed and removed. */
  async abort (): Promise<void> {
    if (this.closed) return
    this.closed = true
    await this.settle()
    await this.fh.close().catch(() => {})
    await rm(this.path, { force: true }).catch(() => {})
  }
}

/** The DAG index file's bytes: each inner node as a 4-byte big-endian length and the node. */
export function encodeDagIndex (inner: readonly Uint8Array[]): Buffer {
  const parts: Buffer[] = []
  for (const n of inner) {
    const len = Buffer.allocUnsafe(4)
    len.writeUInt32BE(n.length)
    parts.push(len, Buffer.from(n.buffer, n.byteOffset, n.byteLength))
  }
  return Buffer.concat(parts)
}

export function decodeDagIndex (bytes: Uint8Array): Uint8Array[] {
  const out: Uint8Array[] = []
  const b = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength)
  for (let off = 0; off < b.length;) {
    if (off + 4 > b.length) throw new RbtError(ErrorCode.STORAGE, 'the NFT DAG index is truncated')
    const len = b.readUInt32BE(off)
    if (off + 4 + len > b.length) throw new RbtError(ErrorCode.STORAGE, 'the NFT DAG index is truncated')
    out.push(b.subarray(off + 4, off + 4 + len))
    off += 4 + len
  }
  return out
}

/** The DAG of a file already on disk, read chunk by chunk (for artifacts stored without an index). */
export async function dagOfFile (path: string): Promise<{ cid: string, size: number, inner: Uint8Array[] }> {
  const fh = await open(path, 'r')
  try {
    const dag = new UnixFsFileBuilder()
    const buf = Buffer.allocUnsafe(CHUNK_SIZE)
    for (;;) {
      let fill = 0
      while (fill < CHUNK_SIZE) {
        const { bytesRead } = await fh.read(buf, fill, CHUNK_SIZE - fill, null)
        if (bytesRead === 0) break
        fill += bytesRead
      }
      if (fill > 0) dag.addChunk(buf.subarray(0, fill))
      if (fill < CHUNK_SIZE) break
    }
    return dag.finish()
  } finally {
    await fh.close()
  }
}

export async function readDagIndex (path: string): Promise<Uint8Array[] | undefined> {
  try { return decodeDagIndex(await readFile(path)) } catch (e) {
    if ((e as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw e
  }
}
