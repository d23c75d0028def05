import { expect } from 'chai'
import { cpSync, mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { PendingSignature } from '../../src/api/contract/envelope.js'
import type { NodeProcess } from '../helpers/node-process.js'
import { QUORUM_PASSWORD, USER_PASSWORD, complete, createLiteDid, mintRbt, quorumNetwork, transfer, type QuorumNetwork } from '../helpers/quorum-network.js'
import { extraNode, freeMilli, holding, ledgerProblems, quorumParties, unhostedDid, waitQuorumsReachable, waitSettled, type Party } from '../helpers/transfer-checks.js'
import { waitFor } from '../helpers/wait.js'

/**
 * Transfers that stay on one node or involve a quorum's node, transfers that must fail cleanly
 * (nothing locked, balances unchanged) and double spends, on the shared 7-quorum network.
 */
describe('e2e: transfer edge cases, failures and double spends', function () {
  this.timeout(240_000)
  let net: QuorumNetwork
  let erin: Party
  let erin2: Party
  let bob: Party

  before(async () => {
    net = await quorumNetwork()
    bob = { node: net.b, did: net.bob }
    erin = { node: net.a, did: await createLiteDid(net.a.client, USER_PASSWORD) }
    erin2 = { node: net.a, did: await createLiteDid(net.a.client, USER_PASSWORD) }
    await mintRbt(net.a.client, erin.did, 3, 0, USER_PASSWORD)
  })

  const ok = async (from: Party, to: Party, amount: number | string, memo?: string): Promise<string> => {
    const out = await transfer(from.node.client, from.did, to.did, amount, USER_PASSWORD, memo)
    expect(out.status, out.message).to.equal(true)
    expect(out.message).to.match(/^Transaction [0-9a-f]{64} completed successfully$/)
    return out.txid ?? ''
  }

  it('moves RBT between two DIDs hosted on the same node, both ways', async () => {
    await ok(erin, erin2, 0.5)
    expect(await freeMilli(erin)).to.equal(2500)
    expect(await freeMilli(erin2)).to.equal(500)
    await ok(erin2, erin, 0.125)
    expect(await freeMilli(erin)).to.equal(2625)
    expect(await freeMilli(erin2)).to.equal(375)
    expect(await ledgerProblems([erin, erin2], 3000)).to.deep.equal([])
  })

  it('a DID hosted on a quorum node sends to bob and receives back', async () => {
    const q0 = net.quorums[0]
    const dave: Party = { node: q0, did: await createLiteDid(q0.client, QUORUM_PASSWORD) }
    await mintRbt(q0.client, dave.did, 1, 0, QUORUM_PASSWORD)
    await waitFor(async () => (await net.b.client.envelope('didResolve', { params: { did: dave.did } })).status, { timeoutMs: 30_000, what: 'bob\'s node to resolve dave' })
    const bob0 = await freeMilli(bob)
    const out = await transfer(q0.client, dave.did, bob.did, 0.25, QUORUM_PASSWORD)
    expect(out.status, out.message).to.equal(true)
    expect(await freeMilli(dave)).to.equal(750)
    expect(await freeMilli(bob)).to.equal(bob0 + 250)
    await ok(bob, dave, 0.25)
    expect(await freeMilli(dave)).to.equal(1000)
    expect(await freeMilli(bob)).to.equal(bob0)
    // the quorum DID on the same node kept its own books straight
    await waitSettled([dave, bob], new Map([[dave.did, 1000]]), { quorums: quorumParties(net) })
  })

  it('refuses a too large amount, 4 decimals and an unknown receiver without locking anything', async () => {
    const before = await holding(erin)
    const big = await transfer(net.a.client, erin.did, bob.did, 100, USER_PASSWORD)
    expect(big.status).to.equal(false)
    expect(big.message).to.match(/insufficient balance: 2\.625 RBT free, 100(\.000)? RBT needed/)
    for (const amount of [0.0001, '1.2345', 1.2345]) {
      const r = await transfer(net.a.client, erin.did, bob.did, amount, USER_PASSWORD)
      expect(r.status, `amount ${amount}`).to.equal(false)
      expect(r.message).to.match(/more than 3 decimal places/)
    }
    const nobody = unhostedDid()
    const lost = await transfer(net.a.client, erin.did, nobody, 0.5, USER_PASSWORD)
    expect(lost.status).to.equal(false)
    expect(lost.message).to.match(/could not be resolved|not hosted/)
    const after = await holding(erin)
    expect(after.free).to.equal(before.free)
    expect(after.locked).to.equal(0)
    expect(after.tokens.map((t) => `${t.token_id}:${t.token_status}`).sort()).to.deep.equal(before.tokens.map((t) => `${t.token_id}:${t.token_status}`).sort())
  })

  it('a wrong password answers 401 and the same request then completes with the right one', async () => {
    const bob0 = await freeMilli(bob)
    const first = await net.a.client.envelope('txInitiate', { body: { initiator: erin.did, owner: bob.did, tokens: { rbt: 0.125 }, memo: 'wrong password first' } })
    expect(first.status, first.message).to.equal(true)
    const id = (first.result as PendingSignature).id
    expect(id).to.be.a('string')
    const wrong = await net.a.client.envelope('signatureComplete', { body: { id, password: 'not-the-password' } })
    expect(wrong.httpStatus).to.equal(401)
    expect(wrong.status).to.equal(false)
    // nothing was locked meanwhile
    expect((await holding(erin)).locked).to.equal(0)
    const done = await complete(net.a.client, first, USER_PASSWORD)
    expect(done.status, done.message).to.equal(true)
    expect(done.message).to.match(/completed successfully/)
    expect(await freeMilli(erin)).to.equal(2500)
    expect(await freeMilli(bob)).to.equal(bob0 + 125)
  })

  it('fails cleanly with 3 of 7 quorums down and succeeds with 2 down', async function () {
    this.timeout(180_000)
    const down = net.quorums.slice(4)
    const downDids = net.quorumDids.slice(4)
    try {
      await Promise.all(down.map(async (q) => { await q.stop() }))
      const erin0 = await holding(erin)
      const bob0 = await freeMilli(bob)
      const r = await transfer(net.a.client, erin.did, bob.did, 0.5, USER_PASSWORD)
      expect(r.status).to.equal(false)
      // refused by the votes (fewer than 5 of 7 quorums), or before them by the claim (3 of the
      // network's 9 nodes down: fewer than the 7 of 9 arbiters a claim needs)
      expect(r.message).to.match(/consensus failed: [0-4] of 7 quorums agreed, 5 needed|CLAIM_UNREACHABLE/)
      expect(r.message).to.match(/unreachable/i)
      const after = await holding(erin)
      expect(after.locked).to.equal(0)
      expect(after.free).to.equal(erin0.free)
      const statuses = (h: typeof after): string[] => h.tokens.map((t) => `${t.token_id}:${t.token_status}`).sort()
      expect(statuses(after)).to.deep.equal(statuses(erin0))
      expect(await freeMilli(bob)).to.equal(bob0)
      // the quorums that voted yes released their pledges
      await waitSettled([erin, bob], new Map([[erin.did, erin0.free]]), { quorums: quorumParties(net).slice(0, 4), what: 'the yes-voters to release' })

      await down[0].start()
      await waitQuorumsReachable([net.a, net.b], [downDids[0]])
      // 7 of the 9 nodes up is exactly the 7 arbiters a claim needs: a peer that left the shared
      // network a moment ago still counts (down) for the forget time, and the refusal says to retry
      // Only a refusal is tried again. An answer naming its transaction (the quorums agreed but too
      // few could sign yet: the signer's claim found short, say) is not one: its tokens stay locked
      // and the node finishes it, so a new transfer would pay twice. That one is followed to its end.
      const refusedForNow = (o: typeof out): boolean => !o.status && o.txid === undefined && /CLAIM_UNREACHABLE/.test(o.message)
      let out = await transfer(erin.node.client, erin.did, bob.did, 0.5, USER_PASSWORD)
      for (let i = 0; i < 30 && refusedForNow(out); i++) {
        await new Promise((resolve) => setTimeout(resolve, 1000))
        out = await transfer(erin.node.client, erin.did, bob.did, 0.5, USER_PASSWORD)
      }
      if (!out.status && out.txid !== undefined) {
        expect(out.message).to.match(/retried automatically|retried in the background/)
        const txid = out.txid
        await waitFor(async () => (await erin.node.client.call('txGet', { params: { tx_id: txid } })).result?.status === 'committed',
          { timeoutMs: 90_000, what: `the pending transfer ${txid} to complete` })
      } else expect(out.status, out.message).to.equal(true)
      expect(await freeMilli(erin)).to.equal(erin0.free - 500)
      expect(await freeMilli(bob)).to.equal(bob0 + 500)
    } finally {
      await Promise.all(down.filter((q) => !q.running).map(async (q) => { await q.start() }))
    }
    await waitQuorumsReachable([net.a, net.b], downDids)
  })

  it('double spend from one node: of two transfers of the same tokens started at once, exactly one succeeds', async () => {
    // erin2 holds 0.375 RBT: two transfers of all of it
    const bob0 = await freeMilli(bob)
    const both = await Promise.all([
      transfer(net.a.client, erin2.did, bob.did, 0.375, USER_PASSWORD, 'first'),
      transfer(net.a.client, erin2.did, bob.did, 0.375, USER_PASSWORD, 'second')
    ])
    const won = both.filter((r) => r.status)
    expect(won, both.map((r) => r.message).join(' | ')).to.have.length(1)
    const lost = both.find((r) => !r.status)
    expect(lost?.message).to.match(/insufficient balance|changed while the transfer was prepared/)
    expect(await freeMilli(bob)).to.equal(bob0 + 375)
    await waitSettled([erin2, bob], new Map([[erin2.did, 0]]))
  })

  describe('double spend from a copied data dir', function () {
    let orig: NodeProcess | undefined
    let copy: NodeProcess | undefined
    let copyDir: string | undefined

    after(async () => {
      await copy?.dispose()
      if (copyDir !== undefined) rmSync(copyDir, { recursive: true, force: true })
      await orig?.dispose()
    })

    it('both copies fire the same spend at once: exactly one succeeds and bob is paid once', async function () {
      this.timeout(180_000)
      orig = await extraNode(20).start()
      await net.join(orig)
      const carol: Party = { node: orig, did: await createLiteDid(orig.client, USER_PASSWORD) }
      await mintRbt(orig.client, carol.did, 1, 0, USER_PASSWORD)
      await waitFor(async () => (await orig!.client.envelope('didResolve', { params: { did: bob.did } })).status, { timeoutMs: 30_000, what: 'the original to resolve bob' })
      await orig.stop()
      copyDir = mkdtempSync(join(tmpdir(), 'rbtnode-e2e-copy-'))
      cpSync(orig.dir, copyDir, { recursive: true })
      rmSync(join(copyDir, 'Rubix', 'TestNet', 'peer.key'))
      copy = extraNode(21, {}, copyDir)
      await Promise.all([orig.start(), copy.start()])
      expect(copy.peerId).to.not.equal(orig.peerId)
      await Promise.all([net.join(orig), net.join(copy)])
      await waitFor(async () => (await copy!.client.envelope('didResolve', { params: { did: bob.did } })).status, { timeoutMs: 30_000, what: 'the copy to resolve bob' })
      const twin: Party = { node: copy, did: carol.did }
      expect(await freeMilli(twin)).to.equal(1000)

      const bob0 = await freeMilli(bob)
      const erinBefore = await freeMilli(erin)
      const both = await Promise.all([
        transfer(orig.client, carol.did, bob.did, 1, USER_PASSWORD, 'the same spend'),
        transfer(copy.client, carol.did, bob.did, 1, USER_PASSWORD, 'the same spend')
      ])
      const won = both.filter((r) => r.status)
      expect(won, both.map((r) => r.message).join(' | ')).to.have.length(1)
      expect(both.find((r) => !r.status)?.message).to.match(/consensus failed/)
      expect(await freeMilli(bob)).to.equal(bob0 + 1000)
      // the winner's token is gone to bob; no quorum keeps anything locked
      const winner = both[0].status ? carol : twin
      const loser = both[0].status ? twin : carol
      await waitSettled([winner, bob], new Map([[winner.did, 0]]), { quorums: quorumParties(net), what: 'the winner and the quorums to settle' })
      // the loser's copy is unlocked and, having learned that the winner spent the token (the quorums'
      // refusal, the winner's announcement; the chain checked), no longer shows it: not held by two
      // DIDs, and the token is bob's alone
      await waitSettled([loser, bob], new Map([[loser.did, 0]]), { what: 'the loser to unlock and drop the spent token' })
      expect(await freeMilli(bob)).to.equal(bob0 + 1000)
      // spending it later, to someone else, is refused and pays no one
      const late = await transfer(loser.node.client, carol.did, erin.did, 1, USER_PASSWORD, 'later, from the loser')
      expect(late.status, late.message).to.equal(false)
      expect(late.message).to.match(/insufficient balance/)
      expect(await freeMilli(erin)).to.equal(erinBefore)
      expect(await freeMilli(bob)).to.equal(bob0 + 1000)
      await waitSettled([loser, bob], new Map([[loser.did, 0]]), { quorums: quorumParties(net), what: 'nothing to stay locked after the late attempt' })
    })
  })
})
