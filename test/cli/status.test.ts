import { expect } from 'chai'
import { runCommand } from './harness.js'
import type { NodeOverview } from '../../src/api/contract/routes.js'
import { withEnv } from '../helpers/env.js'

const LINE = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z \[(INFO|ERROR|WARN)\] .+$/
// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/
const DID = 'bafybmi' + 'b'.repeat(52)
const RECV = 'bafybmi' + 'c'.repeat(52)
const TX = 'a1'.repeat(32)
const PEER = '12D3KooWPhZEYEw4jG3kSRuwgMEHcVt7KMkm1ui2ddu4fgSgwvDq'

const overview: NodeOverview = {
  version: '0.1.0',
  core_started: true,
  peer_id: PEER,
  started_at: '2026-01-01T00:00:00.000Z',
  uptime_s: 3725,
  connected_peers: 2,
  peers: [PEER, PEER],
  dids: [{ did: DID, did_type: 4, quorum: true, rbt: { balance: 12.5, locked: 1, pledged: 0.25, pinned: 0 } }],
  quorum: { role: true, dids: [DID], pledged: 0.25, list_size: 7 },
  pending_operations: [{ id: 'op-1', did: DID, operation: 'transfer', waiting: true, expires_at: '2026-01-01T01:03:00.000Z' }],
  transfers_in_flight: [{ transactionID: TX, status: 'delivery_pending', sender: DID, receiver: RECV, amount: 1, started_at: '2026-01-01T01:00:00.000Z', updated_at: '2026-01-01T01:00:01.000Z' }],
  last_errors: [{ time: '2026-01-01T01:00:02.000Z', level: 'WARN', component: 'consensus', msg: 'consensus: receiver unreachable' }]
}
const env = { status: true, message: 'Node overview', result: overview }
const respond = (): { body: unknown } => ({ body: env })

describe('cli: status', function () {
  this.timeout(20_000)

  it('asks GET /svc/v1/node/overview and prints a readable summary', async () => {
    const r = await withEnv({ FORCE_COLOR: undefined }, async () => await runCommand(['status', '-port', '20001'], respond))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.requests).to.deep.equal([{ method: 'GET', url: 'http://localhost:20001/svc/v1/node/overview', body: undefined }])
    for (const line of r.stderr.trim().split('\n')) expect(line).to.match(LINE)
    expect(r.stdout).to.not.match(ANSI)
    for (const want of ['0.1.0', PEER, '1h 2m', `${DID}  12.5 RBT  (locked 1 RBT, pledged 0.25 RBT, quorum)`, 'quorum          yes (1 DID), pledged 0.25 RBT',
      'quorum list     7 DIDs', 'op-1  transfer', 'waiting for an answer', `${TX}  delivery_pending  1 RBT to ${RECV}`, 'WARN consensus: consensus: receiver unreachable']) {
      expect(r.stdout).to.include(want)
    }
  })

  it('--json prints the envelope as it came', async () => {
    const r = await runCommand(['status', '--json'], respond, undefined, { tty: true })
    expect(r.code, r.stderr).to.equal(0)
    expect(JSON.parse(r.stdout)).to.deep.equal(env)
    expect(r.stdout).to.not.match(ANSI)
  })

  it('at a terminal the level, DIDs, amounts and transaction ids are coloured', async () => {
    const r = await withEnv({ NO_COLOR: undefined, FORCE_COLOR: undefined, TERM: 'xterm' }, async () => await runCommand(['status'], respond, undefined, { tty: true }))
    expect(r.code, r.stderr).to.equal(0)
    expect(r.stderr).to.match(ANSI)
    expect(r.stdout).to.match(ANSI)
    // eslint-disable-next-line no-control-regex
    expect(r.stdout).to.match(new RegExp(`\\u001b\\[[0-9;]*m${DID}\\u001b\\[[0-9;]*m`))
    expect(r.stdout).to.match(new RegExp(`\\u001b\\[[0-9;]*m${TX}\\u001b\\[[0-9;]*m`))
  })

  it('NO_COLOR at a terminal, or a pipe, gives exactly the plain bytes', async () => {
    const piped = await withEnv({ FORCE_COLOR: undefined }, async () => await runCommand(['status'], respond))
    const noColour = await withEnv({ NO_COLOR: '1', FORCE_COLOR: undefined }, async () => await runCommand(['status'], respond, undefined, { tty: true }))
    const strip = (s: string): string => s.replace(/^\S+ /gm, '')
    expect(noColour.stdout).to.equal(piped.stdout)
    expect(strip(noColour.stderr)).to.equal(strip(piped.stderr))
    expect(piped.stderr).to.match(/ \[INFO\] Node overview\n$/)
  })

  it('other commands keep their bytes in a pipe and colour the level at a terminal; FORCE_COLOR colours a pipe', async () => {
    const ping = (): { body: unknown } => ({ body: { status: true, message: 'Ping Received', result: { peerID: PEER, rtt_ms: 1.5 } } })
    const piped = await withEnv({ FORCE_COLOR: undefined }, async () => await runCommand(['ping', '-peerID', PEER], ping))
    expect(piped.stderr).to.match(/^\S+ \[INFO\] Ping Received\n$/)
    expect(piped.stdout).to.equal(`${PEER} 1.50 ms\n`)
    const tty = await withEnv({ NO_COLOR: undefined, FORCE_COLOR: undefined, TERM: 'xterm' }, async () => await runCommand(['ping', '-peerID', PEER], ping, undefined, { tty: true }))
    expect(tty.stderr).to.match(/^\S+ \u001b\[[0-9;]*m\[INFO\]\u001b\[[0-9;]*m Ping Received\n$/)
    const forced = await withEnv({ FORCE_COLOR: '1' }, async () => await runCommand(['ping', '-peerID', PEER], ping))
    expect(forced.stderr).to.match(ANSI)
  })
})
