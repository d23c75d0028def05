/**
 * Token-chain validation on worker threads: the node's `ChainValidator` (tokenchain/validate.ts),
 * shared by everything that validates whole chains (a receiver taking a delivered chain, a quorum
 * checking a sender's chains, recovery and chain pulls, a fullnode archiving). Domain code does
 * not see it: a DID signature verifier made with a pool (`didSignatureVerifier(resolver, { pool })`)
 * carries it, and `validateChain` hands chains to it.
 *
 * - A chain with fewer than `inlineBelow` blocks still to verify (blocks in the caller's
 *   verified-block cache need no signature checks) is validated on the calling thread: sending it
 *   costs more than it saves.
 * - A longer chain is cut into slices of about `sliceBlocks` blocks, validated in parallel on the
 *   workers (and, with `callerHelps`, on the calling thread while every worker is busy), each slice
 *   starting from the state its previous block states (`chainTipOf`). The result and the first
 *   failure are those of a whole-chain walk (`validateChainHere`, `joinSliceResults`).
 * - Workers verify signatures against the same DID documents as the calling thread: they ask it
 *   for each DID's document once and keep it.
 * - Blocks whose signatures a worker verified are added to the caller's cache.
 *
 * `RBTNODE_VALIDATION_WORKERS` sets the number of workers (0: no workers, everything inline);
 * default cores − 1, at least 1. `RBTNODE_VALIDATION_INLINE_BELOW` sets `inlineBelow` (tests set 1
 * to send every chain to the workers). docs/decisions/0008-native-secp256k1.md has the figures.
 */
import { WorkerPool, defaultWorkerCount, type WorkerPoolStats } from '../util/worker-pool.js'
import { BoundedSet } from '../util/lru.js'
import { chainTipOf, didsIn, joinSliceResults, validateChainHere, type ChainBlockInput, type ChainTip, type ChainValidationContext, type ChainValidationResult, type ChainValidator } from '../tokenchain/validate.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { secpBackend } from '../wallet/secp-backend.js'
import type { DidResolver } from './verifier.js'
import type { DidDocument } from '../wallet/did-document.js'

/** What a worker needs of a validation context (no verifier, no cache: they live here). */
export type PortableContext = Omit<ChainValidationContext, 'verifier' | 'cache'>

/** One slice of a chain, for a worker. */
export interface SliceJob {
  /** which resolver's documents (a worker keeps documents per resolver) */
  resolver: number
  blocks: Uint8Array[]
  ctx: PortableContext
  after?: ChainTip
  /** envelope keys the caller's cache holds; absent when the caller has no cache */
  known?: string[]
  /** documents of the slice's signers not sent before (the worker asks for any it lacks) */
  docs?: DidDocument[]
}

export interface SliceResult {
  result: ChainValidationResult
  /** envelope keys the worker verified (for the caller's cache) */
  added: string[]
}

export interface ChainValidationPoolOptions {
  /** worker threads; 0 for none (everything inline). Default RBTNODE_VALIDATION_WORKERS, else cores − 1 (at least 1) */
  workers?: number
  /** slices that may wait for a worker (beyond that, callers wait); default 256 */
  maxQueue?: number
  /** chains with fewer blocks to verify stay on the calling thread; default 8 */
  inlineBelow?: number
  /** blocks per slice of a long chain; default 32 */
  sliceBlocks?: number
  /** the calling thread validates waiting slices while every worker is busy; default true */
  callerHelps?: boolean
  /** told when a worker fails (it is replaced); must not throw */
  onWorkerError?: (e: Error) => void
}

const WORKER_URL = new URL('./chain-validation-worker.js', import.meta.url)
const ENV = 'RBTNODE_VALIDATION_WORKERS'
const ENV_INLINE = 'RBTNODE_VALIDATION_INLINE_BELOW'
/** documents remembered as sent (the workers keep up to 4096 each) */
const MAX_SENT = 2048

function envCount (name: string): number | undefined {
  const v = process.env[name]
  if (v === undefined || v.trim() === '') return undefined
  const n = Number(v)
  if (!Number.isInteger(n) || n < 0) throw new Error(`${name} must be a whole number ≥ 0, not ${JSON.stringify(v)}`)
  return n
}

export class ChainValidationPool {
  readonly workers: number
  readonly inlineBelow: number
  readonly sliceBlocks: number
  private readonly pool?: WorkerPool<SliceJob, SliceResult>
  private readonly resolverIds = new WeakMap<DidResolver, number>()
  /** `<resolver>:<did>` of documents sent to the workers (most recent last); forgotten when a worker is replaced */
  private readonly sent = new BoundedSet(MAX_SENT)
  private nextResolver = 1
  private readonly counts = { inline: 0, pooled: 0, slices: 0 }

