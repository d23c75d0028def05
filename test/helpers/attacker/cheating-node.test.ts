import { expect } from 'chai'
import { runFlags } from './cheating-node.js'

describe('helpers: the cheating owner\'s node reads the run command\'s flags as NodeProcess passes them', function () {
  it('numbers, values after the flag or after "=", bare and false booleans', () => {
    const f = runFlags(['run', '-p', '/tmp/x', '-n', '3', '-port', '2000', '-swarmPort', '2001', '-swarmHost', '10.0.0.2', '-testNet', '-testNetKey', 'k.key', '-mdns=false', '-fullnode'])
    expect(f).to.deep.equal({ p: '/tmp/x', n: 3, port: 2000, swarmPort: 2001, swarmHost: '10.0.0.2', testNet: true, testNetKey: 'k.key', mdns: false, fullnode: true })
  })

  it('refuses a stray argument rather than starting a node with flags it misread', () => {
    expect(() => runFlags(['run', '-p', '/tmp/x', 'extra', 'words'])).to.throw(/unexpected argument extra/)
  })
})
