import { expect } from 'chai'
import { createOperatorApi } from '../../../../src/node/consensus/operator-api.js'
import { consensusLedger } from '../../../../src/node/consensus/ledger-adapter.js'
import { QuorumService } from '../../../../src/consensus/quorum.js'
import { TransferSender } from '../../../../src/consensus/sender.js'
import type { ConsensusService } from '../../../../src/node/consensus/consensus-service.js'
import type { SignatureVerifier } from '../../../../src/tokenchain/validate.js'
import { tokenEnv, ringSigner, type TokenEnv } from '../../tokens/helpers.js'
import { pledgeIndexKeys, type PledgeRecord } from '../../../../src/consensus/records.js'
import { ClaimTable } from '../../../../src/consensus/claims.js'
import { formatBlockId, peekBlockEnvelope } from '../../../../src/tokenchain/block.js'
import { tokenStateHash } from '../../../../src/tokenchain/token-id.js'
import { memoryClaimStore } from '../../consensus/harness.js'
import { DoubleSpends } from '../../../../src/consensus/double-spends.js'
import { CertificateEvidence } from '../../../../src/consensus/certificate-evidence.js'
import type { PeerGrant } from '../../../../src/consensus/claim-proofs.js'
import { silentLogger } from '../../../../src/util/logger.js'

