import { expect } from 'chai'
import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT, runCli } from '../helpers/cli.js'
import { HELP_GROUPS } from '../../src/cli/help-groups.js'

/** `rbtnode help` for a newcomer: verbs grouped by what an operator does, testnet first, not-done verbs hidden but accepted. */
describe('cli: rbtnode help', function () {
  this.timeout(60_000)
  let out = ''

  before(async () => {
    const r = await runCli(['help'])
    expect(r.code, r.stderr).to.equal(0)
    out = r.stdout
  })

  it('lists the groups in order with testnet first', () => {
    const titles = out.split('\n').filter((l) => /^[A-Z][A-Z ]+$/.test(l)).filter((t) => !['VERSION', 'USAGE'].includes(t))
    expect(titles).to.deep.equal(HELP_GROUPS.map((g) => g.title))
    const first = out.indexOf('GET STARTED\n')
    expect(out.slice(first).split('\n')[1]).to.match(/^ {2}testnet\s/)
    expect(out).to.include('  testnet status ')
  })

  it('hides the verbs this node does not do, which stay accepted with their own help', async () => {
    const notDone = readdirSync(join(ROOT, 'commands')).filter((f) => f.endsWith('.ts')).map((f) => f.replace(/\.ts$/, ''))
      .filter((id) => /extends NotDoneCommand/.test(String(readFileSyncSafe(join(ROOT, 'commands', id + '.ts')))))
    expect(notDone).to.have.length(16)
    for (const id of notDone) expect(out, id).to.not.match(new RegExp(`^ {2}${id}\\b`, 'm'))
    // every other verb is listed
    expect(out).to.match(/^ {2}transferrbt\b/m)
    const own = await runCli(['help', 'locktokens'])
    expect(own.code, own.stderr).to.equal(0)
    expect(own.stdout).to.match(/Not done by this node/)
    // still accepted: the verb runs (and fails as a client without a node), it is not an unknown command
    const r = await runCli(['locktokens', '-port', '1'])
    expect(r.code).to.equal(1)
    expect(r.stderr).to.not.match(/not found/i)
  })
})

function readFileSyncSafe (p: string): string {
  try { return readFileSync(p, 'utf8') } catch { return '' }
}
