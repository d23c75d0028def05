import { expect } from 'chai'
import { chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { BIN, ROOT, childEnv } from '../helpers/cli.js'
import { createNetns, requireNetns, type Netns } from '../helpers/netns.js'

/**
 * An operator's script as the test: test/e2e/operator-script.sh drives nine real nodes with
 * nothing but `rbtnode` verbs and the reference's flags (two quorum lists, no bootstrap call: the
 * nodes find each other by mDNS, so the whole script runs inside a network namespace made for it),
 * runs its set-up part twice, transfers both ways and to itself, and judges by exit codes and
 * balances only. This file only makes the namespace, runs the script and reports its output.
 */
describe('e2e: an operator\'s bash script written for the reference runs unchanged', function () {
  this.timeout(900_000)
  let ns: Netns | undefined
  let work = ''

  before(async function () {
    await requireNetns(this)
    ns = await createNetns('script')
    work = mkdtempSync(join(tmpdir(), 'rbtnode-script-'))
  })

  after(async () => {
    await ns?.dispose()
    if (work !== '') rmSync(work, { recursive: true, force: true })
  })

  it('set-up twice, transfers both ways, a self transfer: every call exits 0 without [ERROR], balances as expected', async () => {
    // `rbtnode` on the script's PATH is this checkout's executable
    const bin = join(work, 'bin')
    mkdirSync(bin, { recursive: true })
    writeFileSync(join(bin, 'rbtnode'), `#!/bin/sh\nexec "${process.execPath}" "${BIN}" "$@"\n`)
    chmodSync(join(bin, 'rbtnode'), 0o755)
    const env = childEnv({
      PATH: `${bin}:${process.env.PATH ?? '/usr/bin:/bin'}`,
      RBTNODE_MDNS: '1',
      RBTNODE_MDNS_INTERVAL_MS: '1000',
      RBTNODE_GOSSIP_HEARTBEAT_MS: '100',
      SCRIPT_DEADLINE_S: '180'
    })
    const child = ns!.spawn('bash', [join(ROOT, 'test/e2e/operator-script.sh'), join(work, 'net')], { cwd: work, env, stdio: ['ignore', 'pipe', 'pipe'] })
    let out = ''
    child.stdout?.on('data', (d: Buffer) => { out += d.toString() })
    child.stderr?.on('data', (d: Buffer) => { out += d.toString() })
    const code = await new Promise<number | null>((resolve) => { child.on('exit', (c) => { resolve(c) }) })
    if (code !== 0) {
      // the script's own lines, then the end of every node's log
      let logs = ''
      for (let i = 1; i <= 9; i++) {
        const f = join(work, 'net', `node${i}.log`)
        if (existsSync(f)) logs += `--- node${i}.log ---\n${readFileSync(f, 'utf8').split('\n').slice(-30).join('\n')}\n`
      }
      expect.fail(`the script exited ${String(code)}:\n${out}\n${logs}`)
    }
    expect(out).to.match(/SCRIPT OK/)
  })
})

