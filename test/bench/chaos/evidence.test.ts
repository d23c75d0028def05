import { expect } from 'chai'
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Evidence, namedNodes } from '../../../bench/chaos/evidence.js'

describe('chaos: the evidence of a problem', () => {
  let root: string
  beforeEach(() => { root = mkdtempSync(join(tmpdir(), 'chaos-evidence-test-')) })
  afterEach(() => { rmSync(root, { recursive: true, force: true }) })

  it('keeps a copy of the node\'s data dir as it was (without the disk filler) and its whole output; the problem carries the last lines and the path', () => {
    const dir = join(root, 'node')
    mkdirSync(join(dir, 'Rubix', 'TestNet', 'db'), { recursive: true })
    writeFileSync(join(dir, 'Rubix', 'TestNet', 'db', 'CURRENT'), 'MANIFEST-000001\n')
    writeFileSync(join(dir, 'chaos-filler'), Buffer.alloc(1024))
    const output = Array.from({ length: 50 }, (_, i) => `line ${i}`).join('\n') + '\n'
    const ev = new Evidence(join(root, 'evidence'), 5)
    const lines = ev.keep({ name: 'q3', dir, logs: () => output }, 'restart-1-exit-75')
    const copy = /data dir copied to (\S+);/.exec(lines[0]!)![1]!
    expect(readFileSync(join(copy, 'data', 'Rubix', 'TestNet', 'db', 'CURRENT'), 'utf8')).to.equal('MANIFEST-000001\n')
    expect(existsSync(join(copy, 'data', 'chaos-filler'))).to.equal(false)
    expect(readFileSync(join(copy, 'output.log'), 'utf8')).to.equal(output)
    expect(lines.slice(1)).to.deep.equal(['      | line 45', '      | line 46', '      | line 47', '      | line 48', '      | line 49'])
    // the dir changes afterwards: the copy stays as it was
    writeFileSync(join(dir, 'Rubix', 'TestNet', 'db', 'CURRENT'), 'MANIFEST-000009\n')
    expect(readFileSync(join(copy, 'data', 'Rubix', 'TestNet', 'db', 'CURRENT'), 'utf8')).to.equal('MANIFEST-000001\n')

    const problem = 'kill of q3: node exited during start (exit code 75): …'
    ev.attach(problem, lines)
    const rendered = ev.render([`chain: ${problem}`, 'u0: 1 rbt Locked'], (p) => [`    fallback for ${namedNodes(p).join(',')}`])
    expect(rendered).to.deep.equal([`chain: ${problem}`, ...lines, 'u0: 1 rbt Locked', '    fallback for u0'])
    ev.discard()
    expect(existsSync(join(root, 'evidence'))).to.equal(false)
  })

  it('names the soak\'s nodes a problem mentions', () => {
    expect(namedNodes('after the heal (q1 cut off) still unreachable: q1→u2 q1→full; q1 again')).to.deep.equal(['q1', 'u2'])
    expect(namedNodes('RBT held 317, minted 316; the disk is full')).to.deep.equal([])
    const nodes = [{ name: 'u0', dids: ['bafybmiaaaaaaaaaaaaaaaaaa'] }, { name: 'u1', dids: ['bafybmibbbbbbbbbbbbbbbbbb', 'bafybmicccccccccccccccccc'] }]
    expect(namedNodes('op 4 (rbt bafybmiccccc… → bafybmiaaaaa…, failed) was refused but is committed', nodes)).to.deep.equal(['u0', 'u1'])
  })
})
