import { expect } from 'chai'
import { buildBundle, validateBundleToken } from '../../../src/consensus/bundle.js'
import { fetchBundle, validateBundleTokens, type ChainSource } from '../../../src/consensus/chain-sync.js'
import { consensusLedger } from '../../../src/node/consensus/ledger-adapter.js'
import { auditLedger } from '../../../src/storage/token-ledger.js'
import { decodeBlockEnvelope, ftTokenId, TokenType, TransactionType } from '../../../src/tokenchain/index.js'
import { checkFtMint, ftBackingProblem, ftBurnComment, ftParents, orderBacking, parseFtBurnComment, FT_GENESIS_GROUP } from '../../../src/tokens/ft.js'
import { FtService } from '../../../src/tokens/ft-service.js'
import { isRbtError } from '../../../src/util/errors.js'
import { ringSigner, tokenEnv, type TokenEnv } from './helpers.js'

const DID = 'bafybmi' + 'a'.repeat(52)

function refused (fn: () => unknown, re: RegExp): void {
  try { fn() } catch (e) {
    expect(isRbtError(e), String(e)).to.equal(true)
    expect((e as Error).message).to.match(re)
    return
  }
  expect.fail(`expected a refusal matching ${String(re)}`)
}

describe('tokens: FT rules', () => {
  const req = { did: DID, ftName: 'ABC', ftCount: 10_000, tokenCount: 10, startIndex: 0 }

  it('an FT is worth token_count / ft_count RBT, a whole number of milli-RBT', () => {
    expect(checkFtMint(req)).to.equal(1)
    expect(checkFtMint({ ...req, ftCount: 4, tokenCount: 1 })).to.equal(250)
    expect(checkFtMint({ ...req, ftCount: 1, tokenCount: 3 })).to.equal(3000)
  })

  it('refuses counts that do not divide the backing, zero, too many, bad names and DIDs', () => {
    refused(() => checkFtMint({ ...req, ftCount: 3, tokenCount: 1 }), /does not divide 1 RBT.*nearest counts that do are 2 and 4/)
    refused(() => checkFtMint({ ...req, ftCount: 0 }), /greater than 0/)
    refused(() => checkFtMint({ ...req, ftCount: -5 }), /greater than 0/)
    refused(() => checkFtMint({ ...req, ftCount: 10_001 }), /at most 10000 for 10 RBT/)
    refused(() => checkFtMint({ ...req, tokenCount: 0 }), /token_count/)
    refused(() => checkFtMint({ ...req, tokenCount: 1.5 }), /token_count/)
    refused(() => checkFtMint({ ...req, ftName: '' }), /ft_name/)
    refused(() => checkFtMint({ ...req, ftName: ' ABC' }), /ft_name/)
    refused(() => checkFtMint({ ...req, ftName: 'A,B' }), /ft_name/)
    refused(() => checkFtMint({ ...req, startIndex: -1 }), /ft_num_start_index/)
    refused(() => checkFtMint({ ...req, did: 'bafy' }), /Invalid DID/)
  })

  it('each FT names exactly the backing tokens its value slice overlaps', () => {
    const backing = orderBacking([{ tokenId: 'Qmb', valueMilli: 1000 }, { tokenId: 'Qma', valueMilli: 1000 }])
    expect(backing.map((b) => b.tokenId)).to.deep.equal(['Qma', 'Qmb'])
    expect([0, 1, 2, 3, 4].map((j) => ftParents(backing, j, 400))).to.deep.equal([['Qma'], ['Qma'], ['Qma', 'Qmb'], ['Qmb'], ['Qmb']])
    const parts = orderBacking([{ tokenId: 'Qm1', valueMilli: 500 }, { tokenId: 'Qm2', valueMilli: 250 }, { tokenId: 'Qm3', valueMilli: 250 }])
    expect([0, 1].map((j) => ftParents(parts, j, 500))).to.deep.equal([['Qm1'], ['Qm2', 'Qm3']])
  })

  it('the backing check finds a wrong creator, name, number range, total or parent list', () => {
    const burn = { owner: DID, comment: ftBurnComment(4, 10, 'ABC'), backing: [{ tokenId: 'Qma', valueMilli: 1000 }] }
    const ft = { ftId: 'Qmx', creator: DID, name: 'ABC', index: 12, valueMilli: 250, parents: ['Qma'] }
    expect(parseFtBurnComment(burn.comment)).to.deep.equal({ count: 4, start: 10, name: 'ABC' })
    expect(ftBackingProblem(ft, burn)).to.equal(undefined)
    expect(ftBackingProblem({ ...ft, creator: 'bafybmi' + 'b'.repeat(52) }, burn)).to.match(/not by the creator/)
    expect(ftBackingProblem({ ...ft, name: 'ABD' }, burn)).to.match(/burnt for FT "ABC"/)
    expect(ftBackingProblem({ ...ft, index: 14 }, burn)).to.match(/outside the mint 10..13/)
    expect(ftBackingProblem({ ...ft, valueMilli: 500 }, burn)).to.match(/are not backed/)
    expect(ftBackingProblem({ ...ft, parents: ['Qma', 'Qmb'] }, burn)).to.match(/names parents/)
    expect(ftBackingProblem(ft, { ...burn, comment: 'Token burnt' })).to.match(/does not state a mint/)
  })
})

