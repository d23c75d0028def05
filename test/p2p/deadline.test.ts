import '../../src/util/polyfill.js'
import { expect } from 'chai'
import { raceAbort } from '../../src/p2p/deadline.js'

describe('p2p deadline: raceAbort', () => {
  it('a signal aborted before the race leaves no unhandled rejection when the work fails later', async () => {
    // the rpc server starts a handler, then races it against the request's signal; a request whose
    // stream closed first found the signal aborted, and the handler's later failure (a service not
    // started yet) was unhandled, which ends the process: a node restarted under traffic died so
    const unhandled: unknown[] = []
    const onUnhandled = (e: unknown): void => { unhandled.push(e) }
    process.on('unhandledRejection', onUnhandled)
    try {
      const ac = new AbortController()
      ac.abort(new Error('stream closed'))
      let fail!: (e: Error) => void
      const work = new Promise<never>((_resolve, reject) => { fail = reject })
      const err = await raceAbort(work, ac.signal).then(() => undefined, (e: Error) => e)
      expect(err?.message).to.equal('stream closed')
      fail(new Error('service not started yet'))
      // unhandled rejections are reported once the microtask queue has drained after a macrotask
      await new Promise((resolve) => setImmediate(resolve))
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).to.deep.equal([])
  })

  it('settles with the work, or with the signal once it aborts', async () => {
    expect(await raceAbort(Promise.resolve(7), new AbortController().signal)).to.equal(7)
    const ac = new AbortController()
    const pending = raceAbort(new Promise<number>(() => {}), ac.signal)
    ac.abort(new Error('gone'))
    expect(await pending.then(() => 'resolved', (e: Error) => e.message)).to.equal('gone')
  })
})
