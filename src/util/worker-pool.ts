/**
 * A fixed pool of worker threads running one kind of job (the worker entry module decides what a
 * job is), with a bounded queue.
 *
 * - Workers start on the first job, not before: a process that never needs one never pays for it.
 * - At most `maxQueue` jobs wait; `run` beyond that waits for room (backpressure), first come first
 *   served.
 * - A job may carry an `inline` form. With `callerHelps`, the calling thread takes waiting jobs
 *   itself, one at a time with a turn of the event loop between them, while every worker is busy;
 *   a pool whose workers cannot start runs such jobs inline.
 * - A worker that fails (uncaught error, crash, exit) is replaced; the job it held is run again
 *   (`retries` times) and then fails with INTERNAL. Nothing a worker does ends this process.
 * - A worker may ask the calling thread something while it works on a job (`ask` in the worker,
 *   the job's `ask` here), e.g. a key only the calling thread can look up.
 * - `close` rejects waiting and running jobs with NOT_RUNNING and stops the workers.
 *
 * Wire protocol (structured clone): to a worker {t:'job', id, data} and {t:'answer', rid, ok,
 * value | error}; from a worker {t:'ready'}, {t:'done', id, ok, value | error} and
 * {t:'ask', id, rid, req}. `serveWorkerJobs` is the worker side.
 */
import { Worker, parentPort, type TransferListItem } from 'node:worker_threads'
import { setImmediate as nextTurn } from 'node:timers/promises'
import { ErrorCode, RbtError, errorMessage } from './errors.js'

export interface PoolJob<J, R> {
  data: J
  /** buffers to move instead of copy (they become unusable here) */
  transfer?: readonly TransferListItem[]
  /** the same job on the calling thread: used by `callerHelps` and when no worker can run */
  inline?: () => Promise<R>
  /** answers the worker's questions about this job */
  ask?: (req: unknown) => Promise<unknown>
}

export interface WorkerPoolOptions {
  /** the worker entry module (it calls `serveWorkerJobs`) */
  url: URL
  /** worker threads; default `defaultWorkerCount()` */
  size?: number
  /** jobs that may wait for a worker; default 64 */
  maxQueue?: number
  /** runs of a job whose worker failed, before the job fails; default 1 */
  retries?: number
  /** the calling thread runs waiting jobs that have an inline form while every worker is busy */
  callerHelps?: boolean
  /**
   * jobs handed to one worker at a time (default 1). With 2, a worker has its next job as soon as
   * it finishes one, even while the calling thread is busy (helping) and cannot hand it another.
   */
  perWorker?: number
  /** passed to each worker as workerData */
  workerData?: unknown
  /** heap limit per worker (MB); default 512 */
  maxHeapMb?: number
  /** told when a worker fails (for the log); must not throw */
  onWorkerError?: (e: Error) => void
  name?: string
}

/** Cores − 1, at least 1. */
export function defaultWorkerCount (): number {
  return Math.max(1, availableCores() - 1)
}

function availableCores (): number {
  // availableParallelism is Node ≥ 18.14
  return (globalThis as { process?: { availableParallelism?: () => number } }).process?.availableParallelism?.() ?? 1
}

interface Task<J, R> extends PoolJob<J, R> {
  id: number
  attempts: number
  resolve: (r: R) => void
  reject: (e: unknown) => void
}

interface Slot<J, R> {
  worker: Worker
  /** the jobs this worker holds, in the order it was given them */
  tasks: Array<Task<J, R>>
  ready: boolean
  gone: boolean
}

interface WireError { code?: string, message: string, details?: unknown }

export interface WorkerPoolStats {
  workers: number
  busy: number
  queued: number
  waiting: number
  completed: number
  inline: number
  failed: number
  workerRestarts: number
}

export class WorkerPool<J, R> {
  readonly size: number
  readonly maxQueue: number
  private readonly perWorker: number
  private readonly retries: number
  private readonly slots: Array<Slot<J, R>> = []
  private readonly queue: Array<Task<J, R>> = []
  private readonly roomWaiters: Array<{ resolve: () => void, reject: (e: unknown) => void }> = []
  private nextId = 1
  private closed = false
  private helping = false
  /** workers that ended before they were ready, in a row: at 3 the pool stops starting them */
  private startFailures = 0
  private broken?: string
  private readonly counts = { completed: 0, inline: 0, failed: 0, workerRestarts: 0 }

