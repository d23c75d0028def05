import { readFile, writeFile } from 'node:fs/promises'
import { resolve } from 'node:path'
import { BaseCommand } from '../src/cli/base-command.js'
import { decodeTokenChain, goMarshalIndent } from '../src/cli/decode-token-chain.js'

const INPUT = 'dump.json'
const OUTPUT = 'output.json'

export default class DecodeTokenChain extends BaseCommand {
  static override summary = 'Rewrite dump.json (a token-chain dump with numeric block keys, as the reference\'s dumptokenchain writes it) into output.json with symbolic key names (TCTokenTypeKey, TTBlockNumberKey, ...), both in the current directory; local, asks no node; prints the path written'
  static override examples = ['<%= config.bin %> decodetokenchain']

  async run (): Promise<void> {
    const input = resolve(INPUT)
    let text: string
    try {
      text = await readFile(input, 'utf8')
    } catch (e) {
      throw new Error(`cannot read ${input}: ${(e as NodeJS.ErrnoException).code === 'ENOENT' ? 'no such file' : (e as Error).message}`)
    }
    let blocks: unknown
    try {
      blocks = JSON.parse(text)
    } catch (e) {
      throw new Error(`${input} is not JSON: ${(e as Error).message}`)
    }
    if (!Array.isArray(blocks)) throw new Error(`${input} must hold a JSON array of blocks`)
    const output = resolve(OUTPUT)
    await writeFile(output, goMarshalIndent(decodeTokenChain(blocks)), { mode: 0o644 })
    const message = `token chain decoded successfully: ${blocks.length} block(s) of ${INPUT} written to ${OUTPUT}`
    this.finish({ status: true, message, result: { input, output, blocks: blocks.length } }, (r) => r.output)
  }
}
