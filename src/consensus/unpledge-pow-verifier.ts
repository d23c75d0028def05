/**
 * Proof verification off the event loop. Re-walking a proof's segments is pure CPU work (one
 * segment may be a million hashes, over a second), so each check runs in a fresh worker thread
 * (unpledge-pow-worker.ts) with a time limit. At most `concurrency` checks run at once and at most
 * `maxQueued` wait; beyond that a check is refused as busy (TOO_MANY_REQUESTS, 429) rather than
 * queued without bound. A check that runs out of time is a rejected proof.
 */
import { availableParallelism } from 'node:os'
import { Worker } from 'node:worker_threads'
import { ErrorCode, RbtError } from '../util/errors.js'
import type { UnpledgeProof, VerifyOptions, VerifyResult } from './unpledge-pow.js'

const WORKER_URL = new URL('./unpledge-pow-worker.js', import.meta.url)

export interface PowVerifierOptions {
  /** checks running at once (default: one less than the CPUs, at least 1, at most 2) */
  concurrency?: number
  /** checks waiting for a slot before new ones are refused (default 8) */
  maxQueued?: number
  /** wall-clock limit of one check, worker start included (default 15 s) */
  timeLimitMs?: number
}

interface Waiter { resolve: () => void, reject: (e: Error) => void }

export class PowVerifier {
  private readonly concurrency: number
  private readonly maxQueued: number
  private readonly timeLimitMs: number
  private running = 0
  private readonly queue: Waiter[] = []
  private readonly workers = new Set<Worker>()
  private closed = false

  constructor (o: PowVerifierOptions = {}) {
    this.concurrency = Math.max(1, o.concurrency ?? Math.min(2, availableParallelism() - 1))
    this.maxQueued = Math.max(0, o.maxQueued ?? 8)
    this.timeLimitMs = o.timeLimitMs ?? 15_000
  }

  /** verifyProof in a worker thread; the random segment sample is drawn there. */
  async verify (proof: UnpledgeProof, expect: { token: string, pledger: string, txid: string }, opts: Pick<VerifyOptions, 'minLevel' | 'full'> = {}): Promise<VerifyResult> {
    await this.acquire()
    try {
      return await this.runOne({ proof, expect, opts: { ...(opts.minLevel !== undefined ? { minLevel: opts.minLevel } : {}), ...(opts.full !== undefined ? { full: opts.full } : {}) } })
    } finally { this.release() }
  }

  /** Stops running checks and refuses waiting and new ones. */
  async close (): Promise<void> {
    this.closed = true
    for (const w of this.queue.splice(0)) w.reject(new RbtError(ErrorCode.NOT_RUNNING, 'proof verification stopped'))
    await Promise.all([...this.workers].map(async (w) => await w.terminate()))
  }

  private async acquire (): Promise<void> {
    if (this.closed) throw new RbtError(ErrorCode.NOT_RUNNING, 'proof verification stopped')
    if (this.running < this.concurrency) { this.running++; return }
    if (this.queue.length >= this.maxQueued) {
      throw new RbtError(ErrorCode.TOO_MANY_REQUESTS, `busy: ${this.running} proof verification(s) running and ${this.queue.length} waiting; try again shortly`)
    }
    // the slot is handed over by release(), so `running` never exceeds the limit
    await new Promise<void>((resolve, reject) => { this.queue.push({ resolve, reject }) })
  }

  private release (): void {
    const next = this.queue.shift()
    if (next !== undefined) next.resolve()
    else this.running--
  }

  private async runOne (job: unknown): Promise<VerifyResult> {
    if (this.closed) throw new RbtError(ErrorCode.NOT_RUNNING, 'proof verification stopped')
    return await new Promise<VerifyResult>((resolve) => {
      const worker = new Worker(WORKER_URL, {
        workerData: job,
        resourceLimits: { maxOldGenerationSizeMb: 64, maxYoungGenerationSizeMb: 16, stackSizeMb: 1 }
      })
      this.workers.add(worker)
      let settled = false
      const done = (r: VerifyResult): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        this.workers.delete(worker)
        void worker.terminate()
        resolve(r)
      }
      const timer = setTimeout(() => { done({ valid: false, reason: `verification took longer than ${this.timeLimitMs} ms` }) }, this.timeLimitMs)
      worker.once('message', (r: VerifyResult) => { done(r) })
      worker.once('error', (e) => { done({ valid: false, reason: `verification failed: ${e.message}` }) })
      worker.once('exit', () => { done({ valid: false, reason: this.closed ? 'verification stopped' : 'the verification worker exited' }) })
    })
  }
}
