import { expect } from 'chai'
import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { fileWriteError, removeLeftovers, writeFileDurable, writeFileDurableSync } from '../../../src/util/durable-write.js'
import { ErrorCode } from '../../../src/util/errors.js'
import { Tmpfs, requireTmpfs } from '../../helpers/tmpfs.js'
import { waitFor } from '../../helpers/wait.js'

const CHILD = fileURLToPath(new URL('./durable-write-child.js', import.meta.url))

describe('util: durable writes', function () {
  this.timeout(60_000)
  let dir = ''
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'rbtnode-durable-')) })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  it('replaces a file whole, with the mode asked for, and leaves no temporary file', async () => {
    const path = join(dir, 'secret')
    await writeFileDurable(path, 'one', { mode: 0o600 })
    writeFileDurableSync(path, 'two', { mode: 0o600 })
    await writeFileDurable(path, Buffer.from('three'), { mode: 0o600 })
    expect(readFileSync(path, 'utf8')).to.equal('three')
    expect(statSync(path).mode & 0o777).to.equal(0o600)
    expect(readdirSync(dir)).to.deep.equal(['secret'])
  })

  it('removes the temporary files a crash left beside a file', async () => {
    const path = join(dir, 'node.json')
    writeFileSync(join(dir, 'node.json.tmp-123-abcd'), 'half')
    writeFileSync(join(dir, 'other.tmp-1-x'), 'not ours')
    expect(await removeLeftovers(path)).to.equal(1)
    expect(readdirSync(dir).sort()).to.deep.equal(['other.tmp-1-x'])
  })

  it('keeps the old content whole when the disk is full, and says so without a path', async function () {
    requireTmpfs(this)
    const fs = Tmpfs.mount(1)
    try {
      const path = join(fs.dir, 'state.json')
      await writeFileDurable(path, JSON.stringify({ v: 1 }))
      fs.fill()
      let error: unknown
      try { await writeFileDurable(path, JSON.stringify({ v: 2, pad: 'z'.repeat(200_000) })) } catch (e) { error = e }
      expect((error as NodeJS.ErrnoException)?.code).to.equal('ENOSPC')
      expect(JSON.parse(readFileSync(path, 'utf8'))).to.deep.equal({ v: 1 })
      expect(readdirSync(fs.dir).filter((n) => n.startsWith('state.json.tmp-'))).to.deep.equal([])
      const typed = fileWriteError('the node state', error)
      expect(typed.code).to.equal(ErrorCode.INSUFFICIENT_STORAGE)
      expect(typed.message).not.to.include(fs.dir)
    } finally { fs.dispose() }
  })

  it('leaves one whole version of the file whenever the writer is killed mid-write', async () => {
    const path = join(dir, 'state.json')
    for (let kill = 0; kill < 12; kill++) {
      const child = spawn(process.execPath, [CHILD, path], { stdio: ['ignore', 'pipe', 'inherit'] })
      const exited = new Promise((resolve) => child.on('exit', resolve))
      let out = ''
      child.stdout.on('data', (d: Buffer) => { out += d.toString() })
      await waitFor(() => out.includes('ready'), { what: 'the writer to start' })
      // a varying instant inside the write loop
      await waitFor(() => existsSync(path) && Math.random() < 0.3, { what: 'a moment to kill', intervalMs: 3 + kill })
      child.kill('SIGKILL')
      await exited
      const doc = JSON.parse(readFileSync(path, 'utf8')) as { i: number, filler: string }
      expect(doc.filler.length).to.equal(64 * 1024)
      await removeLeftovers(path)
    }
  })
})