  constructor (private readonly o: WorkerPoolOptions) {
    this.size = Math.max(1, Math.floor(o.size ?? defaultWorkerCount()))
    this.maxQueue = Math.max(1, Math.floor(o.maxQueue ?? 64))
    this.retries = Math.max(0, Math.floor(o.retries ?? 1))
    this.perWorker = Math.max(1, Math.floor(o.perWorker ?? 1))
  }

  /** Whether jobs can still go to workers (false after close, or when workers cannot start). */
  get available (): boolean { return !this.closed && this.broken === undefined }

  /** Workers started and ready for jobs. */
  get readyWorkers (): number {
    return this.slots.filter((s) => s.ready && !s.gone).length
  }

  /** Workers idle right now (started or not yet started). */
  get idleWorkers (): number {
    return this.size - this.slots.filter((s) => s.tasks.length > 0).length
  }

  stats (): WorkerPoolStats {
    return {
      workers: this.slots.length,
      busy: this.slots.filter((s) => s.tasks.length > 0).length,
      queued: this.queue.length,
      waiting: this.roomWaiters.length,
      ...this.counts
    }
  }

  /** Starts every worker now and resolves when they are ready (otherwise they start on the first job). */
  async start (): Promise<void> {
    if (this.closed || this.broken !== undefined) return
    while (this.slots.length < this.size) this.spawn()
    await Promise.all(this.slots.map(async (s) => {
      if (s.ready || s.gone) return
      await new Promise<void>((resolve) => {
        const done = (): void => { s.worker.off('message', onMsg); s.worker.off('exit', done); resolve() }
        const onMsg = (m: { t?: string }): void => { if (m?.t === 'ready') done() }
        s.worker.on('message', onMsg)
        s.worker.on('exit', done)
      })
    }))
  }

  /** Runs a job on a worker (or, see `callerHelps`, here). Waits for room when the queue is full. */
  async run (job: PoolJob<J, R>): Promise<R> {
    if (this.closed) throw this.stopped()
    if (this.broken !== undefined) {
      if (job.inline !== undefined) return await this.runInline(job)
      throw new RbtError(ErrorCode.INTERNAL, `${this.name} workers cannot start: ${this.broken}`)
    }
    while (this.queue.length >= this.maxQueue) {
      await new Promise<void>((resolve, reject) => { this.roomWaiters.push({ resolve, reject }) })
      if (this.closed) throw this.stopped()
    }
    return await new Promise<R>((resolve, reject) => {
      this.queue.push({ ...job, id: this.nextId++, attempts: 0, resolve, reject })
      this.pump()
    })
  }

  /** Stops the workers; waiting and running jobs fail with NOT_RUNNING. */
  async close (): Promise<void> {
    if (this.closed) return
    this.closed = true
    const err = this.stopped()
    for (const w of this.roomWaiters.splice(0)) w.reject(err)
    for (const t of this.queue.splice(0)) t.reject(err)
    const ending: Array<Promise<unknown>> = []
    for (const s of this.slots.splice(0)) {
      s.gone = true
      for (const t of s.tasks.splice(0)) t.reject(err)
      ending.push(s.worker.terminate().catch(() => undefined))
    }
    await Promise.all(ending)
  }

  private get name (): string { return this.o.name ?? 'pool' }

  private stopped (): RbtError { return new RbtError(ErrorCode.NOT_RUNNING, `${this.name} stopped`) }

  private async runInline (job: PoolJob<J, R>): Promise<R> {
    this.counts.inline++
    return await job.inline!()
  }