  constructor (o: ChainValidationPoolOptions = {}) {
    this.workers = Math.max(0, Math.floor(o.workers ?? envCount(ENV) ?? defaultWorkerCount()))
    this.inlineBelow = Math.max(1, Math.floor(o.inlineBelow ?? envCount(ENV_INLINE) ?? 8))
    this.sliceBlocks = Math.max(1, Math.floor(o.sliceBlocks ?? 32))
    if (this.workers > 0) {
      this.pool = new WorkerPool<SliceJob, SliceResult>({
        url: WORKER_URL,
        size: this.workers,
        maxQueue: o.maxQueue ?? 256,
        callerHelps: o.callerHelps ?? true,
        // the calling thread, helping, turns to the event loop only between slices: a worker
        // holding its next slice does not wait for it meanwhile
        perWorker: 2,
        workerData: { secpBackend: secpBackend().name },
        onWorkerError: (e) => { this.sent.clear(); o.onWorkerError?.(e) },
        name: 'chain validation'
      })
    }
  }

  /** The validator for chains whose signers' documents come from `resolver`. */
  validatorFor (resolver: DidResolver): ChainValidator {
    let id = this.resolverIds.get(resolver)
    if (id === undefined) { id = this.nextResolver++; this.resolverIds.set(resolver, id) }
    const rid = id
    return { validateChain: async (blocks, ctx) => await this.validate(rid, resolver, blocks, ctx) }
  }

  stats (): { inline: number, pooled: number, slices: number, pool?: WorkerPoolStats } {
    return { ...this.counts, ...(this.pool !== undefined ? { pool: this.pool.stats() } : {}) }
  }

  /** Starts the workers now (they otherwise start with the first chain that needs them). */
  async start (): Promise<void> {
    await this.pool?.start()
  }

  /** Stops the workers (validations still running fail with NOT_RUNNING; later ones run inline). */
  async close (): Promise<void> {
    await this.pool?.close()
  }

  private async validate (rid: number, resolver: DidResolver, blocks: readonly ChainBlockInput[], ctx: ChainValidationContext): Promise<ChainValidationResult> {
    const pool = this.pool
    if (pool === undefined || !pool.available || blocks.length < this.inlineBelow || !blocks.every((b) => b instanceof Uint8Array)) return await this.inline(blocks, ctx)
    const envs = blocks as readonly Uint8Array[]
    let keys: string[] | undefined
    if (ctx.cache !== undefined) {
      keys = envs.map((e) => sha3Hex(e))
      let toVerify = 0
      for (const k of keys) if (!ctx.cache.has(k)) toVerify++
      if (toVerify < this.inlineBelow) return await this.inline(blocks, ctx)
    }
    this.counts.pooled++
    const n = envs.length
    const count = Math.max(1, Math.round(n / this.sliceBlocks))
    let starts = Array.from({ length: count }, (_, i) => Math.floor(i * n / count))
    let afters = starts.map((s) => s === 0 ? undefined : chainTipOf(envs[s - 1]!, ctx.tokenId, s - 1))
    if (afters.some((a, i) => i > 0 && a === undefined)) { starts = [0]; afters = [undefined] }
    const { verifier: _v, cache, ...portable } = ctx
    const runs = starts.map(async (start, i) => {
      const end = i + 1 < starts.length ? starts[i + 1]! : n
      const slice = envs.slice(start, end)
      const after = afters[i]
      this.counts.slices++
      const known = cache !== undefined ? keys!.slice(start, end).filter((k) => cache.has(k)) : undefined
      const docs = await this.docsToSend(rid, resolver, slice)
      const r = await pool.run({
        data: { resolver: rid, blocks: slice, ctx: i === 0 ? portable : { ...portable, tokenContent: undefined }, after, ...(known !== undefined ? { known } : {}), ...(docs.length > 0 ? { docs } : {}) },
        // taken by the calling thread: no worker received the documents sent with it
        inline: async () => { this.unsent(rid, docs); return { result: await validateChainHere(slice, ctx, after), added: [] } },
        ask: async (req) => await resolver.resolve((req as { did: string }).did)
      })
      if (cache !== undefined) for (const k of r.added) cache.add(k)
      return r.result
    })
    const settled = await Promise.allSettled(runs)
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected')
    if (failed !== undefined) throw failed.reason
    return joinSliceResults(settled.map((s) => (s as PromiseFulfilledResult<ChainValidationResult>).value))
  }

  /**
   * Documents of the slice's signers the workers were not sent yet (sending them with the job
   * spares the worker a question the calling thread may be too busy to answer at once).
   */
  private async docsToSend (rid: number, resolver: DidResolver, slice: readonly Uint8Array[]): Promise<DidDocument[]> {
    const want: string[] = []
    for (const did of didsIn(slice)) {
      const key = `${rid}:${did}`
      if (this.sent.has(key)) continue
      want.push(did)
      this.sent.add(key)
    }
    const docs = await Promise.all(want.map(async (did) => await resolver.resolve(did).catch(() => undefined)))
    return docs.filter((d): d is DidDocument => d !== undefined)
  }

  /** Documents that went with a job the calling thread took: a worker still has to be sent them. */
  private unsent (rid: number, docs: readonly DidDocument[]): void {
    for (const d of docs) this.sent.delete(`${rid}:${d.did}`)
  }

  private async inline (blocks: readonly ChainBlockInput[], ctx: ChainValidationContext): Promise<ChainValidationResult> {
    this.counts.inline++
    return await validateChainHere(blocks, ctx)
  }
}
