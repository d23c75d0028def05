import { setFlagsFromString } from 'node:v8'
import { runInNewContext } from 'node:vm'
import { expect } from 'chai'
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DirectorySize, HeapAfterGc, directoryBytes } from '../../../../src/node/metrics/resource-watch.js'
import { waitFor } from '../../../helpers/wait.js'

describe('resource watch (heap after GC, data directory bytes)', () => {
  let dir: string
  beforeEach(() => { dir = mkdtempSync(join(tmpdir(), 'rbtnode-rw-')) })
  afterEach(() => { rmSync(dir, { recursive: true, force: true }) })

  it('sums the bytes of every file under a directory, nested ones included', async () => {
    writeFileSync(join(dir, 'a'), Buffer.alloc(1000))
    mkdirSync(join(dir, 'db', 'deeper'), { recursive: true })
    writeFileSync(join(dir, 'db', 'b'), Buffer.alloc(234))
    writeFileSync(join(dir, 'db', 'deeper', 'c'), Buffer.alloc(5))
    expect(await directoryBytes(dir)).to.equal(1239)
    expect(await directoryBytes(join(dir, 'missing'))).to.equal(0)
  })

  it('walks the directory again only once its figure is older than the interval, never during a read', async () => {
    let now = 0
    const size = new DirectorySize(dir, 60_000, () => now)
    expect(size.read(), 'no figure before the first walk ends').to.equal(undefined)
    await waitFor(() => size.read() !== undefined, { timeoutMs: 5000, what: 'the first walk' })
    expect(size.read()).to.equal(0)
    writeFileSync(join(dir, 'x'), Buffer.alloc(100))
    now = 59_999
    size.read()
    await new Promise((resolve) => setImmediate(resolve))
    expect(size.read(), 'a fresh figure is not walked again').to.equal(0)
    now = 60_000
    expect(size.read(), 'a stale read answers the last figure at once').to.equal(0)
    await waitFor(() => size.read() === 100, { timeoutMs: 5000, what: 'the second walk' })
  })

  it('reads the heap after a full collection: forced when the process can force one, else the last one observed', async () => {
    let forced = 0
    const forcing = new HeapAfterGc(() => { forced++ })
    const v = forcing.read()
    expect(forced).to.equal(1)
    expect(v).to.be.a('number').and.greaterThan(0)
    // observed: undefined until a major collection has happened while it watched
    const observing = new HeapAfterGc(undefined)
    observing.start()
    try {
      expect(observing.read()).to.equal(undefined)
      // a major collection, made by filling the old space with objects that die
      // a full collection made on purpose: V8's heap sizing differs by Node line (24 may not
      // collect the old space for a long while on its own)
      setFlagsFromString('--expose-gc')
      const gc = runInNewContext('gc') as () => void
      await waitFor(async () => {
        let keep: unknown[] = []
        for (let i = 0; i < 200_000; i++) keep.push({ i, s: `x${i}` })
        keep = []
        gc()
        await new Promise((resolve) => setTimeout(resolve, 10))
        return observing.read() !== undefined && keep.length === 0
      }, { timeoutMs: 20_000, what: 'a major collection to be observed' })
      expect(observing.read()).to.be.greaterThan(0)
    } finally { observing.stop() }
  })
})
