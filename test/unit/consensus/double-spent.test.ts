import { expect } from 'chai'
import { SimNet } from './harness.js'
import { TransferSender } from '../../../src/consensus/sender.js'

describe('consensus: a quorum refusing a double spend tells the node which token states were spent', function () {
  this.timeout(60_000)

  it('a stale copy of a wallet spends a token the original spent: refused, and the node hears of the spent states (to check their chains)', async () => {
    const { net, a, b, alice, bob } = await SimNet.standard()
    const [token] = await net.mint(a, alice.did, 1)
    const copy = net.addNode('A-copy', a.ledger.clone())
    copy.dids.set(alice.did, alice)
    const heard: Array<{ states: Array<{ tokenId: string, blockId: string }>, reason: string, status: Promise<string | undefined> }> = []
    const base = copy.sender as unknown as { opts: ConstructorParameters<typeof TransferSender>[0] }
    // the node checks only tokens it holds Free: by the time it hears, the refused transfer has given them back
    const sender = new TransferSender({ ...base.opts, onDoubleSpent: (states, reason) => { heard.push({ states, reason, status: copy.ledger.token(token).then((t) => t?.status) }) } })
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'original', quorums: net.quorumDids }, alice.owner)
    expect(first.delivered).to.equal(true)
    const held = (await copy.ledger.token(token))!
    expect(held.status).to.equal('Free')
    const stale = await sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'copy', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: Error) => e)
    expect(stale?.message).to.match(/double spent \(spent by |held by transaction /)
    expect(heard).to.have.length(1)
    expect(heard[0].states).to.deep.equal([{ tokenId: token, blockId: held.latestBlockId }])
    expect(heard[0].reason).to.include(first.txid)
    expect(await heard[0].status).to.equal('Free')
    expect(b).to.not.equal(undefined)
  })

  it('the abort of the refused transfer cannot be written: the node is told only once a later abort (recovery\'s) frees the tokens', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    const [token] = await net.mint(a, alice.did, 1)
    const copy = net.addNode('A-copy', a.ledger.clone())
    copy.dids.set(alice.did, alice)
    const heard: Array<{ states: Array<{ tokenId: string, blockId: string }>, status: Promise<string | undefined> }> = []
    const base = copy.sender as unknown as { opts: ConstructorParameters<typeof TransferSender>[0] }
    const sender = new TransferSender({ ...base.opts, onDoubleSpent: (states) => { heard.push({ states, status: copy.ledger.token(token).then((t) => t?.status) }) } })
    const first = await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'original', quorums: net.quorumDids }, alice.owner)
    expect(first.delivered).to.equal(true)
    const held = (await copy.ledger.token(token))!
    // the tokens are locked; the next write, the abort's once the quorums refused, fails
    copy.fault = (step) => { if (step === 'locked') copy.ledger.failNextCommit = true }
    const stale = await sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'copy', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: Error) => e)
    copy.fault = undefined
    expect(stale?.message).to.match(/double spent \(spent by |held by transaction /)
    expect((await copy.ledger.token(token))?.status, 'the abort was not written').to.equal('Locked')
    expect(heard, 'told while the tokens are still Locked: the node would check nothing').to.have.length(0)
    await sender.recover({ staleMs: 0 })
    expect((await copy.ledger.token(token))?.status).to.equal('Free')
    expect(heard).to.have.length(1)
    expect(heard[0].states).to.deep.equal([{ tokenId: token, blockId: held.latestBlockId }])
    expect(await heard[0].status).to.equal('Free')
  })

  it('the record cannot be read back after the refusal (review): the node is told only once recovery\'s abort frees the tokens', async () => {
    const { net, a, alice, bob } = await SimNet.standard()
    const [token] = await net.mint(a, alice.did, 1)
    const copy = net.addNode('A-copy', a.ledger.clone())
    copy.dids.set(alice.did, alice)
    const heard: Array<{ status: Promise<string | undefined> }> = []
    const base = copy.sender as unknown as { opts: ConstructorParameters<typeof TransferSender>[0] }
    const sender = new TransferSender({ ...base.opts, onDoubleSpent: () => { heard.push({ status: copy.ledger.token(token).then((t) => t?.status) }) } })
    await a.sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'original', quorums: net.quorumDids }, alice.owner)
    // from the lock on, reading the outgoing record fails (the disk that refused the read)
    let unreadable = false
    const record = copy.ledger.record.bind(copy.ledger)
    copy.ledger.record = (async (collection: string, key: string) => {
      if (unreadable && collection === 'cs-outgoing') throw new Error('injected read failure')
      return await record(collection as never, key)
    }) as typeof copy.ledger.record
    copy.fault = (step) => { if (step === 'locked') unreadable = true }
    const stale = await sender.transfer({ sender: alice.did, receiver: bob.did, amountMilli: 1000, memo: 'copy', quorums: net.quorumDids }, alice.owner).then(() => undefined, (e: Error) => e)
    copy.fault = undefined
    unreadable = false
    expect(stale?.message).to.match(/double spent \(spent by |held by transaction /)
    expect((await copy.ledger.token(token))?.status).to.equal('Locked')
    expect(heard, 'told while the tokens are still Locked').to.have.length(0)
    await sender.recover({ staleMs: 0 })
    expect((await copy.ledger.token(token))?.status).to.equal('Free')
    expect(heard).to.have.length(1)
    expect(await heard[0].status).to.equal('Free')
  })
})
