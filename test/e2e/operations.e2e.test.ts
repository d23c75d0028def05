import { expect } from 'chai'
import { NodeProcess } from '../helpers/node-process.js'
import { runCli } from '../helpers/cli.js'

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/

describe('e2e: operating a node (-logFormat json, status)', function () {
  this.timeout(60_000)
  let node: NodeProcess
  let stdout = ''
  let did = ''

  before(async () => {
    // -grpcPort makes the node log a WARN at start: it must show among the last errors
    node = new NodeProcess({ extraArgs: ['-logFormat', 'json', '-grpcPort', '10500'] })
    await node.start()
    node.child?.stdout?.on('data', (d: Buffer) => { stdout += d.toString() })
    did = ((await node.client.call('didCreate', { body: { type: 4, password: 'ops-e2e-pw' } as never })).result as { did: string }).did
  })

  after(async () => { await node?.dispose() })

  it('writes one parseable JSON object per log line, with time, level, msg and component', async () => {
    const lines = node.logs.split('\n').filter((l) => l !== '')
    expect(lines.length).to.be.greaterThan(2)
    const parsed = lines.map((l) => { try { return JSON.parse(l) as Record<string, string> } catch { throw new Error(`not a JSON line: ${l}`) } })
    for (const o of parsed) {
      expect(o).to.include.keys(['time', 'level', 'msg'])
      expect(Number.isNaN(Date.parse(o.time))).to.equal(false)
      expect(['DEBUG', 'INFO', 'WARN', 'ERROR']).to.include(o.level)
    }
    expect(parsed.some((o) => o.level === 'WARN' && /-grpcPort 10500 ignored/.test(o.msg))).to.equal(true)
    expect(parsed.some((o) => typeof o.component === 'string' && o.component !== '')).to.equal(true)
    expect(stdout).to.equal('')
  })

  it('GET /svc/v1/node/overview reports the node, its DIDs and the last warnings', async () => {
    const o = (await node.client.call('nodeOverview')).result!
    expect(o.peer_id).to.equal(node.peerId)
    expect(o.core_started).to.equal(true)
    expect(o.uptime_s).to.be.at.least(0)
    expect(o.dids.map((d) => d.did)).to.include(did)
    expect(o.dids.find((d) => d.did === did)!.rbt).to.deep.equal({ balance: 0, locked: 0, pledged: 0, pinned: 0 })
    expect(o.quorum.role).to.equal(false)
    expect(o.transfers_in_flight).to.deep.equal([])
    expect(o.last_errors.some((e) => e.level === 'WARN' && /-grpcPort 10500 ignored/.test(e.msg))).to.equal(true)
  })

  it('rbtnode status prints a summary in a pipe without colour, --json the envelope, FORCE_COLOR colours it', async () => {
    const r = await runCli(['status', ...node.cliArgs], { env: { FORCE_COLOR: '1' } })
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stderr).to.match(ANSI)
    expect(r.stdout).to.match(ANSI)
    const plain = await runCli(['status', ...node.cliArgs], { env: { NO_COLOR: '1' } })
    expect(plain.code, plain.stderr).to.equal(0)
    expect(plain.stdout).to.not.match(ANSI)
    expect(plain.stderr).to.match(/^\S+ \[INFO\] Node overview\n$/)
    expect(plain.stdout).to.include(node.peerId)
    expect(plain.stdout).to.include(`${did}  0 RBT`)
    const json = await runCli(['status', '--json', ...node.cliArgs])
    expect(json.code, json.stderr).to.equal(0)
    expect(JSON.parse(json.stdout).result.peer_id).to.equal(node.peerId)
  })
})
