import { expect } from 'chai'
import { AnnouncementBatcher, transferAnnouncementBatcher, type TransferAnnouncement } from '../../../../src/node/consensus/announcement-batcher.js'
import { waitFor } from '../../../helpers/wait.js'

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

  it('transfers committed within the delay are announced in one merged message; a heavy one goes alone', async () => {
    const sent: TransferAnnouncement[] = []
    const b = transferAnnouncementBatcher({ publish: async (m) => { sent.push(m) }, delayMs: 50, maxIds: 6 })
    b.add([{ spent: ['t1@1-a'], tokens: ['t1'] }])
    b.add([{ spent: ['t2@1-b'], tokens: ['t2'] }])
    b.add([{ spent: [], tokens: ['nft1'] }])
    expect(sent).to.deep.equal([])
    await waitFor(() => sent.length === 1, { timeoutMs: 2000, what: 'the merged announcement' })
    expect(sent[0]).to.deep.equal({ spent: ['t1@1-a', 't2@1-b'], tokens: ['t1', 't2', 'nft1'] })
    // 4 + 4 ids exceed 6: the first goes out when the second arrives, the second when full or at flush
    b.add([{ spent: ['a@1', 'b@1'], tokens: ['a', 'b'] }])
    b.add([{ spent: ['c@1', 'd@1'], tokens: ['c', 'd'] }])
    expect(sent[1]).to.deep.equal({ spent: ['a@1', 'b@1'], tokens: ['a', 'b'] })
    b.add([{ spent: Array.from({ length: 10 }, (_v, i) => `f${i}@1`), tokens: ['f'] }])
    expect(sent.slice(2)).to.deep.equal([{ spent: ['c@1', 'd@1'], tokens: ['c', 'd'] }, { spent: Array.from({ length: 10 }, (_v, i) => `f${i}@1`), tokens: ['f'] }])
    b.flush()
    expect(sent).to.have.length(4)
  })
})
