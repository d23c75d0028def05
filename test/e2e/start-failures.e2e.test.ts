import { expect } from 'chai'
import { mkdtempSync, readFileSync, readdirSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs'
import { createServer, type Server } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NodeExitedError, NodeProcess, type NodeProcessOptions } from '../helpers/node-process.js'
import { freePort } from '../helpers/ports.js'
import { Tmpfs, requireTmpfs } from '../helpers/tmpfs.js'

/**
 * Every way a start can fail says why (one ERROR line on stderr, and in the -logFile) and ends with
 * the exit code of its cause (docs/operations.md, "When a start fails"): 75 starting again may
 * help, 78 the operator must act first, 70 an unforeseen error. Real `rbtnode run` processes.
 */
describe('e2e: a start that fails says why and exits with a code a restart loop can act on', function () {
  this.timeout(120_000)
  const dirs: string[] = []
  const nodes: NodeProcess[] = []
  const servers: Server[] = []
  afterEach(async () => {
    await Promise.all(nodes.splice(0).map(async (n) => { await n.dispose() }))
    for (const s of servers.splice(0)) s.close()
    for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true })
  })

  const tempDir = (): string => { const d = mkdtempSync(join(tmpdir(), 'rbtnode-startfail-')); dirs.push(d); return d }
  const node = (o: NodeProcessOptions = {}): NodeProcess => {
    const n = new NodeProcess({ extraArgs: ['-testNet'], ...o, dir: o.dir ?? tempDir() })
    nodes.push(n)
    return n
  }
  /** Starts `n`, which must fail; the error of the exit. */
  const failedStart = async (n: NodeProcess): Promise<NodeExitedError> => {
    const e = await n.start().then(() => undefined, (err: unknown) => err)
    if (!(e instanceof NodeExitedError)) throw new Error(`expected the start to fail with an exit, got ${e === undefined ? 'a running node' : String(e)}`)
    return e
  }
  /** The one ERROR line of the failure, which names the exit code. */
  const failureLine = (e: NodeExitedError): string => {
    const lines = e.output.split('\n').filter((l) => /\[ERROR\] start failed/.test(l))
    expect(lines, e.output).to.have.length(1)
    return lines[0]!
  }
  const listenOn = async (port: number): Promise<void> => {
    // connections are closed at once: the harness's status polls see no API there, not a hang
    const s = createServer((c) => { c.destroy() })
    servers.push(s)
    await new Promise<void>((resolve, reject) => { s.once('error', reject); s.listen(port, '127.0.0.1', resolve) })
  }
  /** A data dir a node has run on once (store, keys and config written), the node stopped. */
  const usedDir = async (): Promise<string> => {
    const n = node()
    await n.start()
    await n.stop()
    return n.dir
  }

  it('the API port in use: 75, the port and EADDRINUSE named, on stderr and in the -logFile', async () => {
    const port = await freePort()
    await listenOn(port)
    const dir = tempDir()
    const logFile = join(dir, 'logs', 'node.log')
    const e = await failedStart(node({ dir, apiPort: port, extraArgs: ['-testNet', '-logFile', logFile] }))
    expect(e.exitCode).to.equal(75)
    const line = failureLine(e)
    expect(line).to.match(/start failed \(exit 75: starting again may help\)/)
    expect(line).to.include(String(port)).and.to.include('EADDRINUSE')
    // the log file holds the same line, written before the exit
    expect(readFileSync(logFile, 'utf8')).to.include(line.slice(line.indexOf('[ERROR]')))
  })

  it('the swarm port in use: 75, EADDRINUSE named', async () => {
    const port = await freePort()
    await listenOn(port)
    const e = await failedStart(node({ swarmPort: port }))
    expect(e.exitCode).to.equal(75)
    expect(failureLine(e)).to.include('EADDRINUSE')
  })

  it('the store held by another node on the same data dir: 75, the database named as in use', async () => {
    const dir = tempDir()
    await node({ dir }).start()
    const e = await failedStart(node({ dir }))
    expect(e.exitCode).to.equal(75)
    expect(failureLine(e)).to.match(/the database at .*db is in use by another process/)
  })

  it('a damaged store: 78, the repair named', async () => {
    const dir = await usedDir()
    const db = join(dir, 'Rubix', 'TestNet', 'db')
    const manifest = join(db, readdirSync(db).filter((f) => f.startsWith('MANIFEST-')).sort().at(-1)!)
    truncateSync(manifest, Math.floor(statSync(manifest).size / 2))
    const e = await failedStart(node({ dir }))
    expect(e.exitCode).to.equal(78)
    expect(failureLine(e)).to.match(/start failed \(exit 78: starting again will not help until this is fixed\): the database at .* is damaged .*rbtnode repair -p/)
  })

  it('a wrong config key (-k): 78, the config file named', async () => {
    const dir = await usedDir()
    const e = await failedStart(node({ dir, extraArgs: ['-testNet', '-k', 'not-the-key'] }))
    expect(e.exitCode).to.equal(78)
    expect(failureLine(e)).to.match(/api_config\.json: cannot decrypt the config file: wrong -k key or damaged file/)
  })

  it('a config file that is not one: 78', async () => {
    const dir = tempDir()
    writeFileSync(join(dir, 'api_config.json'), 'not json at all')
    const e = await failedStart(node({ dir }))
    expect(e.exitCode).to.equal(78)
    expect(failureLine(e)).to.match(/api_config\.json: config file is not valid JSON/)
  })

  it('an empty peer key (cut short by a crash): 78, what to do named', async () => {
    const dir = await usedDir()
    writeFileSync(join(dir, 'Rubix', 'TestNet', 'peer.key'), '')
    const e = await failedStart(node({ dir }))
    expect(e.exitCode).to.equal(78)
    expect(failureLine(e)).to.match(/peer key file .*peer\.key is empty .*restore it from a backup/)
  })

  it('a data dir that cannot be made (a file in the way): 78, the system error named', async () => {
    const file = join(tempDir(), 'a-file')
    writeFileSync(file, 'x')
    const e = await failedStart(node({ dir: join(file, 'node') }))
    expect(e.exitCode).to.equal(78)
    expect(failureLine(e)).to.match(/ENOTDIR|EEXIST/)
  })

  it('a full disk: 75, the full disk named', async function () {
    requireTmpfs(this)
    const fs = Tmpfs.mount(16)
    try {
      const n = node({ dir: fs.dir })
      await n.start()
      await n.stop()
      fs.fill()
      const e = await failedStart(n)
      expect(e.exitCode).to.equal(75)
      expect(failureLine(e)).to.match(/ENOSPC|No space left on device|disk .* is full/i)
    } finally {
      await Promise.all(nodes.splice(0).map(async (n) => { await n.dispose() }))
      fs.dispose()
    }
  })

  it('an unforeseen error in a component\'s start: 70, with its stack', async () => {
    const e = await failedStart(node({ env: { RBTNODE_TEST_HOOKS: '1', RBTNODE_START_FAULT: 'tokens:throw' } }))
    expect(e.exitCode).to.equal(70)
    expect(failureLine(e)).to.match(/start failed \(exit 70: an unforeseen error; starting again may help\): Error: test hook: the start of tokens fails/)
    // the stack is in the line (a message is always one line: its line breaks are escaped)
    expect(failureLine(e)).to.match(/\\n\s*at /)
  })

  it('a rejection left unhandled during the start: 70, logged with its stack (not a bare trace and exit 1)', async () => {
    const e = await failedStart(node({ env: { RBTNODE_TEST_HOOKS: '1', RBTNODE_START_FAULT: 'tokens:reject' } }))
    expect(e.exitCode).to.equal(70)
    expect(failureLine(e)).to.match(/start failed \(exit 70: .*\): an unhandled rejection: Error: test hook: the start of tokens fails \(reject\)/)
  })
})
