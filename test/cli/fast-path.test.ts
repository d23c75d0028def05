import { expect } from 'chai'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { fastVerb } from '../../src/cli/fast-path.js'
import { fastDir } from '../../src/cli/main.js'
import { ROOT } from '../helpers/cli.js'
import { runCommand, type Responder } from './harness.js'

const FAST = new URL('dist/bundle/fast/', pathToFileURL(ROOT + '/'))
const A = 'bafybmihahltqd7lqpqlqgu3pzxetyegdj6e7iyfq4bg7k3pu2hzyiw2gyu'
const B = 'bafybmif2cnnbeadcjnmuxmdnwhmkwszcqx2wcrysbk3oo3yl4gifpjbufy'
const TX = 'a'.repeat(64)

describe('cli: the fast path of the client verbs', function () {
  this.timeout(20_000)

  it('finds the bundle from bin/run.js\'s URL or the package folder', () => {
    expect(fastDir(pathToFileURL(join(ROOT, 'bin', 'run.js')).href).href).to.equal(FAST.href)
    expect(fastDir(ROOT).href).to.equal(FAST.href)
  })

  it('indexes every verb of the manifest but help, run and the test network, with their aliases', () => {
    const manifest = JSON.parse(readFileSync(join(ROOT, 'oclif.manifest.json'), 'utf8')) as { commands: Record<string, { aliases?: string[] }> }
    const index = JSON.parse(readFileSync(new URL('verbs.json', FAST), 'utf8')) as Record<string, string>
    const want = Object.entries(manifest.commands).filter(([id]) => !['help', 'run'].includes(id) && !id.startsWith('testnet'))
    expect(want.length).to.be.greaterThan(60)
    for (const [id, c] of want) {
      for (const name of [id, ...(c.aliases ?? [])]) expect(index[name], name).to.equal(`commands/${id}.js`)
    }
    for (const id of ['help', 'run', 'testnet', 'testnet:status', 'testnet:stop']) expect(index[id], id).to.equal(undefined)
  })

  it('takes a verb or alias with plain arguments, and leaves help, oclif\'s verbs and usage errors to oclif', async () => {
    expect((await fastVerb(FAST, ['getallbootstrap', '-port', '20001', '--json']))?.id).to.equal('getallbootstrap')
    expect((await fastVerb(FAST, ['sync', '-did', A]))?.id).to.equal('syncwallet')
    expect((await fastVerb(FAST, ['checkQuorumStatus', '-quorumAddr', A]))?.id).to.equal('checkQuorumStatus')
    for (const argv of [[], ['help'], ['--version'], ['getallbootstrap', '--help'], ['run', '-p', 'x'], ['testnet'], ['testnet', 'status'],
      ['nosuchverb'], ['getallbootstrap', '-prot', '1'], ['getallbootstrap', 'x'], ['getallbootstrap', '-port'], ['-port', '1', 'getallbootstrap']]) {
      expect(await fastVerb(FAST, argv), argv.join(' ')).to.equal(undefined)
    }
  })

  it('answers as oclif does: output, requests and exit codes 0, 1, 2 and 3', async () => {
    const ok: Responder = () => ({ body: { status: true, message: 'Got all the bootstrap peers successfully', result: { peers: ['/ip4/127.0.0.1/tcp/4003'] } } })
    const failed: Responder = () => ({ status: 500, body: { status: false, message: 'it broke', result: null } })
    const pending: Responder = (req) => req.url.endsWith('/svc/v1/tx')
      ? { body: { status: true, message: 'Password needed', result: { id: 'id1', mode: 4, hash: null, only_priv_key: false } } }
      : { status: 502, body: { status: false, message: `Transaction ${TX}: delivery pending`, result: { code: 'DELIVERY_PENDING', transactionID: TX } } }
    const transfer = ['transferrbt', '-senderAddr', A, '-receiverAddr', B, '-rbtAmount', '1.5', '-privPWD', 'pw']
    const calls: Array<[string[], Responder, number]> = [
      [['getallbootstrap', '-port', '20001'], ok, 0],
      [['getallbootstrap', '--json', '-addr', '::1'], ok, 0],
      [['getallbootstrap'], failed, 1],
      [['getallbootstrap', '--json'], failed, 1],
      [['getallbootstrap', '-port', 'abc'], ok, 2],
      [['syncwallet'], ok, 2],
      [transfer, pending, 3],
      [[...transfer, '--json'], pending, 3]
    ]
    const timeless = (s: string): string => s.replace(/^\S+Z /gm, '')
    for (const [argv, respond, code] of calls) {
      const fast = await runCommand(argv, respond)
      const oclif = await runCommand(argv, respond, undefined, { oclif: true })
      expect(fast.path, argv.join(' ')).to.equal('fast')
      expect(oclif.path).to.equal('oclif')
      expect(fast.code, argv.join(' ') + fast.stderr).to.equal(code)
      expect(oclif.code, argv.join(' ')).to.equal(code)
      expect({ ...fast, path: '', stderr: timeless(fast.stderr) }, argv.join(' ')).to.deep.equal({ ...oclif, path: '', stderr: timeless(oclif.stderr) })
    }
  })

  it('leaves a usage error oclif explains to oclif, with its message and exit code 2', async () => {
    const r = await runCommand(['getallbootstrap', '-prot', '1'], () => ({ body: null }))
    expect(r.path).to.equal('oclif')
    expect(r.code).to.equal(2)
    expect(r.stderr).to.match(/\[ERROR\] unknown flag -prot; did you mean -port\?/)
  })
})
