import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { getEventListeners, getMaxListeners } from 'node:events'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import type { P2pHost } from '../../src/p2p/host.js'
import { createRpc, type BuiltinMethods, type PagedSpec, type Rpc, type RpcContext, type UnarySpec } from '../../src/p2p/rpc.js'
import { deadline, onAbort, raceAbort } from '../../src/p2p/deadline.js'
import { connect, startHosts, stopAll, waitFor } from './helpers.js'

/**
 * Abort listeners must not pile up on signals that outlive a call: the caller's own long-lived
 * signal (a node's shutdown signal handed to every call), and the rpc layer's per-channel signal
 * on the serving side. Node warns (MaxListenersExceededWarning) once a signal holds more than 10.
 */

interface Methods {
  'al.echo': UnarySpec<{ n: number, pad?: string }, { n: number }>
  'al.fail': UnarySpec<{ n: number }, never>
  'al.hang': UnarySpec<{ n: number }, never>
  'al.pages': PagedSpec<{ pages: number, failAt?: number }, { i: number }>
}

const sleep = async (ms: number): Promise<void> => { await new Promise((resolve) => setTimeout(resolve, ms)) }

/** Every AbortSignal that is given an abort listener while installed; restore() puts things back. */
function trackSignals (): { signals: () => AbortSignal[], restore: () => void } {
  const seen = new Set<WeakRef<AbortSignal>>()
  const known = new WeakSet<AbortSignal>()
  const proto = EventTarget.prototype
  const real = proto.addEventListener
  proto.addEventListener = function (this: EventTarget, type: string, ...rest: unknown[]) {
    if (type === 'abort' && this instanceof AbortSignal && !known.has(this)) {
      known.add(this)
      seen.add(new WeakRef(this))
    }
    return (real as (...a: unknown[]) => void).call(this, type, ...rest)
  } as typeof proto.addEventListener
  return {
    signals: () => [...seen].map((r) => r.deref()).filter((s): s is AbortSignal => s !== undefined),
    restore: () => { proto.addEventListener = real }
  }
}

const abortListeners = (s: AbortSignal): number => getEventListeners(s, 'abort').length

