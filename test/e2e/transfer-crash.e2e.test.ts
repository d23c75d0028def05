import { expect } from 'chai'
import { rmSync } from 'node:fs'
import { selectQuorums } from '../../src/consensus/quorum-selection.js'
import { selectTokens } from '../../src/tokens/select.js'
import { tokenStateHash } from '../../src/tokenchain/token-id.js'
import { peekBlockEnvelope } from '../../src/tokenchain/block.js'
import type { NodeProcess } from '../helpers/node-process.js'
import { USER_PASSWORD, createLiteDid, mintRbt, quorumNetwork, transfer, type QuorumNetwork, type TransferOutcome } from '../helpers/quorum-network.js'
import { extraNode, holding, quorumParties, sameNode, waitQuorumsReachable, waitSettled, type Party } from '../helpers/transfer-checks.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A node killed (SIGKILL, through the test fault hook) right after a durable step of a transfer,
 * then restarted without the fault: the network converges to one owner per token, nothing stays
 * locked and the RBT of the parties add up as before. Then quorum restarts.
 */
describe('e2e: crashes during a transfer, and restarts', function () {
  this.timeout(240_000)
  let net: QuorumNetwork
  let sender: NodeProcess
  let frank: Party
  let bob: Party
  const spare: NodeProcess[] = []

  before(async () => {
    net = await quorumNetwork()
    bob = { node: net.b, did: net.bob }
    sender = await extraNode(30).start()
    await net.join(sender)
    frank = { node: sender, did: await createLiteDid(sender.client, USER_PASSWORD) }
    await mintRbt(sender.client, frank.did, 3, 0, USER_PASSWORD)
    await waitFor(async () => (await sender.client.envelope('didResolve', { params: { did: bob.did } })).status, { timeoutMs: 30_000, what: 'the sender to resolve bob' })
  })

  after(async () => {
    for (const n of [sender, ...spare]) {
      if (n === undefined) continue
      await n.dispose()
      rmSync(n.dir, { recursive: true, force: true })
    }
  })

  const totalOf = async (p: Party): Promise<number> => { const h = await holding(p); return h.free + h.locked + h.pledged }
  const tryTransfer = async (node: NodeProcess, from: string, to: string, amount: number, memo: string): Promise<TransferOutcome> =>
    await transfer(node.client, from, to, amount, USER_PASSWORD, memo).catch((e) => ({ status: false, message: `request failed: ${(e as Error).message}` }))

  /** Runs `start` until `node` dies from the armed fault; checks the hook did it. */
  const dies = async (node: NodeProcess, step: string, start: () => Promise<TransferOutcome>): Promise<TransferOutcome> => {
    const out = start()
    await waitFor(() => !node.running, { timeoutMs: 60_000, what: `the node to die at ${step}` })
    expect(node.logs).to.include(`fault hook: killed at ${step}`)
    return await out
  }

  const senderCases: Array<{ step: string, commits: boolean }> = [
    { step: 'locked', commits: false },
    { step: 'voted', commits: false },
    { step: 'committing', commits: true },
    { step: 'delivered', commits: true },
    { step: 'committed', commits: true }
  ]
  for (const { step, commits } of senderCases) {
    it(`sender killed after '${step}': on restart the transfer is ${commits ? 'completed' : 'aborted'} everywhere`, async () => {
      const f0 = await totalOf(frank)
      const b0 = await totalOf(bob)
      await sender.stop()
      const armed = await sameNode(sender, { RBTNODE_FAULT: step }).start()
      sender = armed
      await waitQuorumsReachable([armed], net.quorumDids)
      const out = await dies(armed, step, async () => await tryTransfer(armed, frank.did, bob.did, 0.25, `crash at ${step}`))
      expect(out.status, 'the request cannot succeed: its node died').to.equal(false)
      sender = await sameNode(armed).start()
      frank = { node: sender, did: frank.did }
      const moved = commits ? 250 : 0
      await waitSettled([frank, bob], new Map([[frank.did, f0 - moved], [bob.did, b0 + moved]]), { quorums: quorumParties(net), what: `recovery after '${step}'` })
      // the sender's record: committed on both sides, or never recorded as a transaction
      const mine = ((await sender.client.call('txByDid', { params: { did: frank.did, token_type: 'rbt' } })).result ?? []).filter((t) => t.memo === `crash at ${step}`)
      expect(mine.map((t) => t.status)).to.deep.equal(commits ? ['committed'] : [])
      if (commits) expect(((await net.b.client.call('txGet', { params: { tx_id: mine[0].transactionID } })).result as { status: string }).status).to.equal('committed')
    })
  }

  it("the anchor quorum killed after 'quorum-signed': another yes-voter signs instead, and on restart the quorum releases its pledge", async () => {
    const f0 = await totalOf(frank)
    const b0 = await totalOf(bob)
    // spend one whole free token, so the anchor (and the first signer) is known in advance
    const free = (await holding(frank)).tokens.filter((t) => t.token_status === 'Free')
    const amountMilli = Math.max(...free.map((t) => Math.round(t.token_value * 1000)))
    const blockOf = new Map(free.map((t) => [t.token_id, t.latest_block_id as string]))
    const sel = selectTokens(free.map((t) => ({ tokenId: t.token_id as string, value: Math.round(t.token_value * 1000) })), amountMilli)
    expect(sel.split).to.equal(undefined)
    const states = sel.take.map((t) => ({ id: t.tokenId, hash: tokenStateHash(t.tokenId, blockOf.get(t.tokenId)!) })).sort((x, y) => x.hash < y.hash ? -1 : 1)
    // the anchor as the sender chooses it: among the signers of the anchor state's last block, else by the sender's ranking
    const dump = (await sender.client.call('tokenChain', { params: { token_id: states[0].id }, query: { limit: 10_000 } })).result as unknown as { blocks: Array<{ envelope: string }> }
    const last = dump.blocks[dump.blocks.length - 1]
    const signers = last === undefined ? [] : peekBlockEnvelope(new Uint8Array(Buffer.from(last.envelope, 'base64'))).signers
    const first = selectQuorums(net.quorumDids, states[0].hash, [frank.did, bob.did], signers, frank.did)[0]
    const k = net.quorumDids.indexOf(first)
    const q = net.quorums[k]
    await q.stop()
    const armed = sameNode(q, { RBTNODE_FAULT: 'quorum-signed' })
    try {
      await armed.start()
      // its quorum setup came back with it
      await waitQuorumsReachable([sender], [first])
      const out = await dies(armed, 'quorum-signed', async () => await tryTransfer(sender, frank.did, bob.did, amountMilli / 1000, 'signer crash'))
      // from the first signature request on, a transfer is never aborted: the crashed signer is replaced
      expect(out.status, out.message).to.equal(true)
    } finally {
      await armed.kill()
      await q.start()
    }
    await waitQuorumsReachable([sender, net.a, net.b], [first])
    await waitSettled([frank, bob], new Map([[frank.did, f0 - amountMilli], [bob.did, b0 + amountMilli]]), { quorums: quorumParties(net), what: 'the signer to release after its restart' })
    // and it takes part in transfers again
    const again = await tryTransfer(sender, frank.did, bob.did, 0.125, 'after the signer restart')
    expect(again.status, again.message).to.equal(true)
    await waitSettled([frank, bob], new Map([[frank.did, f0 - amountMilli - 125], [bob.did, b0 + amountMilli + 125]]), { quorums: quorumParties(net) })
  })

  it("receiver killed after 'received': delivery is retried until it answers, then the sender commits", async () => {
    const armed = await extraNode(31, { RBTNODE_FAULT: 'received' }).start()
    spare.push(armed)
    await net.join(armed)
    const gina = await createLiteDid(armed.client, USER_PASSWORD)
    await waitFor(async () => (await sender.client.envelope('didResolve', { params: { did: gina } })).status, { timeoutMs: 30_000, what: 'the sender to resolve gina' })
    const f0 = await totalOf(frank)
    const out = await dies(armed, 'received', async () => await tryTransfer(sender, frank.did, gina, 0.25, 'receiver crash'))
    // the decision was taken before delivery: not a success yet (the receiver does not hold the
    // tokens), the answer names the transaction whose delivery is pending
    expect(out.status, out.message).to.equal(false)
    expect(out.message).to.match(/has not taken them yet/)
    expect(out.txid).to.match(/^[0-9a-f]{64}$/)
    expect((await sender.client.call('txGet', { params: { tx_id: out.txid ?? '' } })).result?.status).to.equal('delivery_pending')
    const receiver = await sameNode(armed).start()
    spare.push(receiver)
    const g: Party = { node: receiver, did: gina }
    await waitSettled([frank, g], new Map([[frank.did, f0 - 250], [gina, 250]]), { quorums: quorumParties(net), what: 'redelivery after the receiver restart' })
    const tx = await sender.client.call('txGet', { params: { tx_id: out.txid ?? '' } })
    expect((tx.result as { status: string }).status).to.equal('committed')
  })

  it('quorum setups survive restarts: after restarting 3 quorums, and then all 9 fixture nodes, transfers still go through', async function () {
    this.timeout(180_000)
    const f0 = await totalOf(frank)
    const b0 = await totalOf(bob)
    const some = net.quorums.slice(1, 4)
    await Promise.all(some.map(async (q) => { await q.restart() }))
    await waitQuorumsReachable([sender], net.quorumDids)
    const one = await tryTransfer(sender, frank.did, bob.did, 0.25, 'after 3 quorum restarts')
    expect(one.status, one.message).to.equal(true)

    await Promise.all(net.all().map(async (n) => { await n.stop() }))
    await net.quorums[0].start()
    await Promise.all(net.all().slice(1).map(async (n) => { await n.start() }))
    await waitQuorumsReachable([sender, net.a, net.b], net.quorumDids, 60_000)
    const two = await tryTransfer(sender, frank.did, bob.did, 0.25, 'after restarting everything')
    expect(two.status, two.message).to.equal(true)
    await waitSettled([frank, bob], new Map([[frank.did, f0 - 500], [bob.did, b0 + 500]]), { quorums: quorumParties(net) })
  })
})
