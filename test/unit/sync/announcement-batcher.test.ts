import { expect } from 'chai'
import { AnnouncementBatcher } from '../../../src/node/sync/announcement-batcher.js'
import { waitFor } from '../../helpers/wait.js'

describe('sync: batched announcements of created tokens', () => {
  it('ids added within the delay go out in one message', async () => {
    const sent: string[][] = []
    const b = new AnnouncementBatcher({ publish: async (ids) => { sent.push(ids) }, delayMs: 50 })
    b.add(['t1']); b.add(['t2', 't3']); b.add([])
    expect(sent).to.deep.equal([])
    await waitFor(() => sent.length === 1, { timeoutMs: 2000, what: 'the batch' })
    expect(sent).to.deep.equal([['t1', 't2', 't3']])
    b.add(['t4'])
    await waitFor(() => sent.length === 2, { timeoutMs: 2000, what: 'the next batch' })
    expect(sent[1]).to.deep.equal(['t4'])
  })

  it('a full message goes out at once, and flush sends the rest (shutdown)', async () => {
    const sent: string[][] = []
    const b = new AnnouncementBatcher({ publish: async (ids) => { sent.push(ids) }, delayMs: 60_000, maxIds: 3 })
    b.add(['a', 'b', 'c', 'd', 'e', 'f', 'g'])
    expect(sent).to.deep.equal([['a', 'b', 'c'], ['d', 'e', 'f']])
    b.flush()
    expect(sent).to.deep.equal([['a', 'b', 'c'], ['d', 'e', 'f'], ['g']])
    b.flush()
    expect(sent).to.have.length(3)
  })

  it('a failed publish is reported, not thrown', async () => {
    const errors: unknown[] = []
    const b = new AnnouncementBatcher({ publish: async () => { throw new Error('no peers') }, onError: (e) => { errors.push(e) } })
    b.add(['x'])
    b.flush()
    await waitFor(() => errors.length === 1, { timeoutMs: 2000, what: 'the error' })
  })
})
