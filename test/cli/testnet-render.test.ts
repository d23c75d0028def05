import { expect } from 'chai'
import { nodeTable, summaryText, testnetProgress } from '../../src/cli/testnet-render.js'
import { plainPainter } from '../../src/util/colour.js'
import type { TestnetSummary } from '../../src/testnet/testnet.js'

describe('cli: rbtnode testnet output', () => {
  it('at a terminal: a line per phase, ticked when done, and a bar while the nodes start', () => {
    let out = ''
    const p = testnetProgress((s) => { out += s }, true, plainPainter)
    p.phase('starting 5 quorum and 2 user nodes')
    p.nodesStarted(0, 7)
    p.nodesStarted(7, 7)
    p.phaseDone('starting 5 quorum and 2 user nodes', 8100)
    p.phase('one quorum list on every node')
    p.phaseDone('one quorum list on every node', 1800)
    expect(out).to.include('[------------------------] 0/7')
    expect(out).to.include('[########################] 7/7')
    const lines = out.split('\n').map((l) => l.replace(/[\s\S]*\r\x1b\[K/, ''))
    expect(lines.slice(0, 2)).to.deep.equal(['  ✓ starting 5 quorum and 2 user nodes (8.1 s)', '  ✓ one quorum list on every node (1.8 s)'])
  })

  it('piped: plain lines, no control characters', () => {
    let out = ''
    const p = testnetProgress((s) => { out += s }, false, plainPainter)
    p.phase('one quorum list on every node')
    p.nodesStarted(3, 7)
    p.phaseDone('one quorum list on every node', 1800)
    expect(out).to.equal('one quorum list on every node…\none quorum list on every node: done in 1.8 s\n')
  })

  it('the table has node, API, peer id, DID and balance; the summary the password and both commands', () => {
    const s: TestnetSummary = {
      dir: '/x/testnet',
      restarted: false,
      password: 'testnet-1234',
      nodes: [
        { name: 'quorum-1', role: 'quorum', api: 'http://127.0.0.1:21000', peerId: '12D3KooWA', did: 'bafybmiq', balance: 9.8, running: true },
        { name: 'user-1', role: 'user', api: 'http://127.0.0.1:21001', peerId: '12D3KooWB', did: 'bafybmiu', balance: undefined, running: false }
      ],
      commands: { transfer: 'npx rbtnode transferrbt -port 21001', balance: 'npx rbtnode getaccountinfo -port 21001' }
    }
    expect(nodeTable(s.nodes, plainPainter).split('\n')).to.deep.equal([
      'NODE      API                     PEER ID    DID       RBT',
      'quorum-1  http://127.0.0.1:21000  12D3KooWA  bafybmiq  9.800',
      'user-1    http://127.0.0.1:21001  12D3KooWB  bafybmiu  down'
    ])
    const text = summaryText(s, plainPainter)
    expect(text).to.include('Password of every DID: testnet-1234')
    expect(text).to.include('  npx rbtnode transferrbt -port 21001')
    expect(text).to.include('  npx rbtnode getaccountinfo -port 21001')
  })
})
