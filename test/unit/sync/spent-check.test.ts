import { expect } from 'chai'
import type { ChainSource } from '../../../src/consensus/chain-sync.js'
import { dropSpent, heldClaims } from '../../../src/node/sync/spent-check.js'
import { TokenStatus } from '../../../src/storage/token-records.js'
import { blockIdFor, decodeBlockEnvelope } from '../../../src/tokenchain/block.js'
import { TokenType } from '../../../src/tokenchain/types.js'
import { blockRecordOf } from '../../../src/tokens/token-service.js'
import { ErrorCode, RbtError } from '../../../src/util/errors.js'
import type { Logger } from '../../../src/util/logger.js'
import { buildTestTokenChain, KeyRing, withTamperedSignature, type TestChain } from '../tokenchain/fixtures.js'
import { tokenEnv, type TokenEnv } from '../tokens/helpers.js'

const sourceOf = (t: TestChain, envelopes = t.envelopes): ChainSource => ({
  chain: async function * (id: string, from: number) {
    if (id !== t.tokenId) throw new RbtError(ErrorCode.NOT_FOUND, `no chain for ${id}`)
    yield envelopes.slice(from)
  },
  contents: async (ids) => Object.fromEntries(ids.filter((id) => id === t.tokenId).map((id) => [id, t.tokenContent]))
})


describe('sync: a token held here that another transaction spent leaves the balance once its chain is checked', function () {
  this.timeout(60_000)
  const ring = new KeyRing('raw-secp256k1')
  let env: TokenEnv
  let t: TestChain
  let warned: string[]
  const log: Logger = { debug: () => {}, info: () => {}, warn: (m) => { warned.push(m) }, error: () => {}, child: () => log }
  const deps = (): Parameters<typeof dropSpent>[0] => ({ ledger: env.ledger, repos: env.repos, verifier: ring.verifier, isLocalDid: async (d) => d === t.owners[1], log })

  beforeEach(async () => {
    warned = []
    env = await tokenEnv({ ring })
    // owners[1] holds the token at block 1 here; elsewhere it was spent on to owners[2] (block 2)
    t = buildTestTokenChain(ring, 2, 5)
    const now = Date.now()
    await env.ledger.commit({
      blocks: t.envelopes.slice(0, 2).map((e) => ({ record: blockRecordOf(t.tokenId, decodeBlockEnvelope(e), now), envelope: e })),
      contents: { [t.tokenId]: t.tokenContent },
      tokens: [{ record: { tokenId: t.tokenId, kind: 'rbt', tokenType: TokenType.TEST_RBT, value: 1000, owner: t.owners[1]!, status: TokenStatus.Free, latestBlockId: blockIdFor(t.blocks[1]!, t.tokenId), latestBlockNumber: 1, createdAt: now, updatedAt: now } }]
    })
  })
  afterEach(async () => { await env.close() })

  it('a claim on the state held here: the chain is fetched, validated, and the token becomes Transferred to its new owner, with a WARN naming the transaction', async () => {
    const held = await heldClaims(deps(), [{ tokenId: t.tokenId, blockId: blockIdFor(t.blocks[1]!, t.tokenId) }])
    expect(held.map((h) => h.tokenId)).to.deep.equal([t.tokenId])
    const dropped = await dropSpent(deps(), held, [{ name: 'peer-x', source: sourceOf(t) }], 'a test announcement')
    const txid = t.blocks[2]!.content.transInfo.tid!
    expect(dropped).to.deep.equal([{ tokenId: t.tokenId, owner: t.owners[1], txid, newOwner: t.owners[2] }])
    const rec = await env.repos.tokens.get(t.tokenId)
    expect(rec?.status).to.equal(TokenStatus.Transferred)
    expect(rec?.owner).to.equal(t.owners[2])
    expect(rec?.latestBlockNumber).to.equal(2)
    expect((await env.repos.blocks.chain(t.tokenId)).length).to.equal(3)
    expect(warned.join('\n')).to.match(new RegExp(`token ${t.tokenId} of ${t.owners[1]!} was spent by transaction ${txid}.*dropped from the balance`))
  })

  it('changes nothing for a claim on another state, a chain that does not validate, or a source that knows no more', async () => {
    expect(await heldClaims(deps(), [{ tokenId: t.tokenId, blockId: blockIdFor(t.blocks[0]!, t.tokenId) }])).to.deep.equal([])
    const held = await heldClaims(deps(), [{ tokenId: t.tokenId }])
    expect(await dropSpent(deps(), held, [{ name: 'forger', source: sourceOf(t, withTamperedSignature(t.envelopes, 2)) }], 'a forged claim')).to.deep.equal([])
    expect(await dropSpent(deps(), held, [{ name: 'behind', source: sourceOf(t, t.envelopes.slice(0, 2)) }], 'a stale peer')).to.deep.equal([])
    const rec = await env.repos.tokens.get(t.tokenId)
    expect(rec?.status).to.equal(TokenStatus.Free)
    expect(rec?.owner).to.equal(t.owners[1])
    expect(warned).to.deep.equal([])
    // the next source that has the spend is asked after those that failed
    const dropped = await dropSpent(deps(), held, [{ name: 'forger', source: sourceOf(t, withTamperedSignature(t.envelopes, 2)) }, { name: 'good', source: sourceOf(t) }], 'a test')
    expect(dropped).to.have.length(1)
  })
})
