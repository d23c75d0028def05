/**
 * ABI v1 of contracts run by the node (docs/contracts.md). A contract is a WebAssembly module that
 * imports nothing and exports:
 *   memory                                   its linear memory
 *   alloc(len: i32) -> i32                   a pointer to `len` writable bytes
 *   execute(statePtr, stateLen, inputPtr, inputLen: i32) -> i32
 *                                            a pointer to a 20-byte result record, five
 *                                            little-endian u32: status, new state pointer and
 *                                            length, output pointer and length
 * Status 0 accepts the call: the new state and the output are taken. Any other status rejects it:
 * the output is the reason and nothing changes. State, input and output are UTF-8 text. A deploy
 * is an execute on the empty state with the deploy's data as input.
 */

export const ABI_VERSION = 1

/** What the host enforces on every call. */
export interface ContractLimits {
  /** wall-clock limit of one call (instantiation included), in milliseconds */
  timeMs: number
  /** fuel per call: one unit per function entry and per loop iteration (deterministic; see fuel.ts) */
  fuel: number
  /** linear memory cap in 64 KiB pages (the module's declared maximum is lowered to it) */
  maxPages: number
  maxStateBytes: number
  maxInputBytes: number
  maxOutputBytes: number
}

export const DEFAULT_LIMITS: ContractLimits = {
  timeMs: 5000,
  fuel: 10_000_000,
  maxPages: 256,
  maxStateBytes: 64 * 1024,
  maxInputBytes: 16 * 1024,
  maxOutputBytes: 16 * 1024
}

/** Largest binary accepted by generate. */
export const MAX_BINARY_BYTES = 128 * 1024

export const RESULT_RECORD_BYTES = 20

/** The outcome of one call. Only `ok` changes anything. */
export type ContractOutcome =
  | { kind: 'ok', state: string, output: string }
  | { kind: 'rejected', status: number, reason: string }
  | { kind: 'trap', reason: string }
  | { kind: 'timeout', reason: string }
  | { kind: 'fuel', reason: string }
  | { kind: 'invalid', reason: string }

export function outcomeMessage (o: ContractOutcome): string {
  switch (o.kind) {
    case 'ok': return 'ok'
    case 'rejected': return `the contract rejected the call (status ${o.status}): ${o.reason}`
    case 'trap': return `the contract trapped: ${o.reason}`
    case 'timeout': return `the contract ran out of time: ${o.reason}`
    case 'fuel': return `the contract ran out of fuel: ${o.reason}`
    case 'invalid': return `the contract broke the ABI: ${o.reason}`
  }
}
