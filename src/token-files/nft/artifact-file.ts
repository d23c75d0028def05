/**
 * An NFT artifact on disk, never held whole in memory:
 *   - `ArtifactWriter` takes an upload's bytes as they arrive, writes them to a temporary file
 *     and builds the file's UnixFS DAG (its CID) chunk by chunk, with a size limit; a full disk is
 *     INSUFFICIENT_STORAGE and leaves no file behind;
 *   - the DAG index (`.dag` in the NFT's folder): the inner nodes of the artifact's DAG, so a
 *     node serves any block of the artifact by CID (docs/protocol.md, "Artifact blocks").
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { CHUNK_SIZE, UnixFsFileBuilder, leafDigest } from '../../tokenchain/unixfs-dag.js'
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

export class ArtifactWriter {
  private readonly dag = new UnixFsFileBuilder()
  /** two chunk buffers: one fills while the other is written */
  private readonly bufs = [Buffer.allocUnsafe(CHUNK_SIZE), Buffer.allocUnsafe(CHUNK_SIZE)]
  private cur = 0
  private fill = 0
  private size = 0
  private pending: Promise<unknown> = Promise.resolve()
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

  /** Appends bytes; PAYLOAD_TOO_LARGE past the limit (the file is removed then). */
  async write (bytes: Uint8Array): Promise<void> {
    if (this.closed) throw new Error('artifact writer closed')
    if (this.size + bytes.length > this.maxBytes) {
      await this.abort()
      throw new RbtError(ErrorCode.PAYLOAD_TOO_LARGE, `the NFT artifact is larger than this node's limit of ${this.maxBytes} bytes (rbtnode run -nftArtifactLimit, config rbtnode.nft_artifact_limit)`)
    }
    this.size += bytes.length
    let off = 0
    while (off < bytes.length) {
      const n = Math.min(CHUNK_SIZE - this.fill, bytes.length - off)
      this.bufs[this.cur].set(bytes.subarray(off, off + n), this.fill)
      this.fill += n
      off += n
      if (this.fill === CHUNK_SIZE) await this.flush()
    }
  }

  /** Hashes the filled chunk and starts writing it; waits for the previous write first (its buffer is next). */
  private async flush (): Promise<void> {
    const buf = this.bufs[this.cur]
    const chunk = buf.subarray(0, this.fill)
    this.dag.addLeafDigest(leafDigest(chunk), chunk.length)
    await this.settle()
    const len = this.fill
    this.pending = this.fh.write(buf, 0, len).then(({ bytesWritten }) => {
      if (bytesWritten !== len) throw Object.assign(new Error('short write'), { code: 'ENOSPC' })
    }).catch((e) => { this.failed ??= e })
    this.cur ^= 1
    this.fill = 0
  }

  private async settle (): Promise<void> {
    await this.pending
    if (this.failed !== undefined) {
      const e = this.failed
      await this.abort()
      throw fileWriteError(this.what, e)
    }
  }

  /** Writes the last chunk, syncs and closes the file: the upload, ready to move into place. */
  async close (): Promise<ArtifactUpload> {
    if (this.fill > 0) await this.flush()
    await this.settle()
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
    await this.pending.catch(() => {})
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
