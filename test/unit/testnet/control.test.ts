import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { stopTestnet, testnetStatus } from '../../../src/testnet/control.js'
import { alive, writeState, writeSupervisor } from '../../../src/testnet/state.js'
import { checkOptions, ephemeralOverlap, pasteCommands } from '../../../src/testnet/testnet.js'
import { freePort } from '../../helpers/ports.js'

describe('testnet: state, status and stop without a running network', () => {
  let dir = ''
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'rbtnode-testnet-unit-')) })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  it('a directory without a network: status says none, stop says none', async () => {
    expect(await testnetStatus(dir)).to.equal(undefined)
    expect(await stopTestnet(dir)).to.equal('none')
  })

  it('stop never signals a process that reused a recorded pid (its command line does not name the network)', async () => {
    const port = await freePort()
    writeState(dir, {
      version: 1, created: '', password: 'pw', fund: 10, basePort: port, complete: true,
      nodes: [{ name: 'user-1', role: 'user', index: 0, dir: join(dir, 'user-1'), apiPort: port, swarmPort: port + 1, peerId: '12D3KooW', did: 'bafybmi' }]
    })
    // a process that is not a node of this network, recorded as the supervisor and as a node
    const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
    try {
      writeSupervisor(dir, { pid: 999_999_999, started: '', nodes: [{ name: 'user-1', pid: other.pid! }] })
      expect(await stopTestnet(dir, 5_000)).to.equal('not running')
      expect(alive(other.pid!)).to.equal(true)
      // status reads the state: the node does not answer
      const s = await testnetStatus(dir)
      expect(s?.nodes.map((n) => [n.name, n.running])).to.deep.equal([['user-1', false]])
      expect(s?.supervisor).to.equal(undefined)
    } finally {
      other.kill('SIGKILL')
    }
  })

  it('options are checked before anything starts, the message naming the flag', () => {
    const ok = { dir, quorums: 7, users: 2, basePort: 21000, fund: 10, fresh: false }
    expect(() => { checkOptions(ok) }).to.not.throw()
    expect(() => { checkOptions({ ...ok, quorums: 4 }) }).to.throw(RangeError, /-quorums .* at least 5/)
    expect(() => { checkOptions({ ...ok, users: 0 }) }).to.throw(RangeError, /-users/)
    expect(() => { checkOptions({ ...ok, fund: 0 }) }).to.throw(RangeError, /-fund/)
    expect(() => { checkOptions({ ...ok, basePort: 80 }) }).to.throw(RangeError, /-basePort/)
  })

  it('a port range inside the system\'s ephemeral ports is named (outgoing connections may take them first)', () => {
    const range = join(dir, 'range')
    writeFileSync(range, '32768\t60999\n')
    expect(ephemeralOverlap(21000, 9, range)).to.equal(undefined)
    expect(ephemeralOverlap(40000, 9, range)).to.deep.equal({ low: 32768, high: 60999 })
    // the swarm ports (base + 500) reach into it
    expect(ephemeralOverlap(32300, 9, range)).to.deep.equal({ low: 32768, high: 60999 })
    expect(ephemeralOverlap(40000, 9, join(dir, 'no-such-file'))).to.equal(undefined)
  })

  it('the pasted commands name the first user\'s port and both user DIDs', () => {
    const node = (name: string, role: 'quorum' | 'user', i: number, did: string) => ({ name, role, index: i, dir, apiPort: 21000 + i, swarmPort: 21500 + i, peerId: 'p', did })
    const c = pasteCommands([node('quorum-1', 'quorum', 0, 'dq'), node('user-1', 'user', 1, 'da'), node('user-2', 'user', 2, 'db')], 'pw')
    expect(c.transfer).to.equal('npx rbtnode transferrbt -port 21001 -senderAddr da -receiverAddr db -rbtAmount 1 -privPWD pw')
    expect(c.balance).to.equal('npx rbtnode getaccountinfo -port 21002 -did db')
  })
})
