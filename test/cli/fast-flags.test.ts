import { expect } from 'chai'
import { Flags as OclifFlags, Parser } from '@oclif/core'
import { fastParsable, parseFlagsFast, type FlagDef } from '../../src/cli/fast-flags.js'
import { globalFlags } from '../../src/cli/flags.js'
import { normaliseArgv, type FlagInfo } from '../../src/cli/go-flags.js'
import { Flags as LiteFlags } from '../../src/cli/lite-oclif.js'

// the flag set of a client verb with flags of its own (gettxndetails, validatetokenchain's kinds)
const defs = {
  ...globalFlags,
  txnID: OclifFlags.string({ description: 'transaction id' }),
  latest: OclifFlags.boolean({ description: 'the latest block only' })
} as unknown as Record<string, FlagDef>

/** What the verb gets through oclif: the preparse hook's normalisation, then oclif's parser. */
async function oclifFlags (argv: string[]): Promise<Record<string, unknown>> {
  const info: Record<string, FlagInfo> = {}
  for (const [n, d] of Object.entries(defs)) info[n] = { type: d.type, allowNo: d.allowNo }
  const out = await Parser.parse(normaliseArgv(argv, info), { flags: defs as never, args: {}, strict: true, context: {} as never })
  return out.flags as Record<string, unknown>
}

describe('cli: fast flag parsing', () => {
  it('gives the flags oclif gives for plain argv in every Go spelling', async () => {
    const cases = [
      [],
      ['-port', '20001'],
      ['-port=20001', '-did', 'bafybmi', '--json'],
      ['--port', '20001', '-testNet', '-s=false', '-mdns=true', '-fp'],
      ['-ChildPath', '2', '-didType', '4', '-privPWD', 'x y', '-addr', '::1'],
      ['-testNet=false', '-latest', '-txnID', 'abc', '-json=1'],
      ['--no-testNet', '--json=true'],
      ['-transComment', 'a=b=c', '-rbtAmount', '1.5', '-receiverAddr', 'bafy2']
    ]
    for (const argv of cases) {
      expect(await parseFlagsFast(argv, defs), argv.join(' ')).to.deep.equal(await oclifFlags(argv))
    }
  })

  it('leaves to oclif whatever it would refuse or explain', async () => {
    const cases = [
      ['--help'], ['-h'], ['--version'], ['extra'], ['-port', '1', 'extra'], ['--', '-port', '1'],
      ['-prot', '1'], ['-port'], ['-port', '1', '-port', '2'], ['-json', '--no-json'], ['-testNet', '-testNet'],
      ['-did', '-port'], ['-did='], ['-json=maybe'], ['--no-port']
    ]
    for (const argv of cases) expect(await parseFlagsFast(argv, defs), argv.join(' ')).to.equal(undefined)
  })

  it('leaves a verb to oclif when a flag uses what only oclif applies', () => {
    expect(fastParsable(defs)).to.equal(true)
    for (const extra of [{ options: ['a'] }, { required: true }, { char: 'x' }, { env: 'X' }, { multiple: true }, { default: () => 'x' }]) {
      expect(fastParsable({ ...defs, x: { ...OclifFlags.string(extra as never), ...extra } as unknown as FlagDef }), JSON.stringify(extra)).to.equal(false)
    }
  })

  it('makes flag definitions of oclif\'s shape', () => {
    const strip = (d: object): object => Object.fromEntries(Object.entries(d).filter(([, v]) => typeof v !== 'function'))
    for (const opts of [{ description: 'x', helpGroup: 'G' }, { description: 'x', default: 'localhost' }]) {
      expect(strip(LiteFlags.string(opts))).to.deep.equal(strip(OclifFlags.string(opts)))
    }
    for (const opts of [{ description: 'x' }, { description: 'x', allowNo: true, default: false }]) {
      expect(strip(LiteFlags.boolean(opts))).to.deep.equal(strip(OclifFlags.boolean(opts)))
    }
  })
})
