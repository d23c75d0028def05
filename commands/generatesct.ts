import { readFile } from 'node:fs/promises'
import { basename, resolve } from 'node:path'
import { BaseCommand, UsageError } from '../src/cli/base-command.js'

export default class GenerateSct extends BaseCommand {
  static override summary = 'Create a smart contract from a compiled .wasm module (ABI v1) and its .rs source; prints the contract id'
  static override examples = ['<%= config.bin %> generatesct -did bafybmi... -binCode counter.wasm -rawCode counter.rs']

  async run (): Promise<void> {
    const did = this.requireFlag('did', 'the DID generating the contract')
    const bin = this.requireFlag('binCode', 'the compiled contract (.wasm)')
    const raw = this.requireFlag('rawCode', 'the contract source (.rs)')
    if (!bin.toLowerCase().endsWith('.wasm')) throw new UsageError(`-binCode must be a .wasm file, got "${bin}"`)
    if (!raw.toLowerCase().endsWith('.rs')) throw new UsageError(`-rawCode must be a .rs file, got "${raw}"`)
    const read = async (f: string): Promise<Uint8Array> => {
      try { return new Uint8Array(await readFile(resolve(process.cwd(), f))) } catch (e) { throw new UsageError(`cannot read ${f}: ${(e as Error).message}`) }
    }
    const env = await this.client().call('scGenerate', {
      form: { fields: { did }, files: { binaryCodePath: { filename: basename(bin), data: await read(bin) }, rawCodePath: { filename: basename(raw), data: await read(raw) } } }
    })
    this.finish(env, (id) => id)
  }
}
