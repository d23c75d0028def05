/** Worker entry of the leaf-hash pool (leaf-hash-pool.ts): a slab written at its offset and its chunks' leaf digests; the slab goes back moved, not copied. */
import { serveWorkerJobs } from '../../util/worker-pool.js'
import { writeAndHashSlab, type SlabDone, type SlabJob } from './leaf-hash-pool.js'

serveWorkerJobs<SlabJob, SlabDone>(async (job) => writeAndHashSlab(job), (done) => [done.slab])
