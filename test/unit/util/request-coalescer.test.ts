import { expect } from 'chai'
import { RequestCoalescer } from '../../../src/util/request-coalescer.js'

describe('util: RequestCoalescer', () => {
  /** a coalescer whose sends are recorded; `refuse` makes batches to those destinations fail as an older peer would */
  function make (opts: { refuse?: Set<string>, fail?: Error, maxBatch?: number, now?: () => number, short?: boolean } = {}) {
    const sent: Array<{ dest: string, items: number[] }> = []
    const c = new RequestCoalescer<number, string>({
      send: async (dest, items) => {
        sent.push({ dest, items })
        if (opts.refuse?.has(dest) === true) throw Object.assign(new Error('not served'), { code: 'PROTOCOL' })
        if (opts.fail !== undefined) throw opts.fail
        const answers = items.map((i) => `${dest}:${i}`)
        return opts.short === true ? answers.slice(1) : answers
      },
      sendOne: async (dest, item) => { sent.push({ dest, items: [item] }); return `${dest}:${item}!` },
      fallback: (e) => (e as { code?: string }).code === 'PROTOCOL',
      ...(opts.maxBatch !== undefined ? { maxBatch: opts.maxBatch } : {}),
      ...(opts.now !== undefined ? { now: opts.now, fallbackMs: 1000 } : {})
    })
    return { c, sent }
  }

  it('sends what is asked of one destination in the same turn as one batch, each caller getting its own answer', async () => {
    const { c, sent } = make()
    const answers = await Promise.all([c.request('a', 1), c.request('b', 2), c.request('a', 3), c.request('a', 4)])
    expect(answers).to.deep.equal(['a:1', 'b:2!', 'a:3', 'a:4'])
    // one batch to a; b's lone request went alone
    expect(sent).to.deep.equal([{ dest: 'a', items: [1, 3, 4] }, { dest: 'b', items: [2] }])
  })

  it('requests of a later turn go in a batch of their own', async () => {
    const { c, sent } = make()
    const first = c.request('a', 1)
    await new Promise((resolve) => setImmediate(resolve))
    await Promise.all([first, c.request('a', 2), c.request('a', 3)])
    expect(sent.map((s) => s.items)).to.deep.equal([[1], [2, 3]])
  })

  it('cuts batches at maxBatch', async () => {
    const { c, sent } = make({ maxBatch: 2 })
    await Promise.all([1, 2, 3, 4, 5].map(async (i) => await c.request('a', i)))
    expect(sent.map((s) => s.items)).to.deep.equal([[1, 2], [3, 4], [5]])
  })

  it('a destination that refuses batches is asked one by one, then again in batches after fallbackMs', async () => {
    let now = 0
    const { c, sent } = make({ refuse: new Set(['old']), now: () => now })
    expect(await Promise.all([c.request('old', 1), c.request('old', 2)])).to.deep.equal(['old:1!', 'old:2!'])
    sent.length = 0
    await Promise.all([c.request('old', 3), c.request('old', 4)])
    expect(sent.map((s) => s.items), 'no batch tried while the fallback lasts').to.deep.equal([[3], [4]])
    now = 1001
    sent.length = 0
    await Promise.all([c.request('old', 5), c.request('old', 6)]).catch(() => {})
    expect(sent[0]!.items, 'a batch tried again').to.deep.equal([5, 6])
  })

  it('any other failure, or an answer of the wrong length, fails every caller of the batch', async () => {
    const { c } = make({ fail: new Error('peer gone') })
    const r = await Promise.allSettled([c.request('a', 1), c.request('a', 2)])
    expect(r.map((x) => x.status)).to.deep.equal(['rejected', 'rejected'])
    expect((r[0] as PromiseRejectedResult).reason.message).to.equal('peer gone')
    const short = make({ short: true })
    const s = await Promise.allSettled([short.c.request('a', 1), short.c.request('a', 2)])
    expect(s.map((x) => x.status)).to.deep.equal(['rejected', 'rejected'])
    expect((s[0] as PromiseRejectedResult).reason.message).to.match(/batch of 2 got 1 answers/)
  })
})