  private pump (): void {
    if (this.closed) return
    while (this.queue.length > 0) {
      // an idle worker first, a new one next, then one that can hold another job
      let slot = this.slots.find((s) => s.tasks.length === 0 && !s.gone)
      if (slot === undefined && this.slots.length < this.size && this.broken === undefined) slot = this.spawn()
      slot ??= this.slots.find((s) => s.tasks.length < this.perWorker && !s.gone)
      if (slot === undefined) break
      this.send(slot, this.queue.shift()!)
    }
    this.wakeRoomWaiters()
    if (this.o.callerHelps === true && this.queue.some((t) => t.inline !== undefined) && !this.helping) {
      this.helping = true
      void this.help()
    }
  }

  private wakeRoomWaiters (): void {
    let room = this.maxQueue - this.queue.length
    while (room-- > 0 && this.roomWaiters.length > 0) this.roomWaiters.shift()!.resolve()
  }

  /** The calling thread takes waiting jobs while every worker is busy. */
  private async help (): Promise<void> {
    try {
      for (;;) {
        await nextTurn()
        if (this.closed) return
        const i = this.queue.findIndex((t) => t.inline !== undefined)
        if (i < 0) return
        const [t] = this.queue.splice(i, 1)
        this.wakeRoomWaiters()
        this.counts.inline++
        try { t!.resolve(await t!.inline!()) } catch (e) { t!.reject(e) }
      }
    } finally {
      this.helping = false
    }
  }

  private send (slot: Slot<J, R>, task: Task<J, R>): void {
    slot.tasks.push(task)
    task.attempts++
    slot.worker.ref()
    try {
      slot.worker.postMessage({ t: 'job', id: task.id, data: task.data }, task.attempts === 1 ? task.transfer as TransferListItem[] | undefined : undefined)
    } catch (e) {
      // the data cannot be cloned: the job's fault, not the worker's
      slot.tasks.splice(slot.tasks.indexOf(task), 1)
      if (slot.tasks.length === 0) slot.worker.unref()
      this.counts.failed++
      task.reject(new RbtError(ErrorCode.INTERNAL, `${this.name}: the job could not be sent to a worker: ${errorMessage(e)}`))
    }
  }

  private spawn (): Slot<J, R> {
    const worker = new Worker(this.o.url, {
      workerData: this.o.workerData,
      resourceLimits: { maxOldGenerationSizeMb: this.o.maxHeapMb ?? 512 },
      stdout: false,
      stderr: false
    })
    worker.unref()
    const slot: Slot<J, R> = { worker, tasks: [], ready: false, gone: false }
    this.slots.push(slot)
    worker.on('message', (m: unknown) => { this.onMessage(slot, m) })
    worker.on('error', (e: Error) => { this.onFailure(slot, e) })
    worker.on('exit', (code) => { this.onFailure(slot, new Error(`worker exited with code ${code}`)) })
    worker.on('messageerror', (e: Error) => { this.onFailure(slot, e) })
    return slot
  }

  private onMessage (slot: Slot<J, R>, m: unknown): void {
    if (slot.gone || typeof m !== 'object' || m === null) return
    const msg = m as { t?: string, id?: number, ok?: boolean, value?: unknown, error?: WireError, rid?: number, req?: unknown }
    if (msg.t === 'ready') {
      slot.ready = true
      this.startFailures = 0
      return
    }
    const task = slot.tasks.find((t) => t.id === msg.id)
    if (task === undefined) return
    if (msg.t === 'ask') {
      const rid = msg.rid
      const answer = task.ask === undefined ? Promise.reject(new Error('this job takes no questions')) : task.ask(msg.req)
      answer.then(
        (value) => { if (!slot.gone) slot.worker.postMessage({ t: 'answer', rid, ok: true, value }) },
        (e: unknown) => { if (!slot.gone) slot.worker.postMessage({ t: 'answer', rid, ok: false, error: toWireError(e) }) }
      )
      return
    }
    if (msg.t !== 'done') return
    slot.tasks.splice(slot.tasks.indexOf(task), 1)
    if (slot.tasks.length === 0) slot.worker.unref()
    if (msg.ok === true) {
      this.counts.completed++
      task.resolve(msg.value as R)
    } else {
      this.counts.failed++
      task.reject(fromWireError(msg.error))
    }
    this.pump()
  }

