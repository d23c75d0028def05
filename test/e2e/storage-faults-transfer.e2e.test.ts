import { expect } from 'chai'
import type { NodeProcess } from '../helpers/node-process.js'
import { USER_PASSWORD, createLiteDid, mintRbt, quorumNetwork, rbtBalance, transfer, type QuorumNetwork } from '../helpers/quorum-network.js'
import { Tmpfs, requireTmpfs } from '../helpers/tmpfs.js'
import { extraNode } from '../helpers/transfer-checks.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A receiver whose data dir is on a small tmpfs that fills up while transfers reach it: what it
 * acknowledged is still there after it is killed and restarted, and what it refused is delivered
 * once the disk has room again.
 */
describe('e2e: a receiver whose disk fills up', function () {
  this.timeout(300_000)
  let net: QuorumNetwork
  let fs: Tmpfs
  let carolNode: NodeProcess
  let carol = ''

  before(async function () {
    requireTmpfs(this)
    net = await quorumNetwork()
    fs = Tmpfs.mount(48)
    carolNode = await extraNode(33, {}, fs.dir).start()
    await net.join(carolNode)
    carol = await createLiteDid(carolNode.client, USER_PASSWORD)
    await net.a.client.call('nodeAddPeers', { body: { DID: carol, PeerID: carolNode.peerId, DIDType: 4 } })
    await carolNode.client.call('nodeAddPeers', { body: { DID: net.alice, PeerID: net.a.peerId, DIDType: 4 } })
    await waitFor(async () => (await net.a.client.envelope('didResolve', { params: { did: carol } })).status, { timeoutMs: 30_000, what: 'alice\'s node to resolve carol' })
    await mintRbt(net.a.client, net.alice, 10, 9000 + Math.floor(Math.random() * 100_000) * 10, USER_PASSWORD)
  })

  after(async () => {
    await carolNode?.dispose()
    fs?.dispose()
  })

  it('keeps every transfer it took over a restart, and takes the ones refused on the full disk once freed', async () => {
    const sent = async (memo: string): Promise<boolean> => {
      const out = await transfer(net.a.client, net.alice, carol, 1, USER_PASSWORD, memo)
      // decided transfers count: committed here, or delivered later by the sender's retries
      return out.status || out.txid !== undefined || /delivery|pending/i.test(out.message)
    }
    expect(await sent('before the disk fills')).to.equal(true)
    expect(await rbtBalance(carolNode.client, carol)).to.equal(1)

    fs.fill()
    let decided = 1
    // a small commit may still fit in the last page of the log file: send until a delivery fails
    const from = net.a.logs.length
    const refused = (): boolean => /delivery to \S+ failed/.test(net.a.logs.slice(from))
    for (let i = 0; i < 6 && !refused(); i++) {
      if (await sent(`on the full disk ${i}`)) decided++
    }
    expect(refused(), 'a delivery refused by the full disk').to.equal(true)
    // reads are still served
    expect(await rbtBalance(carolNode.client, carol)).to.be.at.most(decided)

    fs.free()
    await waitFor(async () => await rbtBalance(carolNode.client, carol) === decided, { what: `carol to hold the ${decided} RBT decided`, timeoutMs: 120_000, intervalMs: 500 })
    expect(await sent('after the disk was freed')).to.equal(true)
    decided++
    await waitFor(async () => await rbtBalance(carolNode.client, carol) === decided, { what: 'the last transfer', timeoutMs: 60_000, intervalMs: 300 })

    const logs = carolNode.logs
    await carolNode.kill()
    await carolNode.start()
    expect(await rbtBalance(carolNode.client, carol), 'carol\'s balance after a restart').to.equal(decided)
    // the store came back by itself after the refused write
    expect(logs).to.match(/storage: a write failed[^]*storage: the store was reopened/)
  })
})
