import { expect } from 'chai'
import { KeyedMutex } from '../../../src/consensus/keyed-mutex.js'
import { PledgeReleases } from '../../../src/consensus/pledge-release.js'
import { silentLogger } from '../../../src/util/logger.js'
import { MemoryLedger } from './harness.js'

describe('consensus/pledge-release: releases of a quorum\'s pledges', () => {
  const did = 'bafybmiquorumquorumquorumquorumquorumquorumquorumquorumquo'
  const token = { tokenId: 'QmToken', tokenType: 3, valueMilli: 1000, owner: did, status: 'Locked' as const, latestBlockId: '0-ab', txid: 'tx1', updatedAt: 0 }
  const make = (ledger: MemoryLedger, locks: KeyedMutex): PledgeReleases =>
    new PledgeReleases({ ledger, clock: { now: () => 1 }, log: silentLogger, locks, verifier: { verify: async () => false }, cache: new Set<string>() })

  it('takes the quorum\'s lock the votes take: a release waits for a vote of that quorum in progress', async () => {
    const ledger = new MemoryLedger()
    await ledger.commit((w) => { w.putToken(token) })
    const locks = new KeyedMutex()
    let endVote = (): void => {}
    const vote = locks.run(did, async () => { await new Promise<void>((resolve) => { endVote = resolve }) })
    let done = false
    const release = make(ledger, locks).releaseOrphanLock(token.tokenId).then((r) => { done = true; return r })
    // the release's reads and commit are promise turns: ten turns of the event loop are more than it needs
    for (let i = 0; i < 10; i++) await new Promise((resolve) => setImmediate(resolve))
    expect(done, 'released while the vote held the lock').to.equal(false)
    endVote()
    await vote
    expect(await release).to.deep.equal({ released: true, why: 'no record of its transaction' })
    expect((await ledger.token(token.tokenId))?.status).to.equal('Free')
  })

  it('keeps a token an open vote of its owner holds, and one no longer Locked', async () => {
    const ledger = new MemoryLedger()
    await ledger.commit((w) => {
      w.putToken(token)
      w.putRecord('cs-votes', `${did}/tx1`, { txid: 'tx1', quorumDid: did, state: 'RESERVED' })
    })
    const pledges = make(ledger, new KeyedMutex())
    expect(await pledges.releaseOrphanLock(token.tokenId)).to.deep.equal({ released: false, why: 'pledge of an open vote (RESERVED): the sender\'s outcome decides' })
    await ledger.commit((w) => { w.putToken({ ...token, status: 'Free' }) })
    expect(await pledges.releaseOrphanLock(token.tokenId)).to.deep.equal({ released: false, why: 'not Locked any more' })
  })
})