  private onFailure (slot: Slot<J, R>, e: Error): void {
    if (slot.gone) return
    slot.gone = true
    const i = this.slots.indexOf(slot)
    if (i >= 0) this.slots.splice(i, 1)
    void slot.worker.terminate().catch(() => undefined)
    if (this.closed) return
    this.counts.workerRestarts++
    try { this.o.onWorkerError?.(e) } catch { /* the log only */ }
    if (!slot.ready && ++this.startFailures >= 3) this.broken = errorMessage(e)
    // the jobs it held go first again, in their order
    const held = slot.tasks.splice(0)
    const again: Array<Task<J, R>> = []
    for (const task of held) {
      // a worker that never got ready failed to start: not the job's fault
      if (!slot.ready) task.attempts--
      if (task.attempts <= this.retries && this.broken === undefined) {
        again.push(task)
      } else if (this.broken !== undefined && task.inline !== undefined) {
        this.runInline(task).then(task.resolve, task.reject)
      } else {
        this.counts.failed++
        task.reject(new RbtError(ErrorCode.INTERNAL, `${this.name}: a worker failed on this job ${task.attempts} time(s): ${errorMessage(e)}`))
      }
    }
    this.queue.unshift(...again)
    if (this.broken !== undefined) {
      // nothing more will start: what waits runs here or fails
      for (const t of this.queue.splice(0)) {
        if (t.inline !== undefined) this.runInline(t).then(t.resolve, t.reject)
        else t.reject(new RbtError(ErrorCode.INTERNAL, `${this.name} workers cannot start: ${this.broken}`))
      }
      this.wakeRoomWaiters()
      return
    }
    this.pump()
  }
}

function toWireError (e: unknown): WireError {
  if (e instanceof RbtError) return { code: e.code, message: e.message, details: e.details }
  return { message: errorMessage(e) }
}

function fromWireError (w: WireError | undefined): RbtError {
  if (w === undefined) return new RbtError(ErrorCode.INTERNAL, 'a worker failed without saying why')
  const code = w.code !== undefined && Object.prototype.hasOwnProperty.call(ErrorCode, w.code) ? w.code as ErrorCode : ErrorCode.INTERNAL
  return new RbtError(code, w.message, w.details !== undefined ? { details: w.details } : undefined)
}

/**
 * The worker side: runs `handle` for each job, one at a time, and answers with its result or its
 * error (an RbtError keeps its code, message and details). `ask` sends a question about the
 * current job to the calling thread and resolves with the answer. `transfer` names the buffers of a
 * result to move back instead of copying them.
 */
export function serveWorkerJobs<J, R> (handle: (data: J, ask: (req: unknown) => Promise<unknown>) => Promise<R>, transfer?: (value: R) => TransferListItem[]): void {
  const port = parentPort
  if (port === null) throw new Error('serveWorkerJobs runs in a worker thread')
  let nextRid = 1
  const pending = new Map<number, { resolve: (v: unknown) => void, reject: (e: unknown) => void }>()
  port.on('message', (m: { t: string, id?: number, data?: J, rid?: number, ok?: boolean, value?: unknown, error?: WireError }) => {
    if (m.t === 'answer') {
      const p = pending.get(m.rid!)
      if (p === undefined) return
      pending.delete(m.rid!)
      if (m.ok === true) p.resolve(m.value)
      else p.reject(fromWireError(m.error))
      return
    }
    if (m.t !== 'job') return
    const id = m.id!
    const ask = async (req: unknown): Promise<unknown> => await new Promise((resolve, reject) => {
      const rid = nextRid++
      pending.set(rid, { resolve, reject })
      port.postMessage({ t: 'ask', id, rid, req })
    })
    let run: Promise<R>
    try { run = handle(m.data as J, ask) } catch (e) { run = Promise.reject(e) }
    run.then(
      (value) => { port.postMessage({ t: 'done', id, ok: true, value }, transfer?.(value)) },
      (e: unknown) => { port.postMessage({ t: 'done', id, ok: false, error: toWireError(e) }) }
    )
  })
  port.postMessage({ t: 'ready' })
}
