import { expect } from 'chai'
import { RetryQueue } from '../../../src/util/retry-queue.js'

/** Lets the sends started by `due()` settle. */
const settle = async (): Promise<void> => { for (let i = 0; i < 5; i++) await Promise.resolve() }

describe('util: retry queue', () => {
  it('sends an entry again once its interval has passed, and drops it when a send resolves', async () => {
    let now = 0
    let failing = true
    const sent: string[] = []
    const q = new RetryQueue<string>(async (x) => { sent.push(x); if (failing) throw new Error('unreachable') }, { everyMs: 100, forMs: 10_000, max: 8, now: () => now })
    q.add('k', 'release')
    q.due()
    expect(sent, 'not before its interval').to.deep.equal([])
    now = 100
    q.due()
    await settle()
    expect(sent).to.deep.equal(['release'])
    q.due()
    await settle()
    expect(sent, 'a failed send waits its interval again').to.have.length(1)
    now = 200
    failing = false
    q.due()
    await settle()
    expect(sent).to.have.length(2)
    expect(q.size, 'delivered: dropped').to.equal(0)
    now = 300
    q.due()
    await settle()
    expect(sent).to.have.length(2)
  })

  it('never has two sends of one entry in flight, and gives an entry up forMs after it was added', async () => {
    let now = 0
    let calls = 0
    let fail: (() => void) | undefined
    const q = new RetryQueue<number>(async () => { calls++; await new Promise<void>((resolve, reject) => { fail = () => { reject(new Error('timed out')) } }) }, { everyMs: 10, forMs: 100, max: 8, now: () => now })
    q.add('k', 1)
    now = 10
    q.due()
    now = 50
    q.due()
    expect(calls, 'one send in flight').to.equal(1)
    now = 120
    fail!()
    await settle()
    expect(q.size, 'past forMs when its send failed: given up').to.equal(0)
    q.due()
    expect(calls).to.equal(1)
  })

  it('keeps at most max entries, dropping the oldest; a key added again keeps its first time', async () => {
    let now = 0
    const sent: number[] = []
    const q = new RetryQueue<number>(async (x) => { sent.push(x); throw new Error('no') }, { everyMs: 10, forMs: 100, max: 3, now: () => now })
    for (const [i, k] of ['a', 'b', 'c', 'd'].entries()) q.add(k, i)
    expect(q.size).to.equal(3)
    now = 95
    q.add('b', 9)
    now = 100
    q.due()
    await settle()
    expect(sent, 'a dropped, b given up at forMs after its first add').to.deep.equal([])
    expect(q.size).to.equal(0)
  })

  it('a send that throws at once counts as a failed send', async () => {
    let now = 0
    const q = new RetryQueue<number>((() => { throw new Error('the rpc layer is stopped') }) as unknown as (x: number) => Promise<void>, { everyMs: 10, forMs: 100, max: 3, now: () => now })
    q.add('k', 1)
    now = 10
    expect(() => { q.due() }).to.not.throw()
    await settle()
    expect(q.size).to.equal(1)
  })
})

describe('util: retry queue, sends in flight', () => {
  it('starts at most inFlight sends at once over all entries; the others wait for a later due()', async () => {
    let now = 0
    const pending: Array<() => void> = []
    const q = new RetryQueue<number>(async () => { await new Promise<void>((resolve, reject) => { pending.push(() => { reject(new Error('timed out')) }) }) }, { everyMs: 10, forMs: 1000, max: 100, inFlight: 3, now: () => now })
    for (let i = 0; i < 10; i++) q.add(`k${i}`, i)
    now = 10
    q.due()
    expect(pending).to.have.length(3)
    q.due()
    expect(pending, 'none more while three are in flight').to.have.length(3)
    for (const f of pending.splice(0)) f()
    await settle()
    q.due()
    expect(pending, 'the next three').to.have.length(3)
  })
})

describe('util: retry queue, draining', () => {
  it('a send that goes through starts the next one due: 400 entries lost to a 60 s cut all arrive before forMs at one due() per 5 s', async () => {
    let now = 0
    let cut = true
    const delivered = new Set<string>()
    const q = new RetryQueue<string>(async (k) => { if (cut) throw new Error('unreachable'); delivered.add(k) }, { everyMs: 3_000, forMs: 120_000, max: 4096, now: () => now })
    for (let i = 0; i < 400; i++) q.add(`k${i}`, `k${i}`)
    for (now = 5_000; now <= 125_000; now += 5_000) { if (now >= 60_000) cut = false; q.due(); await settle(); await settle() }
    expect(delivered.size).to.equal(400)
  })

  it('drops an entry whose send is refused for a reason that lasts', async () => {
    let now = 0
    let calls = 0
    const q = new RetryQueue<number>(async () => { calls++; throw new Error('signature does not verify') }, { everyMs: 10, forMs: 1000, max: 8, now: () => now, retryable: (e) => !String((e as Error).message).includes('signature') })
    q.add('k', 1)
    now = 10
    q.due()
    await settle()
    expect(q.size).to.equal(0)
    now = 30
    q.due()
    expect(calls).to.equal(1)
  })
})
