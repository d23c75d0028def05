import { expect } from 'chai'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT, runCli, runProcess } from '../helpers/cli.js'
import { commandArgs, freeBasePort, TestnetProcess } from '../helpers/testnet-process.js'
import { waitFor } from '../helpers/wait.js'
import type { TestnetStatus } from '../../src/testnet/control.js'

/**
 * The on-ramp as a newcomer uses it: `rbtnode testnet -quorums 5 -users 2`, the printed transfer
 * and balance commands, status and stop from another process, a node that dies, a restart that
 * finds the balances.
 */
describe('e2e: rbtnode testnet', function () {
  this.timeout(300_000)
  let dir = ''
  let base = 0
  let net: TestnetProcess | undefined

  before(async () => {
    dir = mkdtempSync(join(tmpdir(), 'rbtnode-testnet-'))
    base = await freeBasePort(7)
  })

  after(async () => {
    await net?.stop()
    await runCli(['testnet', 'stop', '-p', dir])
    rmSync(dir, { recursive: true, force: true })
  })

  const status = async (): Promise<TestnetStatus> => {
    const r = await runCli(['testnet', 'status', '-p', dir, '--json'])
    expect(r.code, r.stderr).to.equal(0)
    return (JSON.parse(r.stdout) as { result: TestnetStatus }).result
  }

  it('sets up 5 quorums and 2 funded users; the printed transfer command moves 1 RBT', async () => {
    net = new TestnetProcess(['-quorums', '5', '-users', '2', '-p', dir, '-basePort', String(base)])
    const s = await net.ready()
    expect(s.restarted).to.equal(false)
    expect(s.nodes.map((n) => n.name)).to.deep.equal(['quorum-1', 'quorum-2', 'quorum-3', 'quorum-4', 'quorum-5', 'user-1', 'user-2'])
    for (const n of s.nodes) {
      expect(n.running, n.name).to.equal(true)
      expect(n.did, n.name).to.match(/^bafybmi/)
      expect(n.peerId, n.name).to.match(/^12D3KooW/)
    }
    expect(s.nodes[5].balance).to.equal(10)
    expect(s.nodes[6].balance).to.equal(10)
    expect(s.nodes[5].api).to.equal(`http://127.0.0.1:${base + 5}`)
    const t = await runCli(commandArgs(s.commands.transfer), { cwd: dir })
    expect(t.code, t.stderr).to.equal(0)
    expect(t.stdout.trim()).to.match(/^[0-9a-f]{64}$/)
    const b = await runCli(commandArgs(s.commands.balance), { cwd: dir })
    expect(b.code, b.stderr).to.equal(0)
    expect(b.stdout).to.match(/RBT \(free\)\s+11\.000/)
  })

  it('the SDK example transfers between the two users with the typed client', async () => {
    const r = await runProcess(process.execPath, [join(ROOT, 'examples/sdk/transfer.mjs'), dir, '0.5'])
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stdout).to.match(/^committed [0-9a-f]{64}\n/)
    expect(r.stdout).to.match(/^sender {3}bafybmi\S+ 8\.5 RBT$/m)
    expect(r.stdout).to.match(/^receiver bafybmi\S+ 11\.5 RBT$/m)
  })

  it('status from another process sees every node; a node that dies is named with its log while the others keep running', async () => {
    const before = await status()
    expect(before.supervisor).to.equal(net!.child.pid)
    expect(before.nodes.every((n) => n.running)).to.equal(true)
    const { pid } = (JSON.parse(readFileSync(join(dir, 'supervisor.json'), 'utf8')) as { nodes: Array<{ name: string, pid: number }> }).nodes.find((n) => n.name === 'quorum-5')!
    process.kill(pid, 'SIGKILL')
    await waitFor(() => net!.stderr.includes('quorum-5 exited (SIGKILL)'), { timeoutMs: 10_000, what: 'the dead node to be named' })
    // its log tail follows the line that names it
    expect(net!.stderr).to.match(/quorum-5 exited \(SIGKILL\)[^\n]*quorum-5\/node\.log:\n {2}\S.*\[INFO\]/)
    expect(net!.running).to.equal(true)
    const after = await status()
    expect(after.nodes.filter((n) => !n.running).map((n) => n.name)).to.deep.equal(['quorum-5'])
  })

  it('testnet stop stops it from another process; started again it repeats no set-up and finds the balances', async () => {
    const r = await runCli(['testnet', 'stop', '-p', dir])
    expect(r.code, r.stderr).to.equal(0)
    expect(await net!.exited).to.equal(0)
    expect((await status()).nodes.some((n) => n.running)).to.equal(false)
    net = new TestnetProcess(['-p', dir])
    const s = await net.ready(60_000)
    expect(s.restarted).to.equal(true)
    expect(net.stderr).to.not.match(/quorum DIDs created/)
    expect(s.nodes.every((n) => n.running)).to.equal(true)
    expect(s.nodes[5].balance).to.equal(8.5)
    expect(s.nodes[6].balance).to.equal(11.5)
    // the nodes are connected again as they come up: the printed transfer goes through at once
    const t = await runCli(commandArgs(s.commands.transfer), { cwd: dir })
    expect(t.code, t.stderr).to.equal(0)
    // Ctrl-C / SIGTERM stops every node
    expect(await net.stop()).to.equal(0)
    expect((await status()).nodes.some((n) => n.running)).to.equal(false)
  })

  it('a signal during set-up stops every node started so far', async () => {
    const p = new TestnetProcess(['-quorums', '5', '-users', '2', '-p', dir, '-basePort', String(base), '-fresh'])
    // some nodes are up: the start phase has begun and at least one API answers
    await waitFor(async () => {
      if (!p.stderr.includes('starting 5 quorum and 2 user nodes')) return false
      return (await fetch(`http://127.0.0.1:${base}/svc/v1/node/status`).catch(() => undefined))?.ok === true
    }, { timeoutMs: 60_000, what: 'the first node of the new network to answer' })
    expect(await p.stop()).to.not.equal(0)
    expect(p.stderr).to.match(/stopped during set-up/)
    const nodesLeft = (): string[] => readdirSync('/proc').filter((d) => /^\d+$/.test(d)).filter((pid) => {
      try { return readFileSync(`/proc/${pid}/cmdline`, 'utf8').includes(dir) } catch { return false }
    })
    expect(nodesLeft()).to.deep.equal([])
  })
})