describe('node: operator API over the real token store', function () {
  this.timeout(30_000)
  let env: TokenEnv
  let did: string
  let ids: string[]
  beforeEach(async () => {
    env = await tokenEnv()
    did = env.ring.newDid()
    ids = (await env.service.mintLocalRbt({ did, count: 3, startIndex: 0 }, ringSigner(env.ring, did))).token_ids
  })
  afterEach(async () => { await env.close() })

  const api = (verifier: SignatureVerifier = env.ring.verifier): ReturnType<typeof createOperatorApi> => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const unused = undefined as never
    const cs = {
      sender: new TransferSender({ ledger, transport: unused, selfPeer: 'self' }),
      quorum: new QuorumService({ ledger, verifier, signerFor: () => undefined }),
      doubleSpends: new DoubleSpends({ ledger, log: silentLogger, clock: { now: () => Date.now() } })
    } as unknown as ConsensusService
    return createOperatorApi({ consensus: () => cs, repos: env.repos, localDids: async () => [did], ledger: () => ledger, verifier, didRecord: async () => undefined, twoStep: unused })
  }

  it('double-spends: the proofs kept in the store, newest first, of one token when asked; the same pair is kept once', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const ds = new DoubleSpends({ ledger, log: silentLogger, clock: { now: () => 1_700_000_000_000 } })
    const m = (txid: string): { txid: string, blockId: string, quorum: string, sig: string } => ({ txid, blockId: `1-${'ab'.repeat(32)}`, quorum: 'bafybmiq', sig: 'sig' })
    const base = { tokenId: ids[0]!, state: `${ids[0]!}@0-x`, stateHash: tokenStateHash(ids[0]!, '0-x'), kind: 'markers' as const, seenBy: 'markers' as const }
    await ds.flag({ ...base, spenders: ['t1', 't2'], markers: [m('t1'), m('t2')] })
    await ds.flag({ ...base, spenders: ['t2', 't1'], markers: [m('t2'), m('t1')] })
    await ds.flag({ ...base, tokenId: ids[1]!, spenders: ['t3', 't4'], markers: [m('t3'), m('t4')] })
    const all = await api().doubleSpends({})
    expect(all).to.have.length(2)
    const one = await api().doubleSpends({ token: ids[0]! })
    expect(one).to.have.length(1)
    expect(one[0]).to.deep.include({ token: ids[0]!, evidence: 'markers', seen_by: 'markers', seen_at: new Date(1_700_000_000_000).toISOString() })
    expect(one[0]!.spent_by).to.deep.equal(['t1', 't2'])
    expect(one[0]!.markers!.map((x) => x.txid)).to.deep.equal(['t1', 't2'])
  })

  it('double-spends: two certificates of one state are listed with both sides\' grants, the arbiters that granted both and those distrusted, kept in the node\'s store across a restart', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const S = 'c'.repeat(64)
    const g = (peer: string, txid: string, sig: string): PeerGrant => ({ peer, sig, txid, quorum: 'bafybmiq', nonce: '0'.repeat(32), forTx: txid, states: [S] })
    const watch = new CertificateEvidence({ ledger, check: async (x) => x.sig === 'final' ? 'final' : x.sig === 'good' ? 'valid' : undefined, log: silentLogger, clock: { now: () => 1_700_000_000_000 } })
    watch.observe('receiver', [{ stateHash: S, txid: 't1', grants: [g('p1', 't1', 'final'), g('p2', 't1', 'good')] }])
    watch.observe('receiver', [{ stateHash: S, txid: 't2', grants: [g('p1', 't2', 'final'), g('p2', 't2', 'good'), g('p3', 't2', 'good')] }])
    await watch.settled()
    const [item] = await api().doubleSpends({})
    expect(item).to.deep.include({ token: '', state: S, state_hash: S, evidence: 'certificates', seen_by: 'receiver', granted_twice: ['p1', 'p2'], distrusted: ['p1'] })
    expect(item!.certificates!.map((c) => [c.txid, c.arbiters])).to.deep.equal([['t1', ['p1', 'p2']], ['t2', ['p1', 'p2', 'p3']]])
    expect(item!.certificates![0].grants.find((x) => x.peer === 'p1')).to.deep.include({ sig: 'final', final: true })
    const again = new CertificateEvidence({ ledger: consensusLedger(env.store, env.ledger, env.repos), check: async () => undefined, log: silentLogger, clock: { now: () => 0 } })
    await again.load()
    expect(again.distrusted('p1')).to.equal(true)
    expect(again.distrusted('p2')).to.equal(false)
    // distrusted-arbiters: the arbiter, what it granted twice, and its two signed grants
    const [a] = await api().distrustedArbiters()
    expect(a).to.deep.include({ peer: 'p1', state_hash: S, transactions: ['t1', 't2'], conflict: item!.id, since: new Date(1_700_000_000_000).toISOString() })
    expect(a!.grants.map((x) => [x.txid, x.final])).to.deep.equal([['t1', true], ['t2', true]])
  })

  it('validate-token-chain: every token of the DID, or one; a chain that fails names its first bad block', async () => {
    const all = await api().validateChains(did)
    expect(all).to.deep.include({ did, checked: 3, valid: 3, invalid: 0 })
    expect(all.tokens.every((t) => t.valid && t.length === 1 && t.validated_blocks === 1 && t.bad_block === null)).to.equal(true)
    // a block count of at least the chain's length is the whole chain
    expect((await api().validateChains(did, ids[1], { blockCount: 5 })).tokens[0]).to.deep.include({ valid: true, validated_blocks: 1 })
    expect((await api().validateChains(did, ids[1])).tokens.map((t) => t.token)).to.deep.equal([ids[1]])
    // a verifier that refuses the owner's signatures: the genesis block is the first bad one
    const refusing: SignatureVerifier = { verify: async () => false }
    const bad = await api(refusing).validateChains(did, ids[0])
    expect(bad).to.deep.include({ checked: 1, valid: 0, invalid: 1 })
    const b = bad.tokens[0].bad_block!
    expect(b.token).to.equal(ids[0])
    expect(b.block_number).to.equal(0)
    expect(b.block_id).to.equal((await env.repos.blocks.get(ids[0], 0))!.blockId)
    expect(b.check).to.be.a('string').and.not.equal('')
    expect(b.reason).to.match(/block 0/)
    try {
      await api().validateChains(did, 'QmUnknownTokenUnknownTokenUnknownTokenUnknownT')
      expect.fail('should refuse')
    } catch (e) { expect((e as Error).message).to.match(/does not exist/) }
  })

  it('release-all-locked-tokens reads the Locked tokens from the owner index and frees one no record explains', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const t = (await ledger.token(ids[2]))!
    await ledger.commit((w) => { w.putToken({ ...t, status: 'Locked', txid: 'f'.repeat(64), updatedAt: Date.now() }) })
    expect((await env.service.rbtBalance(did)).locked).to.equal(1)
    const r = await api().releaseLocked()
    expect(r.kept).to.deep.equal([])
    expect(r.released).to.deep.equal([{ token: ids[2], did, value: 1, transaction_id: 'f'.repeat(64), record_state: 'UNKNOWN', reason: 'no record of its transaction' }])
    expect(await env.service.rbtBalance(did)).to.deep.include({ balance: 3, locked: 0 })
    expect(await api().releaseLocked()).to.deep.equal({ released: [], kept: [] })
  })

  it('get-pledgedtoken-details lists the pledged tokens with their transaction and release time; run-unpledge releases the due ones and reports the total', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const now = Date.now()
    const pledge = async (token: string, txid: string, releaseAt: number): Promise<void> => {
      const t = (await ledger.token(token))!
      const p: PledgeRecord = { txid, quorumDid: did, tokens: [token], newBlockIds: [`${ids[0]}@1-${txid.slice(0, 8)}`], releaseAt }
      await ledger.commit((w) => {
        w.putToken({ ...t, status: 'Pledged', txid, updatedAt: now })
        w.putRecord('cs-pledges', `${did}/${txid}`, p)
        for (const k of pledgeIndexKeys(p)) w.putRecord('cs-pledge-index', k, `${did}/${txid}`)
      })
    }
    await pledge(ids[0], 'a'.repeat(64), now - 1000)
    await pledge(ids[1], 'b'.repeat(64), now + 3_600_000)
    const list = await api().pledgedTokens()
    expect(list).to.have.length(2)
    expect(list.find((p) => p.token === ids[1])).to.deep.equal({ did, token: ids[1], transaction_id: 'b'.repeat(64), token_state: [`${ids[0]}@1-bbbbbbbb`], release_at: new Date(now + 3_600_000).toISOString() })
    const r = await api().runUnpledge()
    expect(r).to.deep.equal({ released: 1, pledges_released: 1, tokens: [ids[0]], pledges_held: 1 })
    expect((await ledger.token(ids[0]))!.status).to.equal('Free')
    expect((await ledger.token(ids[1]))!.status).to.equal('Pledged')
    expect((await api().runUnpledge()).tokens).to.deep.equal([])
    expect((await api().pledgedTokens()).map((p) => p.token)).to.deep.equal([ids[1]])
  })

  it('get-by-node counts the transactions each DID hosted here sent and received', async () => {
    const counts = await api().txCounts()
    expect(counts).to.have.length(1)
    expect(counts[0].DID).to.equal(did)
    // the mint is not a transaction between parties
    expect(counts[0]).to.deep.equal({ DID: did, TxnSend: 0, TxnReceived: 0 })
  })

  it('initiate-self-transfer picks the Free RBT old enough, at most 100, and runs them through consensus as a self transfer; none due is status true', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const calls: unknown[][] = []
    const cs = { selfTransfer: async (...a: unknown[]) => { calls.push(a); return { txid: 'e'.repeat(64), blockId: '', quorums: [], delivered: true } } } as unknown as ConsensusService
    const op = createOperatorApi({
      consensus: () => cs, repos: env.repos, localDids: async () => [did], ledger: () => ledger, verifier: env.ring.verifier,
      didRecord: async (x) => x === did ? { type: 4 } : undefined,
      twoStep: { start: async (_d, _m, run) => await run((async () => ({ password: 'pw' })) as never) }
    })
    try { await op.selfTransfer(env.ring.newDid()); expect.fail('should refuse') } catch (e) { expect((e as Error).message).to.match(/does not have an access/) }
    // minted just now: nothing is 7 days old
    expect(await op.selfTransfer(did)).to.deep.equal({ status: true, message: 'No tokens present for self transfer', result: null })
    expect(calls).to.have.length(0)
    const t = (await ledger.token(ids[1]))!
    await ledger.commit((w) => { w.putToken({ ...t, status: 'Pledged', txid: 'd'.repeat(64) }) })
    const env2 = await op.selfTransfer(did, { minAgeMs: 0 })
    expect(env2.status).to.equal(true)
    expect(env2.message).to.match(/^Transfer finished successfully in [\d.]+s with trnxid e{64}$/)
    expect(env2.result).to.deep.equal({ transactionID: 'e'.repeat(64), tokens: [ids[0], ids[2]].sort(), amount: 2, remaining: 0 })
    expect(calls[0]!.slice(0, 3)).to.deep.equal([did, [ids[0], ids[2]].sort(), 2000])
  })

  it('token-claims: every state of a token known here, with the claim held on it and its evidence', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const table = new ClaimTable(memoryClaimStore(), { now: () => 1_000 })
    const chain = await ledger.chain(ids[0]!)
    const blockId = formatBlockId(0, peekBlockEnvelope(chain[0]!).hash)
    await table.claim('1'.repeat(64), [tokenStateHash(ids[0]!, blockId)], { peer: 'peerA', quorum: 'bafybmiq', nonce: 'ab'.repeat(16), sig: 'cd' })
    const op = createOperatorApi({
      consensus: () => undefined as never, repos: env.repos, localDids: async () => [did], ledger: () => ledger, verifier: env.ring.verifier, didRecord: async () => undefined, twoStep: undefined as never,
      claims: () => ({ records: async (h) => await table.records(h), markers: async (h) => h.map(() => undefined) })
    })
    const r = await op.tokenClaims(ids[0]!)
    expect(r.states.map((s) => s.state)).to.deep.equal([`${ids[0]!}@`, `${ids[0]!}@${blockId}`])
    expect(r.states[0]!.claim).to.equal(null)
    expect(r.states[1]!.claim).to.deep.equal({
      transaction_id: '1'.repeat(64), status: 'open', granted_at: new Date(1000).toISOString(), last_asked_at: null, asks: 0,
      claimants: [{ peer: 'peerA', quorum: 'bafybmiq', transaction_id: '1'.repeat(64), nonce: 'ab'.repeat(16), signature: 'cd' }]
    })
    // no claims served (the network is not running): a typed refusal
    const off = createOperatorApi({ consensus: () => undefined as never, repos: env.repos, localDids: async () => [did], ledger: () => ledger, verifier: env.ring.verifier, didRecord: async () => undefined, twoStep: undefined as never })
    await off.tokenClaims(ids[0]!).then(() => expect.fail('should refuse'), (e: Error) => { expect(e.message).to.match(/network runs/) })
  })
})
