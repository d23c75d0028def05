/**
 * Runs one contract call in its own worker thread (sandbox.ts starts it). The module is compiled
 * first and "ready" is reported; the host then sends the call and starts its clock. A fresh
 * instance is made per call and nothing but the ABI exports is touched: the module gets no imports.
 */
import { parentPort, workerData } from 'node:worker_threads'
import { RESULT_RECORD_BYTES, type ContractOutcome } from './abi.js'
import { FUEL_EXPORT } from './fuel.js'

interface Call { state: Uint8Array, input: Uint8Array, maxStateBytes: number, maxOutputBytes: number }

const port = parentPort!
const binary = (workerData as { binary: Uint8Array }).binary

let instance: WebAssembly.Instance | undefined

function run (mod: WebAssembly.Module, call: Call): ContractOutcome {
  instance = new WebAssembly.Instance(mod, {})
  const { memory, alloc, execute } = instance.exports as { memory: WebAssembly.Memory, alloc: (n: number) => number, execute: (a: number, b: number, c: number, d: number) => number }
  const put = (bytes: Uint8Array): number => {
    const p = alloc(bytes.length) >>> 0
    if (p + bytes.length > memory.buffer.byteLength) throw new RangeError(`alloc returned ${p}, outside memory`)
    new Uint8Array(memory.buffer, p, bytes.length).set(bytes)
    return p
  }
  const sp = put(call.state)
  const ip = put(call.input)
  const r = execute(sp, call.state.length, ip, call.input.length) >>> 0
  const mem = memory.buffer
  if (r + RESULT_RECORD_BYTES > mem.byteLength) return { kind: 'invalid', reason: `result record at ${r} is outside memory` }
  const view = new DataView(mem, r, RESULT_RECORD_BYTES)
  const [status, statePtr, stateLen, outPtr, outLen] = [0, 4, 8, 12, 16].map((o) => view.getUint32(o, true))
  const text = (p: number, n: number, max: number, what: string): string => {
    if (n > max) throw new TypeError(`${what} is ${n} bytes, the limit is ${max}`)
    if (p + n > mem.byteLength) throw new TypeError(`${what} at ${p}+${n} is outside memory`)
    return new TextDecoder('utf-8', { fatal: true }).decode(new Uint8Array(mem, p, n))
  }
  try {
    const output = text(outPtr, outLen, call.maxOutputBytes, 'the output')
    if (status !== 0) return { kind: 'rejected', status, reason: output }
    return { kind: 'ok', state: text(statePtr, stateLen, call.maxStateBytes, 'the new state'), output }
  } catch (e) {
    return { kind: 'invalid', reason: e instanceof Error ? e.message : String(e) }
  }
}

let mod: WebAssembly.Module | undefined
try {
  mod = new WebAssembly.Module(new Uint8Array(binary))
  port.postMessage({ ready: true })
} catch (e) {
  port.postMessage({ outcome: { kind: 'invalid', reason: `does not compile: ${e instanceof Error ? e.message : String(e)}` } satisfies ContractOutcome })
}

port.once('message', (call: Call) => {
  let outcome: ContractOutcome
  try {
    outcome = run(mod!, call)
  } catch (e) {
    const reason = e instanceof Error ? e.message : String(e)
    // traps, stack exhaustion and memory faults all end the call the same way
    const fuel = instance?.exports[FUEL_EXPORT] as WebAssembly.Global | undefined
    outcome = e instanceof TypeError
      ? { kind: 'invalid', reason }
      : fuel !== undefined && (fuel.value as bigint) < 0n ? { kind: 'fuel', reason: 'the call used up its budget of loop iterations and calls' } : { kind: 'trap', reason }
  }
  port.postMessage({ outcome })
})
