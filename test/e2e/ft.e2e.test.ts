import { expect } from 'chai'
import { rmSync } from 'node:fs'
import type { RbtClient } from '../../src/client/rbt-client.js'
import type { NodeProcess } from '../helpers/node-process.js'
import { USER_PASSWORD, complete, createLiteDid, mintRbt, quorumNetwork, rbtBalance, type QuorumNetwork } from '../helpers/quorum-network.js'
import { extraNode, quorumParties, sameNode, waitQuorumsReachable } from '../helpers/transfer-checks.js'
import { waitFor } from '../helpers/wait.js'

interface Outcome { status: boolean, message: string, txid?: string }

async function mintFt (client: RbtClient, did: string, name: string, ftCount: number, tokenCount: number, start = 0): Promise<Outcome & { result?: unknown }> {
  const first = await client.envelope('ftsMint', { body: { did, ft_name: name, ft_count: ftCount, token_count: tokenCount, ft_num_start_index: start } })
  if (!first.status) return { status: false, message: first.message }
  const done = await complete(client, first, USER_PASSWORD)
  return { status: done.status, message: done.message, result: done.result }
}

async function sendFt (client: RbtClient, from: string, to: string, name: string, creator: string, count: number, memo: string, rbt?: number): Promise<Outcome> {
  const tokens = { ft: [{ ftName: name, numberOfFts: count, creatorDID: creator }], ...(rbt !== undefined ? { rbt } : {}) }
  const first = await client.envelope('txInitiate', { body: { initiator: from, owner: to, tokens, memo } })
  if (!first.status) return { status: false, message: first.message }
  const done = await complete(client, first, USER_PASSWORD)
  return { status: done.status, message: done.message, txid: (done.result as { transactionID?: string } | null)?.transactionID }
}

/** Free FTs of one kind a DID holds, as its node reports them (balance and token list must agree). */
async function ftCount (client: RbtClient, did: string, name: string, creator: string): Promise<number> {
  const bal = (await client.call('didBalancesFt', { params: { did } })).result ?? []
  const n = bal.filter((b) => b.name === name && b.creator === creator).reduce((s, b) => s + b.count, 0)
  return n
}

async function ftTokens (client: RbtClient, did: string): Promise<Array<{ token_id: string, token_status: string }>> {
  return (await client.call('tokensList', { query: { did, type: 'ft' } })).result ?? []
}

/**
 * FTs across real node processes: mint 10,000 "ABC" backed by 10 RBT, transfers both ways with
 * exact balances, a transfer larger than the holding that changes nothing, two concurrent
 * transfers of the same units (one wins), and a sender killed during an FT transfer.
 */
