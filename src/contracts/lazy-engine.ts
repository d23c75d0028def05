/**
 * The contract engine as a node holds it from start: the engine itself (the sandbox, the WASM
 * checks and fuel metering, src/contracts/sandbox.ts) is loaded on the first contract checked or
 * run, not when the node starts.
 */
import type { ContractLimits, ContractOutcome } from './abi.js'
import type { ContractEngine } from './sandbox.js'

export class LazyContractEngine {
  private engine?: Promise<ContractEngine>

  constructor (private readonly limits: Partial<ContractLimits> = {}) {}

  private async load (): Promise<ContractEngine> {
    this.engine ??= import('./sandbox.js').then(({ ContractEngine }) => new ContractEngine(this.limits), (e: unknown) => {
      this.engine = undefined
      throw e
    })
    return await this.engine
  }

  /** Throws INVALID_INPUT unless `binary` is a contract the engine can run (ContractEngine.check). */
  async check (binary: Uint8Array): Promise<void> { (await this.load()).check(binary) }

  /** ContractEngine.run: never throws for anything the contract does. */
  async run (binary: Uint8Array, state: string, input: string): Promise<ContractOutcome> {
    return await (await this.load()).run(binary, state, input)
  }
}