describe('tokens: FtService over LevelDB', function () {
  this.timeout(60_000)
  let env: TokenEnv
  let fts: FtService
  let did: string
  beforeEach(async () => {
    env = await tokenEnv()
    fts = new FtService({ store: env.store, ledger: env.ledger, repos: env.repos, tokens: env.service })
    did = env.ring.newDid()
  })
  afterEach(async () => { await env.close() })

  it('mints 10,000 FTs for 10 RBT in one commit with one signature per burn and per genesis group', async () => {
    const signer = ringSigner(env.ring, did)
    await env.service.mintLocalRbt({ did, count: 11, startIndex: 0 }, signer)
    signer.calls = 0
    const t0 = Date.now()
    const r = await fts.mint({ did, ftName: 'ABC', ftCount: 10_000, tokenCount: 10, startIndex: 0 }, signer)
    const ms = Date.now() - t0
    console.log(`      FtService.mint of 10,000 FTs: ${ms} ms, ${signer.calls} signatures`)
    expect(signer.calls).to.equal(1 + 10_000 / FT_GENESIS_GROUP)
    expect(r.first_ft_id).to.equal(ftTokenId('ABC', 0, did))
    expect(r.last_ft_id).to.equal(ftTokenId('ABC', 9_999, did))
    expect(await env.service.rbtBalance(did)).to.deep.equal({ balance: 1, locked: 0, pledged: 0, pinned: 0 })
    expect(await env.service.ftBalance(did)).to.deep.equal([{ name: 'ABC', creator: did, count: 10_000, value: 10 }])
    for (const id of r.backing_tokens) expect((await env.repos.tokens.get(id))?.status).to.equal('BurntForFT')
    const audit = await auditLedger(env.store)
    expect(audit.problems, audit.problems.join('\n')).to.deep.equal([])
    const list = await fts.list()
    expect(list).to.deep.equal([{ ft_name: 'ABC', creator_did: did, ft_count: 10_000, ft_value: 0.001, holders: [{ did, count: 10_000 }] }])

    // what a quorum gets for a few FTs validates, backing included
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const some = [ftTokenId('ABC', 0, did), ftTokenId('ABC', 4_567, did), ftTokenId('ABC', 9_999, did)]
    const bundle = await buildBundle(ledger, some)
    for (const id of r.backing_tokens) expect(bundle.chains[id]).to.have.length(2)
    for (const id of some) {
      const tip = await validateBundleToken(bundle, id, env.ring.verifier)
      expect(tip.tokenType).to.equal(TokenType.FT)
      expect(tip.owner).to.equal(did)
    }
    const g = decodeBlockEnvelope(bundle.chains[some[1]!]![0]!)
    expect(Object.keys(g.content.transInfo.tokens)).to.have.length(FT_GENESIS_GROUP)
    const burnt = bundle.chains[r.backing_tokens[0]!]!
    expect(decodeBlockEnvelope(burnt[burnt.length - 1]!).content.transactionType).to.equal(TransactionType.BURNT_FOR_FT)

    // without the backing chains, or with one of them cut short, the FT does not validate
    const noBacking = { chains: { [some[0]!]: bundle.chains[some[0]!]! }, contents: {} }
    await validateBundleToken(noBacking, some[0]!, env.ring.verifier).then(() => expect.fail('validated without backing'), (e) => { expect((e as Error).message).to.match(/was not supplied/) })
    const other = r.backing_tokens.find((id) => id !== g.content.genesis!.info[some[1]!]!.parentId)!
    const cut = { chains: { ...bundle.chains, [other]: bundle.chains[other]!.slice(0, 1) }, contents: bundle.contents }
    await validateBundleToken(cut, some[1]!, env.ring.verifier).then(() => expect.fail('validated with a cut backing chain'), (e) => { expect((e as Error).message).to.match(/does not end with the mint's burn/) })

    // a node fetching the FTs' chains (a fullnode archiving them, a wallet sync) gets their backing
    // too: it was "the chain of backing token … was not supplied", and the fullnode never held them
    const source: ChainSource = {
      chain: async function * (id: string, from: number) { yield (await ledger.chain(id)).slice(from).filter((b): b is Uint8Array => b !== undefined) },
      contents: async () => ({})
    }
    const fetched = await fetchBundle(source, { chain: async () => [], content: async () => undefined }, some)
    for (const id of r.backing_tokens) expect(fetched.bundle.chains[id], id).to.have.length(2)
    const tips = await validateBundleTokens(fetched.bundle, some, env.ring.verifier)
    expect([...tips.values()].map((t) => t.tokenType)).to.deep.equal([TokenType.FT, TokenType.FT, TokenType.FT])
  })

  it('backs FTs with part tokens, refuses a used name and too little RBT, and leaves nothing behind on refusal', async () => {
    const signer = ringSigner(env.ring, did)
    const m = await env.service.mintLocalRbt({ did, count: 3, startIndex: 0 }, signer)
    await env.service.splitToken(m.token_ids[0]!, 500, signer)
    const r = await fts.mint({ did, ftName: 'P', ftCount: 8, tokenCount: 2, startIndex: 5 }, signer)
    expect(r.ft_value).to.equal(0.25)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const ids = Array.from({ length: 8 }, (_, i) => ftTokenId('P', 5 + i, did))
    const bundle = await buildBundle(ledger, ids)
    for (const id of ids) await validateBundleToken(bundle, id, env.ring.verifier)
    expect(await env.service.rbtBalance(did)).to.deep.include({ balance: 1 })

    const before = await env.service.balanceRecord(did)
    for (const [req, re] of [
      [{ did, ftName: 'P', ftCount: 4, tokenCount: 1, startIndex: 100 }, /already used/],
      [{ did, ftName: 'Q', ftCount: 4, tokenCount: 2, startIndex: 100 }, /insufficient balance: 1 Free RBT, 2 RBT needed/]
    ] as const) {
      await fts.mint(req, signer).then(() => expect.fail('minted'), (e) => { expect((e as Error).message).to.match(re) })
    }
    expect(await env.service.balanceRecord(did)).to.deep.equal(before)
    const audit = await auditLedger(env.store)
    expect(audit.problems, audit.problems.join('\n')).to.deep.equal([])
  })

  it('keeps a free-FT index per holder, name and creator in transfer order, and fills it once for an older store', async () => {
    const signer = ringSigner(env.ring, did)
    await env.service.mintLocalRbt({ did, count: 2, startIndex: 0 }, signer)
    await fts.mint({ did, ftName: 'IDX', ftCount: 250, tokenCount: 1, startIndex: 0 }, signer)
    await fts.mint({ did, ftName: 'IDX-2', ftCount: 4, tokenCount: 1, startIndex: 1 }, signer)
    const ledger = consensusLedger(env.store, env.ledger, env.repos)
    const order = (name: string): Promise<string[]> => ledger.tokensOf(did, 'Free', 'ft').then((all) => all.filter((t) => t.ftName === name)
      .sort((a, b) => a.latestBlockId < b.latestBlockId ? -1 : a.latestBlockId > b.latestBlockId ? 1 : a.tokenId < b.tokenId ? -1 : 1).map((t) => t.tokenId))
    const idx = await order('IDX')
    expect(idx).to.have.length(250)
    expect(await ledger.freeFts(did, 'IDX', did, 120)).to.deep.equal(idx.slice(0, 120))
    expect(await ledger.freeFts(did, 'IDX-2', did, 10)).to.deep.equal(await order('IDX-2'))
    expect(await ledger.freeFts(did, 'IDX', 'bafybmi' + 'b'.repeat(52), 10)).to.deep.equal([])

    // a token that stops being Free leaves the index in the same commit
    const first = (await env.repos.tokens.get(idx[0]!))!
    await env.ledger.commit({ tokens: [{ record: { ...first, status: 'Locked' } }] })
    expect((await ledger.freeFts(did, 'IDX', did, 2))[0]).to.equal(idx[1])
    expect((await auditLedger(env.store)).problems).to.deep.equal([])

    // a store from before the index: the entries are missing until the one-time fill
    const col = env.store.collection<number>('ft-free')
    const keys: string[] = []
    for await (const k of col.keys()) keys.push(k)
    await env.store.batch(keys.map((key) => ({ type: 'del' as const, collection: 'ft-free', key })))
    expect((await auditLedger(env.store)).problems).to.have.length(253)
    expect(await env.ledger.indexFreeFts()).to.equal(253)
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    expect(await ledger.freeFts(did, 'IDX', did, 3)).to.deep.equal(idx.slice(1, 4))
    expect(await env.ledger.indexFreeFts()).to.equal(0)
  })
})
