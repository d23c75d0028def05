/**
 * An NFT artifact on disk, never held whole in memory:
 *   - `ArtifactWriter` takes an upload's bytes as they arrive, writes them to a temporary file
 *     and builds the file's UnixFS DAG (its CID) chunk by chunk, with a size limit; a full disk is
 *     INSUFFICIENT_STORAGE and leaves no file behind; the bytes are copied once, into slabs
 *     that a worker thread writes and hashes;
 *   - the DAG index (`.dag` in the NFT's folder): the inner nodes of the artifact's DAG, so a
 *     node serves any block of the artifact by CID (docs/protocol.md, "Artifact blocks").
 */
import { randomBytes } from 'node:crypto'
import { mkdir, open, readFile, rm, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { CHUNK_SIZE, UnixFsFileBuilder } from '../../tokenchain/unixfs-dag.js'
import { leafDigestsHere, slabWorkerReady, writeAndHashOnWorker } from './leaf-hash-pool.js'
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

/** Bytes per slab: whole chunks, written and hashed in one job of the hash worker. */
const SLAB_BYTES = 4 * CHUNK_SIZE
/** Slabs being hashed or written at once; the upload waits for the oldest beyond this. */
const SLABS_IN_FLIGHT = 2
/**
 * Bytes per write system call. Larger writes (1 MiB) cost the kernel several times the CPU of
 * 256 KiB ones on the test machine, now and then, under memory pressure (decisions/0023); the
 * system calls saved are not worth it.
 */
const WRITE_BYTES = CHUNK_SIZE
/** Bytes written between background data syncs, so the sync before the answer has little left to flush. */
const SYNC_EVERY = 32 * 1024 * 1024

interface SlabInFlight {
  lengths: number[]
  /** the chunks' leaf digests and the slab, once written and hashed; undefined when either failed */
  done: Promise<{ digests: Uint8Array[], slab: Buffer } | undefined>
}

/**
 * The upload's bytes are copied once, into slabs (SLAB_BYTES, whole chunks, each in memory of its
 * own). A full slab is moved (not copied) to the hash worker (leaf-hash-pool.ts), which writes it
 * at its offset, a chunk per write, hashes its chunks and moves it back; up to SLABS_IN_FLIGHT
 * slabs are under way while the next fills, so receiving, writing and hashing overlap and the
 * event loop neither hashes nor waits on writes. The DAG takes the leaves in file order as slabs
 * finish; a slab is reused once it is back. Without a worker (RBTNODE_HASH_WORKERS=0, none
 * starts) and for the last, partial slab (all of a small upload), this thread hashes and the
 * threadpool writes. While the upload goes on the written data is synced in the background every
 * SYNC_EVERY bytes; that only spreads the work: `close` syncs the file, and only then is the
 * upload acknowledged.
 */
export class ArtifactWriter {
  private readonly dag = new UnixFsFileBuilder()
  private readonly free: Buffer[] = []
  private slab: Buffer | undefined
  private fill = 0
  /** the file offset of the slab being filled */
  private at = 0
  private readonly inflight: SlabInFlight[] = []
  private lastWrite: Promise<unknown> = Promise.resolve()
  /** whether full slabs go to the worker: asked at the first full slab */
  private onWorker: boolean | undefined
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

  /** Appends bytes (copied: the caller may reuse them); PAYLOAD_TOO_LARGE past the limit (the file is removed then). */
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
      // memory of its own (not the pool's, not shared): the worker takes it whole and gives it back
      this.slab ??= this.free.pop() ?? Buffer.allocUnsafeSlow(SLAB_BYTES)
      const n = Math.min(SLAB_BYTES - this.fill, bytes.length - off)
      this.slab.set(n === bytes.length ? bytes : bytes.subarray(off, off + n), this.fill)
      this.fill += n
      off += n
      if (this.fill === SLAB_BYTES) await this.submit()
    }
  }

  /** Hands the filled slab (or the last, shorter one) to the worker, or hashes it here and writes it. */
  private async submit (): Promise<void> {
    while (this.inflight.length >= SLABS_IN_FLIGHT) await this.retire()
    if (this.failed !== undefined) await this.raise()
    const slab = this.slab!
    const len = this.fill
    const at = this.at
    this.slab = undefined
    this.fill = 0
    this.at += len
    const lengths: number[] = []
    for (let o = 0; o < len; o += CHUNK_SIZE) lengths.push(Math.min(CHUNK_SIZE, len - o))
    if (len === SLAB_BYTES) this.onWorker ??= await slabWorkerReady().catch(() => false)
    let done: SlabInFlight['done']
    if (len === SLAB_BYTES && this.onWorker === true) {
      done = writeAndHashOnWorker({ slab: slab.buffer as ArrayBuffer, lengths, fd: this.fh.fd, at }).then((r) => {
        if (r.error !== undefined) { this.failed ??= Object.assign(new Error(r.error.message), r.error.code !== undefined ? { code: r.error.code } : {}); return undefined }
        return { digests: r.digests, slab: Buffer.from(r.slab) }
      }, (e) => { this.failed ??= e; return undefined })
    } else {
      const bytes = slab.subarray(0, len)
      const digests = leafDigestsHere(bytes, lengths)
      // one write at a time, a chunk per write (see WRITE_BYTES)
      const written = this.lastWrite.then(async () => {
        for (let o = 0; o < len; o += WRITE_BYTES) {
          const n = Math.min(WRITE_BYTES, len - o)
          const { bytesWritten } = await this.fh.write(slab, o, n, at + o)
          if (bytesWritten !== n) throw Object.assign(new Error('short write'), { code: 'ENOSPC' })
        }
      })
      this.lastWrite = written.catch(() => {})
      done = written.then(() => ({ digests, slab }), (e) => { this.failed ??= e; return undefined })
    }
    this.inflight.push({ lengths, done })
    if (this.at - this.syncedAt >= SYNC_EVERY && this.syncing === undefined) {
      this.syncedAt = this.at
      const before = this.inflight.map((f) => f.done)
      this.syncing = Promise.all(before)
        .then(async () => { if (this.failed === undefined && !this.closed) await this.fh.datasync() })
        .catch((e) => { this.failed ??= e })
        .finally(() => { this.syncing = undefined })
    }
  }

  /** The oldest slab, once written and hashed: its leaves join the DAG (file order), its buffer is free again. */
  private async retire (): Promise<void> {
    const f = this.inflight.shift()!
    const r = await f.done
    if (r === undefined) return
    for (let i = 0; i < r.digests.length; i++) this.dag.addLeafDigest(r.digests[i], f.lengths[i])
    if (r.slab.length === SLAB_BYTES) this.free.push(r.slab)
  }

  /** Waits for every slab and background sync started. */
  private async settle (): Promise<void> {
    while (this.inflight.length > 0) await this.retire()
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
    if (this.fill > 0) await this.submit()
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
