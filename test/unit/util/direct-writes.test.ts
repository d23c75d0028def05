import { expect } from 'chai'
import { randomBytes } from 'node:crypto'
import { constants } from 'node:fs'
import { mkdtemp, open, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { DIRECT_ALIGN, DirectWrites } from '../../../src/util/direct-writes.js'

describe('util/direct-writes', () => {
  let dir: string
  beforeEach(async () => { dir = await mkdtemp(join(tmpdir(), 'rbtnode-direct-')) })
  afterEach(async () => { await rm(dir, { recursive: true, force: true }) })

  /** A file of `size` bytes written by `fill` through a writer of `slots` slots of `slotBytes`. */
  const written = async (size: number, o: { slots: number, slotBytes: number, disabled?: boolean }, fill: (w: DirectWrites) => Promise<void>): Promise<{ bytes: Buffer, w: DirectWrites }> => {
    const path = join(dir, 'f')
    const fh = await open(path, 'w+')
    await fh.truncate(size)
    const w = await DirectWrites.open(path, fh, o)
    try {
      await fill(w)
      await fh.datasync()
    } finally {
      await w.close()
      await fh.close()
    }
    return { bytes: await readFile(path), w }
  }

  it('writes whole aligned pages around the page cache where the platform allows, and the rest the ordinary way; every byte lands at its offset', async () => {
    const page = 64 * 1024
    const src = randomBytes(5 * page + 1234)
    const { bytes, w } = await written(src.length, { slots: 4, slotBytes: page }, async (w) => {
      // out of order, a tail that is not whole pages, and one write at an unaligned offset
      await Promise.all([3, 0, 4, 2].map(async (i) => { await w.write(src.subarray(i * page, (i + 1) * page), i * page) }))
      await w.write(src.subarray(5 * page), 5 * page)
      await w.write(src.subarray(page, page + 100), page)
      await w.write(src.subarray(page + 100, 2 * page), page + 100)
    })
    expect(bytes.equals(src)).to.equal(true)
    if ((constants as { O_DIRECT?: number }).O_DIRECT !== undefined && w.direct > 0) {
      // the four whole pages, the tail and the two pieces of the unaligned page
      expect(w.direct).to.equal(4)
      expect(w.buffered).to.equal(3)
    } else {
      expect(w.buffered).to.equal(7)
    }
  })

  it('more writes at once than it has slots: the extra ones go the ordinary way, none waits and none is lost', async () => {
    const page = 16 * DIRECT_ALIGN
    const src = randomBytes(24 * page)
    const { bytes, w } = await written(src.length, { slots: 2, slotBytes: page }, async (w) => {
      await Promise.all(Array.from({ length: 24 }, async (_, i) => { await w.write(src.subarray(i * page, (i + 1) * page), i * page) }))
    })
    expect(bytes.equals(src)).to.equal(true)
    expect(w.direct + w.buffered).to.equal(24)
    expect(w.direct).to.be.at.most(24)
  })

  it('the caller\'s buffer is released as soon as it is copied into a slot (before the write ends), or once the ordinary write ended', async () => {
    const page = 4 * DIRECT_ALIGN
    const src = randomBytes(2 * page + 10)
    let releasedBeforeEnd: boolean | undefined
    const order: string[] = []
    const { bytes, w } = await written(src.length, { slots: 1, slotBytes: page }, async (w) => {
      let released = false
      const p = w.write(src.subarray(0, page), 0, () => { released = true })
      releasedBeforeEnd = released
      await p
      expect(released).to.equal(true)
      await w.write(src.subarray(page), page, () => { order.push('released') }).then(() => { order.push('written') })
    })
    expect(bytes.equals(src)).to.equal(true)
    if (w.direct > 0) expect(releasedBeforeEnd, 'copied into its slot at once').to.equal(true)
    // the tail went the ordinary way: released once written, before its promise settles
    expect(order).to.deep.equal(['released', 'written'])
  })

  it('disabled, or with no slots, every write goes the ordinary way', async () => {
    const page = DIRECT_ALIGN
    const src = randomBytes(8 * page)
    for (const o of [{ slots: 4, slotBytes: page, disabled: true }, { slots: 0, slotBytes: page }, { slots: 4, slotBytes: page + 1 }]) {
      const { bytes, w } = await written(src.length, o, async (w) => {
        for (let i = 0; i < 8; i++) await w.write(src.subarray(i * page, (i + 1) * page), i * page)
      })
      expect(bytes.equals(src)).to.equal(true)
      expect(w.direct).to.equal(0)
      expect(w.buffered).to.equal(8)
      expect(w.active).to.equal(false)
    }
  })

  it('a disk error of a direct write is the caller\'s, as an ordinary write\'s would be (the file\'s handle closed under it)', async () => {
    const path = join(dir, 'f')
    const fh = await open(path, 'w+')
    await fh.truncate(DIRECT_ALIGN * 4)
    const w = await DirectWrites.open(path, fh, { slots: 2, slotBytes: DIRECT_ALIGN })
    await fh.close()
    await w.close()
    // both handles closed: whichever way it goes, the write fails and says so
    const r = await w.write(new Uint8Array(DIRECT_ALIGN), 0).then(() => 'written', (e: NodeJS.ErrnoException) => e.code)
    expect(r).to.not.equal('written')
  })
})
