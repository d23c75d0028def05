/**
 * The contract engine: validates a module against ABI v1, caps its memory, meters it with fuel and
 * runs one call in a fresh worker thread with a wall-clock limit as a backstop (the worker is terminated when it is exceeded) and
 * heap limits. Compiled, capped modules are cached by binary hash. Pure domain code: no network,
 * no storage.
 */
import { Worker } from 'node:worker_threads'
import { createHash } from 'node:crypto'
import { DEFAULT_LIMITS, outcomeMessage, type ContractLimits, type ContractOutcome } from './abi.js'
import { prepareModule } from './wasm-module.js'
import { ErrorCode, RbtError } from '../util/errors.js'

const WORKER_URL = new URL('./contract-worker.js', import.meta.url)
/** time the worker may take to start and compile before the call's clock starts */
const START_LIMIT_MS = 30_000

export const stateHash = (state: string): string => createHash('sha3-256').update(state, 'utf8').digest('hex')

export class ContractEngine {
  private readonly limits: ContractLimits
  private readonly prepared = new Map<string, Uint8Array>()

  constructor (limits: Partial<ContractLimits> = {}) {
    this.limits = { ...DEFAULT_LIMITS, ...limits }
  }

  /** Throws INVALID_INPUT unless `binary` is a contract this engine can run. */
  check (binary: Uint8Array): void { this.capped(binary) }

  private capped (binary: Uint8Array): Uint8Array {
    const key = createHash('sha256').update(binary).digest('hex')
    let b = this.prepared.get(key)
    if (b === undefined) {
      b = prepareModule(binary, this.limits.maxPages, this.limits.fuel).binary
      if (this.prepared.size >= 64) this.prepared.delete(this.prepared.keys().next().value!)
      this.prepared.set(key, b)
    }
    return b
  }

  /** Runs `execute(state, input)`; never throws for anything the contract does. */
  async run (binary: Uint8Array, state: string, input: string): Promise<ContractOutcome> {
    let capped: Uint8Array
    try { capped = this.capped(binary) } catch (e) { return { kind: 'invalid', reason: e instanceof Error ? e.message : String(e) } }
    const enc = new TextEncoder()
    const stateBytes = enc.encode(state)
    const inputBytes = enc.encode(input)
    if (inputBytes.length > this.limits.maxInputBytes) return { kind: 'invalid', reason: `the input is ${inputBytes.length} bytes, the limit is ${this.limits.maxInputBytes}` }
    if (stateBytes.length > this.limits.maxStateBytes) return { kind: 'invalid', reason: `the state is ${stateBytes.length} bytes, the limit is ${this.limits.maxStateBytes}` }
    const limits = this.limits
    return await new Promise<ContractOutcome>((resolve) => {
      const worker = new Worker(WORKER_URL, {
        workerData: { binary: capped },
        resourceLimits: { maxOldGenerationSizeMb: 32, maxYoungGenerationSizeMb: 8, codeRangeSizeMb: 16, stackSizeMb: 1 }
      })
      let settled = false
      let timer: NodeJS.Timeout | undefined
      const done = (o: ContractOutcome): void => {
        if (settled) return
        settled = true
        clearTimeout(timer)
        void worker.terminate()
        resolve(o)
      }
      timer = setTimeout(() => { done({ kind: 'timeout', reason: 'the worker did not start' }) }, START_LIMIT_MS)
      worker.on('message', (m: { ready?: boolean, outcome?: ContractOutcome }) => {
        if (m.outcome !== undefined) { done(m.outcome); return }
        if (m.ready === true) {
          clearTimeout(timer)
          timer = setTimeout(() => { done({ kind: 'timeout', reason: `the call ran longer than ${limits.timeMs} ms` }) }, limits.timeMs)
          worker.postMessage({ state: stateBytes, input: inputBytes, maxStateBytes: limits.maxStateBytes, maxOutputBytes: limits.maxOutputBytes })
        }
      })
      worker.on('error', (e) => { done({ kind: 'trap', reason: e.message }) })
      worker.on('exit', (code) => { done({ kind: 'trap', reason: `the contract worker exited (${code})` }) })
    })
  }

  /** Like `run`, but anything other than an accepted call is an error (INVALID_INPUT with the reason). */
  async runOrThrow (binary: Uint8Array, state: string, input: string): Promise<{ state: string, output: string }> {
    const o = await this.run(binary, state, input)
    if (o.kind !== 'ok') throw new RbtError(ErrorCode.INVALID_INPUT, outcomeMessage(o))
    return { state: o.state, output: o.output }
  }
}

