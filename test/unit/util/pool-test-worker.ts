/** Worker entry for the worker-pool tests: jobs that answer, wait, fail, crash or ask. */
import { existsSync, writeFileSync } from 'node:fs'
import { setTimeout as sleep } from 'node:timers/promises'
import { serveWorkerJobs } from '../../../src/util/worker-pool.js'
import { RbtError, ErrorCode } from '../../../src/util/errors.js'

export type TestJob =
  | { op: 'echo', v: unknown }
  | { op: 'sleep', ms: number, v: unknown }
  | { op: 'throw' }
  | { op: 'crash' }
  | { op: 'exit' }
  | { op: 'crash-once', flag: string }
  | { op: 'ask', q: unknown }

serveWorkerJobs<TestJob, unknown>(async (job, ask) => {
  switch (job.op) {
    case 'echo': return job.v
    case 'sleep': await sleep(job.ms); return job.v
    case 'throw': throw new RbtError(ErrorCode.CONFLICT, 'refused by the job', { details: { why: 'test' } })
    case 'crash':
      // an exception nobody catches, outside the job's promise
      setImmediate(() => { throw new Error('boom') })
      return await new Promise(() => {})
    case 'exit': process.exit(3)
    // eslint-disable-next-line no-fallthrough
    case 'crash-once':
      if (!existsSync(job.flag)) { writeFileSync(job.flag, 'x'); process.exit(4) }
      return 'second try'
    case 'ask': return await ask(job.q)
  }
})
