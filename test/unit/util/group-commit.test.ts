import { expect } from 'chai'
import { GroupCommit } from '../../../src/util/group-commit.js'
import { PeerBuckets } from '../../../src/util/peer-buckets.js'

describe('util: group commit', () => {
  it('writes handed in while one is being made durable share the next single write; each caller settles with its batch', async () => {
    const writes: number[][] = []
    let release: () => void = () => {}
    const g = new GroupCommit<number>(async (ops) => {
      writes.push(ops)
      if (writes.length === 1) await new Promise<void>((resolve) => { release = resolve })
    })
    const first = g.add([1])
    await Promise.resolve(); await Promise.resolve()
    const later = [g.add([2]), g.add([3, 4]), g.add([5])]
    await new Promise((resolve) => setTimeout(resolve, 5))
    expect(writes).to.deep.equal([[1]])
    release()
    await Promise.all([first, ...later])
    expect(writes).to.deep.equal([[1], [2, 3, 4, 5]])
  })

  it('a failed write fails exactly the callers of its batch', async () => {
    let n = 0
    const g = new GroupCommit<number>(async () => { if (n++ === 0) throw new Error('disk full') })
    const r = await Promise.allSettled([g.add([1]), g.add([2])])
    expect(r.map((x) => x.status)).to.deep.equal(['rejected', 'rejected'])
    await g.add([3])
  })
})

describe('util: per-peer token buckets', () => {
  it('a peer spends its burst, then what it gets back each second; another peer is not affected; the map stays bounded', () => {
    let now = 0
    const b = new PeerBuckets(10, 20, 3, () => now)
    expect(b.take('a', 20)).to.equal(true)
    expect(b.take('a', 1)).to.equal(false)
    expect(b.take('b', 5)).to.equal(true)
    now += 500
    expect(b.take('a', 5)).to.equal(true)
    expect(b.take('a', 1)).to.equal(false)
    for (const k of ['c', 'd', 'e']) b.take(k)
    // 'a' was forgotten (least recently used): it starts full again
    expect(b.take('a', 20)).to.equal(true)
  })
})