describe('e2e: FTs (mint, transfer through consensus, failures)', function () {
  this.timeout(600_000)
  let net: QuorumNetwork
  let ann: string
  let ben: string

  before(async () => {
    net = await quorumNetwork()
    ann = await createLiteDid(net.a.client, USER_PASSWORD)
    ben = await createLiteDid(net.b.client, USER_PASSWORD)
    await net.a.client.call('nodeAddPeers', { body: { DID: ben, PeerID: net.b.peerId, DIDType: 4 } })
    await net.b.client.call('nodeAddPeers', { body: { DID: ann, PeerID: net.a.peerId, DIDType: 4 } })
    await waitFor(async () => (await net.a.client.envelope('didResolve', { params: { did: ben } })).status && (await net.b.client.envelope('didResolve', { params: { did: ann } })).status,
      { timeoutMs: 30_000, what: 'ann and ben to resolve each other' })
    await mintRbt(net.a.client, ann, 11, 0, USER_PASSWORD)
  })

  it('mints 10,000 "ABC" backed by 10 RBT: those RBT leave the spendable balance; bad requests are refused before anything changes', async () => {
    const t0 = Date.now()
    const out = await mintFt(net.a.client, ann, 'ABC', 10_000, 10)
    const ms = Date.now() - t0
    expect(out.status, out.message).to.equal(true)
    const r = out.result as { ft_count: number, ft_value: number, backing_tokens: string[] }
    expect(r.ft_count).to.equal(10_000)
    expect(r.ft_value).to.equal(0.001)
    expect(r.backing_tokens).to.have.length(10)
    console.log(`      mint of 10,000 FTs: ${ms} ms (request to final answer)`)
    expect(await rbtBalance(net.a.client, ann)).to.equal(1)
    expect(await ftCount(net.a.client, ann, 'ABC', ann)).to.equal(10_000)
    const bal = (await net.a.client.call('didBalancesFt', { params: { did: ann } })).result ?? []
    expect(bal).to.deep.equal([{ name: 'ABC', creator: ann, count: 10_000, value: 10 }])
    const list = (await net.a.client.call('ftsList')).result ?? []
    const abc = list.find((f) => f.ft_name === 'ABC' && f.creator_did === ann)
    expect(abc).to.deep.include({ ft_count: 10_000, ft_value: 0.001 })
    expect(abc?.holders).to.deep.equal([{ did: ann, count: 10_000 }])
    const mintTx = ((await net.a.client.call('txByDid', { params: { did: ann, token_type: 'ft' } })).result ?? []).filter((t) => t.transaction_type === 'mint')
    expect(mintTx).to.have.length(1)

    const refusals: Array<[string, number, number, RegExp]> = [
      ['XYZ', 100, 5, /insufficient balance: 1 Free RBT, 5 RBT needed/],
      ['XYZ', 0, 1, /ft_count must be a whole number greater than 0/],
      ['XYZ', 3, 1, /does not divide 1 RBT into equal FTs/],
      ['XYZ', 2000, 1, /at most 1000 for 1 RBT/],
      ['ABC', 10, 1, /FT name "ABC" is already used/]
    ]
    for (const [name, count, tokens, msg] of refusals) {
      const bad = await mintFt(net.a.client, ann, name, count, tokens)
      expect(bad.status, `${name} ${count}/${tokens}`).to.equal(false)
      expect(bad.message).to.match(msg)
    }
    expect(await rbtBalance(net.a.client, ann)).to.equal(1)
    expect(await ftCount(net.a.client, ann, 'ABC', ann)).to.equal(10_000)
  })

  it('A→B 300, B→A 300, A→B 1,000: exact FT balances on both nodes, transactions queryable as ft', async () => {
    const steps: Array<[RbtClient, string, string, number, number, number]> = [
      [net.a.client, ann, ben, 300, 9_700, 300],
      [net.b.client, ben, ann, 300, 10_000, 0],
      [net.a.client, ann, ben, 1_000, 9_000, 1_000]
    ]
    for (const [client, from, to, count, annWant, benWant] of steps) {
      const t0 = Date.now()
      const out = await sendFt(client, from, to, 'ABC', ann, count, `ft ${count}`).catch((e) => ({ status: false, message: String(e) }))
      // a failure reports the end of both user nodes' logs
      const prepares = (): string => net.quorums.map((q, i) => `q${i}: ${q.logs.split('\n').filter((l) => /prepare|ERROR|WARN/.test(l)).slice(-6).join('\n')}`).join('\n')
      expect(out.status, `${out.message}\n--- A ---\n${net.a.logs.slice(-3000)}\n--- B ---\n${net.b.logs.slice(-3000)}\n--- quorums ---\n${prepares()}`).to.equal(true)
      console.log(`      transfer of ${count} FTs: ${Date.now() - t0} ms`)
      await waitFor(async () => await ftCount(net.a.client, ann, 'ABC', ann) === annWant && await ftCount(net.b.client, ben, 'ABC', ann) === benWant,
        { timeoutMs: 60_000, what: `balances ${annWant}/${benWant}` })
    }
    const benTokens = (await ftTokens(net.b.client, ben)).filter((t) => t.token_status === 'Free')
    expect(benTokens).to.have.length(1_000)
    const annFree = new Set((await ftTokens(net.a.client, ann)).filter((t) => t.token_status === 'Free').map((t) => t.token_id))
    expect(annFree.size).to.equal(9_000)
    for (const t of benTokens) expect(annFree.has(t.token_id), `${t.token_id} held twice`).to.equal(false)
    expect(await rbtBalance(net.a.client, ann)).to.equal(1)
    const annTx = (await net.a.client.call('txByDid', { params: { did: ann, token_type: 'ft' } })).result ?? []
    expect(annTx.filter((t) => t.transaction_type !== 'mint').map((t) => t.amount).sort((x, y) => x - y)).to.deep.equal([0.3, 0.3, 1])
    const benTx = (await net.b.client.call('txByDid', { params: { did: ben, token_type: 'ft' } })).result ?? []
    expect(benTx).to.have.length(3)
    expect(benTx.every((t) => t.token_type === 'ft' && t.status === 'committed')).to.equal(true)
    // nothing of this showed up as RBT
    expect(((await net.b.client.call('txByDid', { params: { did: ben, token_type: 'rbt' } })).result ?? [])).to.have.length(0)
  })

  it('A→B 100,000 fails cleanly and changes nothing', async () => {
    const out = await sendFt(net.a.client, ann, ben, 'ABC', ann, 100_000, 'too many')
    expect(out.status).to.equal(false)
    expect(out.message).to.match(/insufficient FT balance: 9000 free "ABC" FTs/)
    expect(await ftCount(net.a.client, ann, 'ABC', ann)).to.equal(9_000)
    expect(await ftCount(net.b.client, ben, 'ABC', ann)).to.equal(1_000)
    expect((await ftTokens(net.a.client, ann)).filter((t) => t.token_status === 'Locked')).to.have.length(0)
    expect(await rbtBalance(net.a.client, ann)).to.equal(1)
  })

  it('two concurrent transfers of the same FT units: one wins, nothing is lost or doubled', async () => {
    const both = await Promise.all([
      sendFt(net.b.client, ben, ann, 'ABC', ann, 600, 'race 1'),
      sendFt(net.b.client, ben, ann, 'ABC', ann, 600, 'race 2')
    ])
    expect(both.filter((o) => o.status), both.map((o) => o.message).join(' | ')).to.have.length(1)
    expect(both.find((o) => !o.status)?.message).to.match(/insufficient FT balance|changed while|conflict/i)
    await waitFor(async () => await ftCount(net.b.client, ben, 'ABC', ann) === 400 && await ftCount(net.a.client, ann, 'ABC', ann) === 9_600,
      { timeoutMs: 60_000, what: 'one transfer of 600 to land' })
    expect((await ftTokens(net.b.client, ben)).filter((t) => t.token_status === 'Locked')).to.have.length(0)
  })

  describe('crash of the sender during an FT transfer', () => {
    let sender: NodeProcess
    let cal: string
    after(async () => {
      if (sender !== undefined) { await sender.dispose(); rmSync(sender.dir, { recursive: true, force: true }) }
    })
    before(async () => {
      sender = await extraNode(33).start()
      await net.join(sender)
      cal = await createLiteDid(sender.client, USER_PASSWORD)
      await mintRbt(sender.client, cal, 3, 0, USER_PASSWORD)
      const m = await mintFt(sender.client, cal, 'XYZ', 100, 1)
      expect(m.status, m.message).to.equal(true)
      await sender.client.call('nodeAddPeers', { body: { DID: ben, PeerID: net.b.peerId, DIDType: 4 } })
      await waitFor(async () => (await sender.client.envelope('didResolve', { params: { did: ben } })).status, { timeoutMs: 30_000, what: 'the sender to resolve ben' })
    })

    const cases: Array<{ step: string, commits: boolean, count: number }> = [
      { step: 'voted', commits: false, count: 10 },
      { step: 'committing', commits: true, count: 20 }
    ]
    for (const { step, commits, count } of cases) {
      it(`killed after '${step}': after the restart every unit has exactly one owner (${commits ? 'moved' : 'stayed'})`, async () => {
        const c0 = await ftCount(sender.client, cal, 'XYZ', cal)
        const b0 = await ftCount(net.b.client, ben, 'XYZ', cal)
        await sender.stop()
        const armed = await sameNode(sender, { RBTNODE_FAULT: step }).start()
        sender = armed
        await waitQuorumsReachable([armed], net.quorumDids)
        const out = sendFt(armed.client, cal, ben, 'XYZ', cal, count, `ft crash at ${step}`).catch((e) => ({ status: false, message: (e as Error).message }))
        await waitFor(() => !armed.running, { timeoutMs: 180_000, what: `the sender to die at ${step}` })
        expect(armed.logs).to.include(`fault hook: killed at ${step}`)
        expect((await out).status).to.equal(false)
        sender = await sameNode(armed).start()
        const moved = commits ? count : 0
        await waitFor(async () => {
          const mine = await ftTokens(sender.client, cal)
          return mine.every((t) => t.token_status !== 'Locked') &&
            await ftCount(sender.client, cal, 'XYZ', cal) === c0 - moved && await ftCount(net.b.client, ben, 'XYZ', cal) === b0 + moved
        }, { timeoutMs: 180_000, what: `recovery after '${step}'` })
        // no unit lost or duplicated: the Free units on both sides are disjoint and add up to the supply
        const calFree = (await ftTokens(sender.client, cal)).filter((t) => t.token_status === 'Free').map((t) => t.token_id)
        const benFree = (await ftTokens(net.b.client, ben)).filter((t) => t.token_status === 'Free').map((t) => t.token_id)
        const xyz = new Set(calFree)
        const both = benFree.filter((id) => xyz.has(id))
        expect(both, 'units held on both sides').to.deep.equal([])
        expect(calFree.length + (await ftCount(net.b.client, ben, 'XYZ', cal))).to.equal(100)
        // and the quorums let go of their pledges' locks
        await waitFor(async () => {
          for (const q of quorumParties(net)) {
            const r = (await q.node.client.call('didBalancesRbt', { params: { did: q.did } })).result as unknown as { locked: number } | Array<{ locked: number }>
            if ((Array.isArray(r) ? r[0].locked : r.locked) !== 0) return false
          }
          return true
        }, { timeoutMs: 60_000, what: 'no quorum RBT locked' })
      })
    }
  })
})