describe('p2p/abort listeners', function () {
  this.timeout(60_000)
  let a: P2pHost, b: P2pHost
  let ra: Rpc<Methods & BuiltinMethods>, rb: Rpc<Methods & BuiltinMethods>

  const handlers = {
    'al.echo': async (req: { n: number }) => { await sleep(5 + (req.n % 7)); return { n: req.n } },
    'al.fail': async (req: { n: number }): Promise<never> => { await sleep(3); throw new RbtError(ErrorCode.CONFLICT, `no ${req.n}`) },
    'al.hang': async (_req: { n: number }, ctx: RpcContext): Promise<never> => await new Promise<never>((_resolve, reject) => {
      ctx.signal.addEventListener('abort', () => { reject(ctx.signal.reason) }, { once: true })
    }),
    'al.pages': async function * (req: { pages: number, failAt?: number }) {
      for (let i = 0; i < req.pages; i++) {
        if (i === req.failAt) throw new RbtError(ErrorCode.CHAIN_INVALID, `page ${i} is bad`)
        await sleep(1)
        yield { i }
      }
    }
  }

  before(async () => {
    [a, b] = await startHosts(2)
    ra = createRpc<Methods>({ host: a, handlers })
    rb = createRpc<Methods>({ host: b, handlers })
    await ra.start(); await rb.start()
    await connect(a, b)
  })
  after(async () => { await stopAll([ra, rb, a, b]) })

  it('deadline() and raceAbort() leave a shared parent signal as they found it, however many run at once', async () => {
    const parent = new AbortController()
    const ds = Array.from({ length: 50 }, () => deadline(60_000, parent.signal))
    const races = ds.map(async (d) => await raceAbort(sleep(5), parent.signal))
    expect(abortListeners(parent.signal)).to.be.at.most(1)
    await Promise.all(races)
    for (const d of ds) d.clear()
    expect(abortListeners(parent.signal)).to.equal(0)
    // a parent abort still reaches every live child
    const live = Array.from({ length: 20 }, () => deadline(60_000, parent.signal))
    const reason = new Error('stop')
    parent.abort(reason)
    for (const d of live) { expect(d.signal.aborted).to.equal(true); expect(d.signal.reason).to.equal(reason); expect(d.timedOut()).to.equal(false) }
    for (const d of live) d.clear()
    expect(deadline(10, parent.signal).signal.aborted).to.equal(true)
  })

  it('onAbort(): one listener per signal, gone with the last callback; an unregistered callback is never called', () => {
    const ac = new AbortController()
    const called: string[] = []
    const offA = onAbort(ac.signal, () => { called.push('a'); offB() })
    const offB = onAbort(ac.signal, () => { called.push('b') })
    const offC = onAbort(ac.signal, () => { called.push('c') })
    expect(abortListeners(ac.signal)).to.equal(1)
    offC()
    offC()
    expect(abortListeners(ac.signal)).to.equal(1)
    ac.abort()
    expect(called).to.deep.equal(['a']) // b was unregistered by a while the abort was dispatched
    expect(abortListeners(ac.signal)).to.equal(0)
    offA(); offB()
    onAbort(ac.signal, () => { called.push('late') })
    expect(called).to.deep.equal(['a', 'late'])
    const other = new AbortController()
    const offs = Array.from({ length: 30 }, () => onAbort(other.signal, () => { called.push('x') }))
    for (const off of offs) off()
    expect(abortListeners(other.signal)).to.equal(0)
    other.abort()
    expect(called).to.deep.equal(['a', 'late'])
  })

  it('240 calls (unary and paged; answers, errors and timeouts; 24 at a time) leave no abort listeners behind', async () => {
    const warnings: Error[] = []
    const onWarning = (w: Error): void => { if (w.name === 'MaxListenersExceededWarning') warnings.push(w) }
    process.on('warning', onWarning)
    const tracker = trackSignals()
    const shutdown = new AbortController() // one signal for the caller's whole life, as a node would pass
    const signal = shutdown.signal
    try {
      // open the channels both ways first: what stays listening on them is the baseline
      await ra.call(b.peerId, 'al.echo', { n: -1 }, { signal })
      await rb.call(a.peerId, 'al.echo', { n: -1 }, { signal })
      await sleep(50)
      const baseline = new Map(tracker.signals().filter((s) => !s.aborted).map((s) => [s, abortListeners(s)]))
      expect(abortListeners(signal)).to.equal(0)

      const outcomes: Record<string, number> = {}
      const note = (k: string): void => { outcomes[k] = (outcomes[k] ?? 0) + 1 }
      const one = async (i: number): Promise<void> => {
        const [from, to] = i % 5 === 4 ? [rb, a.peerId] : [ra, b.peerId]
        switch (i % 8) {
          case 0: case 1: case 2:
            expect((await from.call(to, 'al.echo', { n: i }, { signal })).n).to.equal(i); note('ok'); return
          case 3:
            await from.call(to, 'al.fail', { n: i }, { signal }).then(() => expect.fail('al.fail answered'), (e: RbtError) => { expect(e.code).to.equal(ErrorCode.CONFLICT); note('error') }); return
          case 4:
            await from.call(to, 'al.hang', { n: i }, { signal, timeoutMs: 60 }).then(() => expect.fail('al.hang answered'), (e: RbtError) => { expect(e.code).to.equal(ErrorCode.TIMEOUT); note('timeout') }); return
          case 5: {
            let got = 0
            for await (const p of from.callPaged(to, 'al.pages', { pages: 6 }, { signal })) expect(p.i).to.equal(got++)
            expect(got).to.equal(6); note('paged'); return
          }
          case 6: {
            let got = 0
            try {
              for await (const p of from.callPaged(to, 'al.pages', { pages: 6, failAt: 3 }, { signal })) expect(p.i).to.equal(got++)
              expect.fail('al.pages did not fail')
            } catch (e) { expect((e as RbtError).code).to.equal(ErrorCode.CHAIN_INVALID); expect(got).to.equal(3); note('paged error') }
            return
          }
          default: {
            // a request too large for the channel takes a stream of its own; every other one stops reading early
            if (i % 16 === 7) { expect((await from.call(to, 'al.echo', { n: i, pad: 'x'.repeat(300 * 1024) }, { signal })).n).to.equal(i); note('own stream'); return }
            for await (const p of from.callPaged(to, 'al.pages', { pages: 50 }, { signal })) if (p.i === 2) break
            note('paged break')
          }
        }
      }
      const total = 240
      const width = 24
      let peak = 0
      for (let start = 0; start < total; start += width) {
        const batch = Array.from({ length: width }, async (_, k) => { await one(start + k) })
        await sleep(4)
        // signals whose owner raised the limit on purpose (libp2p does for its own) are not counted
        peak = Math.max(peak, ...tracker.signals().filter((s) => getMaxListeners(s) <= 10).map(abortListeners))
        await Promise.all(batch)
      }
      expect(Object.values(outcomes).reduce((x, y) => x + y, 0)).to.equal(total)

      // Served handlers finish (and let go) a moment after their caller has the answer. Signals
      // born during the run belong to one call each and go with it; the ones that outlive calls
      // (the caller's, each channel's) must be back where they were.
      const raised = (): string[] => [...baseline].filter(([s, n]) => !s.aborted && abortListeners(s) > n).map(([s, n]) => `${abortListeners(s)} (was ${n})`)
      await waitFor('abort listeners to go back to their baseline', () => raised().length === 0 && abortListeners(signal) === 0, 5000)
        .catch(() => { expect.fail(`long-lived signals holding more abort listeners than before the calls: ${raised().join(', ')}; the caller's signal: ${abortListeners(signal)}`) })
      expect(peak, 'most abort listeners on one signal while the calls ran').to.be.at.most(10)
      expect(warnings.map((w) => w.message)).to.deep.equal([])
    } finally {
      tracker.restore()
      process.off('warning', onWarning)
    }
  })
})
