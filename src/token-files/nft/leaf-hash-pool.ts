/**
 * An upload's slabs written to disk and hashed on a worker thread, so the event loop that reads
 * the upload (sockets, multipart) neither hashes it nor issues its writes. A job is a slab of
 * whole chunks in memory of its own (an ArrayBuffer), moved to the worker and back without a
 * copy: the worker writes it at its offset of the file (the file descriptor is the process's) and
 * gives each chunk's `leafDigest` in order, with the slab.
 *
 * One worker by default, started on the first full slab (a small upload never starts it); idle,
 * it does not keep the process alive. `RBTNODE_HASH_WORKERS` sets the number (0: the calling
 * thread hashes and writes). A slab is moved only to a worker that is ready; a worker that dies
 * holding one takes the slab with it, and the upload fails (a write error: nothing is
 * acknowledged).
 */
import { writeSync } from 'node:fs'
import { WorkerPool, type WorkerPoolStats } from '../../util/worker-pool.js'
import { leafDigest } from '../../tokenchain/unixfs-leaf.js'

export interface SlabJob {
  /** the slab's memory, moved to the worker (detached here until it comes back) */
  slab: ArrayBuffer
  /** the chunks' lengths, in order, from the slab's start */
  lengths: number[]
  /** the file to write to and the offset of the slab's first byte */
  fd: number
  at: number
}

export interface SlabDone {
  /** the slab's memory, back */
  slab: ArrayBuffer
  /** the chunks' leaf digests, in order (none when the write failed) */
  digests: Uint8Array[]
  /** the write's failure (its errno code and message), when it failed */
  error?: { code?: string, message: string }
}

const WORKER_URL = new URL('./leaf-hash-worker.js', import.meta.url)
const ENV = 'RBTNODE_HASH_WORKERS'

/** The digests of the chunks of `bytes` (lengths in order), here. */
export function leafDigestsHere (bytes: Uint8Array, lengths: readonly number[]): Uint8Array[] {
  const out: Uint8Array[] = []
  let off = 0
  for (const n of lengths) {
    out.push(leafDigest(bytes.subarray(off, off + n)))
    off += n
  }
  return out
}

/** Writes all of `bytes` at `at` of `fd`, on this thread; a write that makes no progress is ENOSPC. */
export function writeAllSync (fd: number, bytes: Uint8Array, at: number): void {
  for (let off = 0; off < bytes.length;) {
    const n = writeSync(fd, bytes, off, bytes.length - off, at + off)
    if (n <= 0) throw Object.assign(new Error('short write'), { code: 'ENOSPC' })
    off += n
  }
}

/** A slab job, on this thread (the worker's side). */
export function writeAndHashSlab (job: SlabJob): SlabDone {
  const len = job.lengths.reduce((a, b) => a + b, 0)
  const bytes = new Uint8Array(job.slab, 0, len)
  try {
    // a chunk per write: larger writes cost the kernel more here (decisions/0023)
    for (let o = 0, i = 0; i < job.lengths.length; o += job.lengths[i], i++) writeAllSync(job.fd, bytes.subarray(o, o + job.lengths[i]), job.at + o)
  } catch (e) {
    const err = e as NodeJS.ErrnoException
    return { slab: job.slab, digests: [], error: { ...(err.code !== undefined ? { code: err.code } : {}), message: err.message } }
  }
  return { slab: job.slab, digests: leafDigestsHere(bytes, job.lengths) }
}

function workerCount (): number {
  const v = process.env[ENV]
  if (v === undefined || v.trim() === '') return 1
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new Error(`${ENV} must be a whole number ≥ 0, not ${JSON.stringify(v)}`)
  return n
}

let pool: WorkerPool<SlabJob, SlabDone> | undefined
let poolSize: number | undefined

/**
 * Whether slabs go to a worker: the pool is started (on the first call) and a worker is ready.
 * False with RBTNODE_HASH_WORKERS=0 or when no worker starts: the caller does the work.
 */
export async function slabWorkerReady (): Promise<boolean> {
  poolSize ??= workerCount()
  if (poolSize === 0) return false
  // retries 0: a job's slab is moved to its worker and cannot be sent again
  pool ??= new WorkerPool<SlabJob, SlabDone>({ url: WORKER_URL, size: poolSize, maxQueue: 256, retries: 0, name: 'leaf hash' })
  const p = pool
  await p.start()
  return p.available && p.readyWorkers > 0
}

/** Writes and hashes a slab on the worker (call after `slabWorkerReady` said yes); the slab is moved there and back. */
export async function writeAndHashOnWorker (job: SlabJob): Promise<SlabDone> {
  if (pool === undefined) throw new Error('the slab worker was not started')
  return await pool.run({ data: job, transfer: [job.slab] })
}

/** The pool's counts (undefined before its first job). */
export function leafHashPoolStats (): WorkerPoolStats | undefined {
  return pool?.stats()
}

/** Stops the hash workers (tests; a process ends without it: idle workers do not hold it). */
export async function closeLeafHashPool (): Promise<void> {
  const p = pool
  pool = undefined
  poolSize = undefined
  await p?.close()
}
