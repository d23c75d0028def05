import { expect } from 'chai'
import { helpArgv, normaliseArgv, UnknownFlagError, type FlagInfo } from '../../src/cli/go-flags.js'

const flags: Record<string, FlagInfo> = {
  port: { type: 'option' },
  privPWD: { type: 'option' },
  didType: { type: 'option' },
  testNet: { type: 'boolean', allowNo: true },
  s: { type: 'boolean', allowNo: true },
  p: { type: 'option' },
  childPath: { type: 'option' }
}

describe('cli: Go-style flag normalisation', () => {
  it('rewrites single-dash long flags and =values', () => {
    expect(normaliseArgv(['-port', '20001', '-didType=4', '--privPWD', 'x'], flags)).to.deep.equal(['--port=20001', '--didType=4', '--privPWD=x'])
  })
  it('takes the next token as the value whatever it looks like (Go rule)', () => {
    expect(normaliseArgv(['-privPWD', '-port', '-didType', '3'], flags)).to.deep.equal(['--privPWD=-port', '--didType=3'])
  })
  it('handles booleans, =false and one-letter flags', () => {
    expect(normaliseArgv(['-testNet', '-s=false', '-p', 'node0'], flags)).to.deep.equal(['--testNet', '--no-s', '--p=node0'])
    expect(normaliseArgv(['-testNet=true', '-s=0'], flags)).to.deep.equal(['--testNet', '--no-s'])
  })
  it('matches flag names case-insensitively when unambiguous (-ChildPath)', () => {
    expect(normaliseArgv(['-ChildPath', '2'], flags)).to.deep.equal(['--childPath=2'])
  })
  it('maps -h and -help to --help and keeps positional args', () => {
    expect(normaliseArgv(['-h', 'x'], flags)).to.deep.equal(['--help', 'x'])
  })
  it('helpArgv turns -h and -help into --help before oclif looks for it, not after --', () => {
    expect(helpArgv(['getalldid', '-h'])).to.deep.equal(['getalldid', '--help'])
    expect(helpArgv(['syncwallet', '-help', '-did', 'x'])).to.deep.equal(['syncwallet', '--help', '-did', 'x'])
    expect(helpArgv(['run', '--', '-h'])).to.deep.equal(['run', '--', '-h'])
  })
  it('helpArgv turns the reference\'s -v subcommand into --version, and only as the whole command line', () => {
    expect(helpArgv(['-v'])).to.deep.equal(['--version'])
    expect(helpArgv(['getalldid', '-v'])).to.deep.equal(['getalldid', '-v'])
  })
  it('rejects unknown flags with a suggestion', () => {
    expect(() => normaliseArgv(['-prot', '1'], flags)).to.throw(UnknownFlagError, /did you mean -port/)
    expect(() => normaliseArgv(['-zzzzzzzz'], flags)).to.throw(UnknownFlagError, /unknown flag -zzzzzzzz/)
  })
  it('rejects a value-less flag at the end', () => {
    expect(() => normaliseArgv(['-port'], flags)).to.throw(/needs a value/)
  })
})
