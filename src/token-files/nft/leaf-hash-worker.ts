/** Worker entry of the leaf-hash pool (leaf-hash-pool.ts): the leaf digests of a run of chunks in shared memory. */
import { serveWorkerJobs } from '../../util/worker-pool.js'
import { leafDigestsHere, type LeafHashJob } from './leaf-hash-pool.js'

serveWorkerJobs<LeafHashJob, Uint8Array[]>(async (job) => leafDigestsHere(job.bytes, job.lengths))
