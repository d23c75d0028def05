import { expect } from 'chai'
import { consensusLedger } from '../../../../src/node/consensus/ledger-adapter.js'
import { auditLedger } from '../../../../src/storage/token-ledger.js'
import { decodeBlockEnvelope } from '../../../../src/tokenchain/index.js'
import { buildTestTokenChain } from '../../tokenchain/fixtures.js'
import { FtService } from '../../../../src/tokens/ft-service.js'
import { blockRecordOf } from '../../../../src/tokens/token-service.js'
import { formatBlockId } from '../../../../src/tokenchain/index.js'
import { ringSigner, tokenEnv, type TokenEnv } from '../../tokens/helpers.js'

describe('node: the consensus ledger over LevelDB, choosing tokens', function () {
  this.timeout(60_000)
  let env: TokenEnv
  beforeEach(async () => { env = await tokenEnv() })
  afterEach(async () => { await env.close() })

  it('holdings list the owner index (ids and values) and tokensById reads the same records tokensOf does', async () => {
    const did = env.ring.newDid()
    const signer = ringSigner(env.ring, did)
    const minted = await env.service.mintLocalRbt({ did, count: 3, startIndex: 0 }, signer)
    await env.service.splitToken(minted.token_ids[0]!, 250, signer)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const full = await ledger.tokensOf(did, 'Free')
    const held = await ledger.holdings(did, 'Free')
    expect(held).to.deep.equal(full.map((t) => ({ tokenId: t.tokenId, valueMilli: t.valueMilli })))
    expect(held.map((h) => h.valueMilli).sort((a, b) => a - b)).to.deep.equal([250, 750, 1000, 1000])
    const picked = [held[2]!.tokenId, 'QmUnknown', held[0]!.tokenId]
    const got = await ledger.tokensById(picked)
    expect(got[0]).to.deep.equal(full[2])
    expect(got[1]).to.equal(undefined)
    expect(got[2]).to.deep.equal(full[0])
    // the burnt parent is not Free, so it is not held
    expect(held.some((h) => h.tokenId === minted.token_ids[0])).to.equal(false)
  })

  it('tipSigners names who signed each token\'s last stored block, in the order asked, read in one read', async () => {
    const chain = buildTestTokenChain(env.ring, 2, 5)
    const now = Date.now()
    const last = decodeBlockEnvelope(chain.envelopes[2]!)
    await env.ledger.commit({
      tokens: [{ record: { tokenId: chain.tokenId, kind: 'rbt', tokenType: 3, value: 1000, owner: last.content.owner, status: 'Free', latestBlockId: formatBlockId(2, last.hash), latestBlockNumber: 2, createdAt: now, updatedAt: now } }],
      blocks: chain.envelopes.map((e) => ({ record: blockRecordOf(chain.tokenId, decodeBlockEnvelope(e), now), envelope: e })),
      contents: { [chain.tokenId]: chain.tokenContent }
    })
    const did = env.ring.newDid()
    const [minted] = (await env.service.mintLocalRbt({ did, count: 1, startIndex: 0 }, ringSigner(env.ring, did))).token_ids
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const got = await ledger.tipSigners([chain.tokenId, minted!, 'QmUnknown', chain.tokenId])
    expect(got[0]).to.have.members(Object.keys(last.signatures))
    expect(got.slice(1, 3)).to.deep.equal([undefined, undefined])
    expect(got[3]).to.deep.equal(got[0])
  })

  it('a commit writes a token\'s content only when it is not stored already (a token\'s content never changes)', async () => {
    const did = env.ring.newDid()
    const minted = await env.service.mintLocalRbt({ did, count: 2, startIndex: 0 }, ringSigner(env.ring, did))
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const [t0, t1] = await ledger.tokensById(minted.token_ids)
    expect(t0!.content).to.be.a('string')
    const written: string[] = []
    const batch = env.store.batch.bind(env.store)
    env.store.batch = async (ops, o) => { for (const op of ops) written.push(`${op.collection}/${op.key}`); await batch(ops, o) }
    // locking both: the records change, their contents do not
    await ledger.commit((w) => { for (const t of [t0!, t1!]) w.putToken({ ...t, status: 'Locked', txid: 'tx1' }) })
    expect(written.filter((k) => k.startsWith('token-content/'))).to.deep.equal([])
    expect(written.filter((k) => k.startsWith('tokens/'))).to.have.length(2)
    // a content not stored yet is written
    await env.store.batch([{ type: 'del', collection: 'token-content', key: t1!.tokenId }])
    written.length = 0
    await ledger.commit((w) => { for (const t of [t0!, t1!]) w.putToken({ ...t, status: 'Free' }) })
    expect(written.filter((k) => k.startsWith('token-content/'))).to.deep.equal([`token-content/${t1!.tokenId}`])
    expect((await ledger.tokensById([t1!.tokenId]))[0]!.content).to.equal(t1!.content)
  })

  it('tokens read without their contents are locked and moved without reading or writing a content', async () => {
    const did = env.ring.newDid()
    const minted = await env.service.mintLocalRbt({ did, count: 2, startIndex: 0 }, ringSigner(env.ring, did))
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const withContent = await ledger.tokensById(minted.token_ids)
    let contentReads = 0
    const contents = env.repos.tokens.contents.bind(env.repos.tokens)
    env.repos.tokens.contents = async (ids) => { contentReads += ids.length; return await contents(ids) }
    const bare = await ledger.tokensById(minted.token_ids, { content: false })
    expect(bare.map((t) => t!.content)).to.deep.equal([undefined, undefined])
    expect(bare.map((t) => ({ ...t, content: undefined }))).to.deep.equal(withContent.map((t) => ({ ...t, content: undefined })))
    await ledger.commit((w) => { for (const t of bare) w.putToken({ ...t!, status: 'Locked', txid: 'tx1' }) })
    expect(contentReads).to.equal(0)
    env.repos.tokens.contents = contents
    const after = await ledger.tokensById(minted.token_ids)
    expect(after.map((t) => [t!.status, t!.content])).to.deep.equal(withContent.map((t) => ['Locked', t!.content]))
  })

  it('the ledger audit accepts the blocks a quorum stored for a transfer it signed, and still reports a block no token or signed transfer explains', async () => {
    // what a quorum's commit writes: the finalized block of a token it does not hold, and its
    // transaction record (role quorum); the audit reported every such block as belonging to no
    // stored token, and the token's chain as having a gap, on every quorum node
    const chain = buildTestTokenChain(env.ring, 3, 5)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const signed = chain.envelopes[2]!
    const b = decodeBlockEnvelope(signed)
    const txid = b.content.transInfo.tid!
    await ledger.commit((w) => {
      w.putBlock(chain.tokenId, 2, signed)
      w.putTransaction({ txid, tokenType: 'rbt', sender: b.content.transInfo.sender!, receiver: b.content.transInfo.receiver!, amountMilli: 1000, tokens: [chain.tokenId], quorums: [], memo: 'test', epoch: 1, role: 'quorum', status: 'committed' })
    })
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    // a block of a token not stored here, of a transfer this node did not sign
    await ledger.commit((w) => { w.putBlock(chain.tokenId, 3, chain.envelopes[3]!) })
    const problems = (await auditLedger(env.store)).problems
    expect(problems).to.have.length(1)
    expect(problems[0]).to.match(/belongs to no stored token/)
  })

  it('the ledger audit accepts the chain of a part-token ancestor a validator remembered, and still reports one without its record', async () => {
    // a quorum keeps the chains of the burnt ancestors it validated ('cs-ancestors'); the audit of
    // every quorum node reported their blocks as belonging to no stored token
    const chain = buildTestTokenChain(env.ring, 2, 5)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    await ledger.commit((w) => {
      chain.envelopes.forEach((e, i) => { w.putBlock(chain.tokenId, i, e) })
      w.putRecord('cs-ancestors', chain.tokenId, { burnHash: 'h', owner: 'did', children: [], depth: 0 })
    })
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    const other = buildTestTokenChain(env.ring, 1, 5)
    await ledger.commit((w) => { other.envelopes.forEach((e, i) => { w.putBlock(other.tokenId, i, e) }) })
    const problems = (await auditLedger(env.store)).problems
    expect(problems.length).to.be.greaterThan(0)
    expect(problems.every((p) => /belongs to no stored token/.test(p))).to.equal(true)
  })

  it('the ledger audit accepts a token whose txId names the transfer that locked it (released since) or the vote that pledged it, and still reports a txId nothing records', async () => {
    // consensus keeps the locking transfer in a token's txId: after an aborted transfer, or on a
    // quorum's pledged token, the audit said "names missing transaction" / "does not list token"
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const alice = env.ring.newDid()
    await env.service.mintLocalRbt({ did: alice, count: 1, startIndex: 0 }, ringSigner(env.ring, alice))
    const [t] = await ledger.tokensOf(alice, 'Free')
    await ledger.commit((w) => {
      w.putRecord('cs-outgoing', 'tx-aborted', { txid: 'tx-aborted', state: 'PREPARING' })
      w.putToken({ ...t!, status: 'Locked', txid: 'tx-aborted', updatedAt: Date.now() })
    })
    await ledger.commit((w) => {
      w.putRecord('cs-outgoing', 'tx-aborted', { txid: 'tx-aborted', state: 'ABORTED' })
      w.putToken({ ...t!, status: 'Free', txid: 'tx-aborted', updatedAt: Date.now() })
    })
    const quorum = env.ring.newDid()
    await env.service.mintLocalRbt({ did: quorum, count: 1, startIndex: 0 }, ringSigner(env.ring, quorum))
    const [p] = await ledger.tokensOf(quorum, 'Free')
    await ledger.commit((w) => {
      w.putRecord('cs-votes', `${quorum}/tx-signed`, { txid: 'tx-signed', quorumDid: quorum, state: 'COMMITTED' })
      w.putTransaction({ txid: 'tx-signed', tokenType: 'rbt', sender: alice, receiver: alice, amountMilli: 1000, tokens: ['QmSomeoneElsesToken'], quorums: [quorum], memo: '', epoch: 1, role: 'quorum', status: 'committed' })
      w.putToken({ ...p!, status: 'Pledged', txid: 'tx-signed', updatedAt: Date.now() })
    })
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    await ledger.commit((w) => { w.putToken({ ...t!, status: 'Free', txid: 'tx-nowhere', updatedAt: Date.now() }) })
    const problems = (await auditLedger(env.store)).problems
    expect(problems).to.have.length(1)
    expect(problems[0]).to.match(/names missing transaction tx-nowhere/)
  })

  it('the ledger audit accepts the chain of a received part token\'s parent (burnt at the sender, never a token here)', async () => {
    const alice = env.ring.newDid()
    const signer = ringSigner(env.ring, alice)
    const minted = await env.service.mintLocalRbt({ did: alice, count: 1, startIndex: 0 }, signer)
    const parentId = minted.token_ids[0]!
    await env.service.splitToken(parentId, 250, signer)
    const part = (await consensusLedger(env.store, env.ledger, env.repos).tokensOf(alice, 'Free')).find((x) => x.parentId === parentId)!
    const parentEnvs = await env.repos.blocks.envelopes(await env.repos.blocks.chain(parentId))
    const partEnvs = await env.repos.blocks.envelopes(await env.repos.blocks.chain(part.tokenId))
    // the receiving node: the part and the chains it was given, the parent's included
    const other = await tokenEnv({ ring: env.ring })
    try {
      const ledger = consensusLedger(other.store, other.ledger, other.repos)
      await ledger.commit((w) => {
        parentEnvs.forEach((e, i) => { w.putBlock(parentId, i, e) })
        partEnvs.forEach((e, i) => { w.putBlock(part.tokenId, i, e) })
        w.putToken({ ...part, txid: undefined })
      })
      expect((await auditLedger(other.store)).problems).to.deep.equal([])
    } finally { await other.close() }
  })

  it('the ledger audit accepts later blocks of a token this node sent away (its chain came back as a part\'s parent), not of one it holds', async () => {
    // the sender keeps its record Transferred at the block it wrote; the receiver split the token and
    // a part came back, with the parent's chain up to the burn: the audit said "says latest block 1,
    // the chain ends at 2"
    const chain = buildTestTokenChain(env.ring, 3, 5)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const b1 = decodeBlockEnvelope(chain.envelopes[1]!)
    const state = { tokenId: chain.tokenId, tokenType: 2, valueMilli: 1000, owner: chain.owners[1]!, latestBlockId: formatBlockId(1, b1.hash), updatedAt: Date.now() }
    await ledger.commit((w) => {
      chain.envelopes.slice(0, 3).forEach((e, i) => { w.putBlock(chain.tokenId, i, e) })
      w.putToken({ ...state, status: 'Transferred' })
    })
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    // held, it must be at the end of its chain
    await ledger.commit((w) => { w.putToken({ ...state, status: 'Free' }) })
    const problems = (await auditLedger(env.store)).problems
    expect(problems).to.have.length(1)
    expect(problems[0]).to.match(/says latest block 1-/)
  })

  it('the ledger audit accepts a token Locked by a transfer whose decided block is stored before its record (the sender writes it while the delivery runs), and no other block past its latest', async () => {
    const chain = buildTestTokenChain(env.ring, 3, 5)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const b1 = decodeBlockEnvelope(chain.envelopes[1]!)
    const b2 = decodeBlockEnvelope(chain.envelopes[2]!)
    const decidedTx = b2.content.transInfo.tid!
    // Locked at block 1 by the transfer that block 2 decided, its outgoing record COMMITTING
    const state = { tokenId: chain.tokenId, tokenType: 2, valueMilli: 1000, owner: chain.owners[1]!, latestBlockId: formatBlockId(1, b1.hash), updatedAt: Date.now() }
    await ledger.commit((w) => {
      chain.envelopes.slice(0, 2).forEach((e, i) => { w.putBlock(chain.tokenId, i, e) })
      w.putRecord('cs-outgoing', decidedTx, { txid: decidedTx, state: 'COMMITTING' })
      w.putToken({ ...state, status: 'Locked', txid: decidedTx })
    })
    await ledger.commit((w) => { w.putBlock(chain.tokenId, 2, chain.envelopes[2]!) })
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    // locked by another transfer, the same block past its latest is a problem
    await ledger.commit((w) => {
      w.putRecord('cs-outgoing', 'tx-other', { txid: 'tx-other', state: 'PREPARING' })
      w.putToken({ ...state, status: 'Locked', txid: 'tx-other' })
    })
    const problems = (await auditLedger(env.store)).problems
    expect(problems).to.have.length(1)
    expect(problems[0]).to.match(/says latest block 1-/)
  })

  it('the ledger audit accepts the backing chains of a received FT (burnt for it by its creator, never a token here)', async () => {
    const creator = env.ring.newDid()
    const signer = ringSigner(env.ring, creator)
    await env.service.mintLocalRbt({ did: creator, count: 2, startIndex: 0 }, signer)
    const fts = new FtService({ store: env.store, ledger: env.ledger, repos: env.repos, tokens: env.service })
    const r = await fts.mint({ did: creator, ftName: 'ABC', ftCount: 4, tokenCount: 2, startIndex: 0 }, signer)
    const ft = (await consensusLedger(env.store, env.ledger, env.repos).tokensById([r.first_ft_id]))[0]!
    const ftEnvs = await env.repos.blocks.envelopes(await env.repos.blocks.chain(ft.tokenId))
    const backing = await Promise.all(r.backing_tokens.map(async (id) => ({ id, envs: await env.repos.blocks.envelopes(await env.repos.blocks.chain(id)) })))
    const other = await tokenEnv({ ring: env.ring })
    try {
      const ledger = consensusLedger(other.store, other.ledger, other.repos)
      await ledger.commit((w) => {
        for (const b of backing) b.envs.forEach((e, i) => { w.putBlock(b.id, i, e) })
        ftEnvs.forEach((e, i) => { w.putBlock(ft.tokenId, i, e) })
        w.putToken({ ...ft, txid: undefined })
      })
      expect((await auditLedger(other.store)).problems).to.deep.equal([])
    } finally { await other.close() }
  })

  it('a chain read returns every block even when its first blocks were cached long ago and the cache is full', async () => {
    // the body cache trimmed itself before the answer was read: a chain whose old blocks were the
    // oldest cached entries came back with holes (validate-token-chain then failed on quorum nodes
    // with "Cannot read properties of undefined (reading 'buffer')")
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const alice = env.ring.newDid()
    const signer = ringSigner(env.ring, alice)
    const x = (await env.service.mintLocalRbt({ did: alice, count: 1, startIndex: 0 }, signer)).token_ids[0]!
    expect(await ledger.chain(x)).to.have.length(1)
    const bob = env.ring.newDid()
    const others = (await env.service.mintLocalRbt({ did: bob, count: 511, startIndex: 0 }, ringSigner(env.ring, bob))).token_ids
    for (const id of others) await ledger.chain(id)
    await env.service.splitToken(x, 250, signer)
    const chain = await ledger.chain(x)
    expect(chain).to.have.length(2)
    for (const e of chain) expect(e).to.be.instanceOf(Uint8Array)
  })

  it('chains read many chains by key as chain reads each: unknown tokens, a chain longer than its record, more bodies than the cache holds', async () => {
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const alice = env.ring.newDid()
    const signer = ringSigner(env.ring, alice)
    const minted = (await env.service.mintLocalRbt({ did: alice, count: 600, startIndex: 0 }, signer)).token_ids
    await env.service.splitToken(minted[0]!, 250, signer)
    // a chain stored past the tip its token record names (the record put back as it was before a split)
    const before = (await ledger.token(minted[1]!))!
    await env.service.splitToken(minted[1]!, 250, signer)
    await ledger.commit((w) => { w.putToken(before) })
    expect((await env.repos.tokens.get(minted[1]!))!.latestBlockNumber).to.equal(0)
    const ids = ['QmUnknown', ...minted]
    const batch = await ledger.chains(ids)
    expect(batch).to.have.length(ids.length)
    expect(batch[0]).to.deep.equal([])
    expect(batch[1]).to.have.length(2)
    expect(batch[2]).to.have.length(2)
    for (let i = 0; i < ids.length; i++) expect(batch[i]).to.deep.equal(await ledger.chain(ids[i]!), ids[i])
  })
})
