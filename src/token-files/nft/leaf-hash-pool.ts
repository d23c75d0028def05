/**
 * The leaf digests of an upload's chunks computed on a worker thread, so the event loop that
 * reads the upload (sockets, multipart, disk writes) does not also hash it. A job is a run of
 * whole chunks in shared memory (a view of a SharedArrayBuffer: the worker reads the same bytes,
 * nothing is copied) and gives each chunk's `leafDigest` in order.
 *
 * One worker by default, started on the first job (an upload of at least one slab); idle, it does
 * not keep the process alive. `RBTNODE_HASH_WORKERS` sets the number (0: hash on the calling
 * thread). Bytes not in shared memory, every job when the worker cannot start and a job its
 * worker failed on are hashed on the calling thread.
 */
import { WorkerPool, type WorkerPoolStats } from '../../util/worker-pool.js'
import { leafDigest } from '../../tokenchain/unixfs-leaf.js'

export interface LeafHashJob {
  bytes: Uint8Array
  /** the chunks' lengths, in order, summing to bytes.length */
  lengths: number[]
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

function workerCount (): number {
  const v = process.env[ENV]
  if (v === undefined || v.trim() === '') return 1
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new Error(`${ENV} must be a whole number ≥ 0, not ${JSON.stringify(v)}`)
  return n
}

let pool: WorkerPool<LeafHashJob, Uint8Array[]> | undefined
let poolSize: number | undefined

/** The digests of the chunks of `bytes`, on the hash worker when `bytes` is in shared memory. */
export async function leafDigests (bytes: Uint8Array, lengths: number[]): Promise<Uint8Array[]> {
  poolSize ??= workerCount()
  if (poolSize === 0 || !(bytes.buffer instanceof SharedArrayBuffer)) return leafDigestsHere(bytes, lengths)
  pool ??= new WorkerPool<LeafHashJob, Uint8Array[]>({ url: WORKER_URL, size: poolSize, maxQueue: 256, name: 'leaf hash' })
  const inline = async (): Promise<Uint8Array[]> => leafDigestsHere(bytes, lengths)
  // a worker that failed twice on the job, or a pool stopped meanwhile: the bytes are still here
  try { return await pool.run({ data: { bytes, lengths }, inline }) } catch { return await inline() }
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
