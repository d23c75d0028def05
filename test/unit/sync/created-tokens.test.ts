import { expect } from 'chai'
import type { LedgerChange } from '../../../src/storage/token-ledger.js'
import { TokenStatus } from '../../../src/storage/token-records.js'
import { createdTokens } from '../../../src/node/sync/sync-service.js'
import { parseAmount } from '../../../src/tokenchain/index.js'
import { ringSigner, tokenEnv, type TokenEnv } from '../tokens/helpers.js'

describe('sync: tokens a ledger change creates (what is announced to fullnodes)', function () {
  this.timeout(30_000)
  let env: TokenEnv
  beforeEach(async () => { env = await tokenEnv() })
  afterEach(async () => { await env.close() })

  it('a mint and a split create tokens; a later status change of a token still at block 0 creates none', async () => {
    const did = env.ring.newDid()
    const signer = ringSigner(env.ring, did)
    const changes: LedgerChange[] = []
    env.ledger.onCommit((c) => { changes.push(c) })

    const minted = await env.service.mintLocalRbt({ did, count: 2, startIndex: 1 }, signer)
    expect(createdTokens(changes.at(-1)!).map((r) => r.tokenId).sort()).to.deep.equal([...minted.token_ids].sort())

    const split = await env.service.splitToken(minted.token_ids[0]!, parseAmount('0.2'), signer)
    const parts = split.parts.map((p) => p.token_id).sort()
    expect(createdTokens(changes.at(-1)!).map((r) => r.tokenId).sort()).to.deep.equal(parts)

    // a quorum pledging a part (and later releasing it) rewrites its record at block 0: that is
    // not a creation, and announcing it again cost every node of the network a gossip round per transfer
    const part = (await env.repos.tokens.get(parts[0]!))!
    await env.ledger.commit({ tokens: [{ record: { ...part, status: TokenStatus.Pledged }, expect: { latestBlockId: part.latestBlockId } }] })
    expect(changes.at(-1)!.tokens).to.have.length(1)
    expect(createdTokens(changes.at(-1)!)).to.deep.equal([])
  })
})
