import { expect } from 'chai'
import { auditLedger } from '../../../src/storage/token-ledger.js'
import {
  createBlock, createRac, encodeBlockEnvelope, encodeCbor, decodeCbor, encodeRacEnvelope, racTokenContent, racTokenId,
  setSignature, testTokenGenesis, RacType, type CborObject
} from '../../../src/tokenchain/index.js'
import { isRbtError } from '../../../src/util/errors.js'
import { buildTestTokenChain, type TestChain } from '../tokenchain/fixtures.js'
import { tokenEnv, type TokenEnv } from './helpers.js'

describe('tokens: chain ingestion (validation before storage)', function () {
  this.timeout(30_000)
  let env: TokenEnv
  let chain: TestChain
  before(async () => {
    env = await tokenEnv()
    chain = buildTestTokenChain(env.ring, 4, 5)
  })
  after(async () => { await env.close() })

  async function refused (envelopes: Uint8Array[], tokenId = chain.tokenId, content = chain.tokenContent, code = 'CHAIN_INVALID', re?: RegExp): Promise<void> {
    try {
      await env.service.ingestChain(tokenId, envelopes, { status: 'Free', tokenContent: content })
      expect.fail('should be refused')
    } catch (e) {
      expect(isRbtError(e, code as never), String(e)).to.equal(true)
      if (re !== undefined) expect((e as Error).message).to.match(re)
    }
    expect(await env.repos.tokens.get(tokenId)).to.equal(undefined)
    expect(await env.repos.blocks.chain(tokenId)).to.deep.equal([])
    const audit = await auditLedger(env.store)
    expect(audit.problems).to.deep.equal([])
  }

  it('refuses a changed byte and stores nothing', async () => {
    const envs = chain.envelopes.map((e) => e.slice())
    const b = envs[2]!
    // flip a byte inside the content of block 2 (inside the comment text "test")
    const i = Buffer.from(b).indexOf(Buffer.from('test'))
    b[i] = b[i]! ^ 0x01
    await refused(envs, chain.tokenId, chain.tokenContent, 'CHAIN_INVALID', /block 2/)
  })

  it('refuses a missing block', async () => {
    const envs = [...chain.envelopes.slice(0, 2), ...chain.envelopes.slice(3)]
    await refused(envs, chain.tokenId, chain.tokenContent, 'CHAIN_INVALID', /block 2: block-number/)
  })

  it('refuses a wrong signer', async () => {
    const intruder = env.ring.newDid()
    const genesis = chain.blocks[0]!
    const forged = setSignature({ ...genesis, signatures: {} }, chain.owners[0]!, env.ring.sign(intruder, genesis.hash))
    await refused([encodeBlockEnvelope(forged), ...chain.envelopes.slice(1)], chain.tokenId, chain.tokenContent, 'CHAIN_INVALID', /block 0: signature/)
  })

  it('refuses a forged genesis (another owner re-issuing the token)', async () => {
    const thief = env.ring.newDid()
    let g = createBlock(testTokenGenesis({ tokenId: chain.tokenId, owner: thief, comment: 'test token' }))
    g = setSignature(g, thief, env.ring.sign(thief, g.hash))
    await refused([encodeBlockEnvelope(g)], chain.tokenId, chain.tokenContent, 'CHAIN_INVALID', /block 0: genesis/)
    // and a self-consistent token whose content was signed by someone else than the genesis owner
    const rac = createRac({ type: RacType.TEST_TOKEN, version: 1, did: thief, tokenNumber: 0, totalSupply: 1, timestamp: 'x' })
    rac.signature = env.ring.sign(chain.owners[0]!, rac.hash)
    const racEnv = encodeRacEnvelope(rac)
    const id = racTokenId(racEnv)
    let g2 = createBlock(testTokenGenesis({ tokenId: id, owner: thief }))
    g2 = setSignature(g2, thief, env.ring.sign(thief, g2.hash))
    await refused([encodeBlockEnvelope(g2)], id, racTokenContent(racEnv), 'CHAIN_INVALID', /block 0: signature/)
  })

  it('refuses an envelope whose signature map was swapped for another block\'s', async () => {
    const envs: Uint8Array[] = chain.envelopes.map((e) => e.slice())
    const a = decodeCbor(envs[1]!) as CborObject
    const b = decodeCbor(envs[2]!) as CborObject
    envs[1] = encodeCbor({ 1: a['1']!, 2: b['2']! })
    await refused(envs, chain.tokenId, chain.tokenContent, 'CHAIN_INVALID', /block 1: signature/)
  })

  it('stores a valid chain, then only accepts extensions of it', async () => {
    const first = await env.service.ingestChain(chain.tokenId, chain.envelopes.slice(0, 3), { status: 'Free', tokenContent: chain.tokenContent })
    expect(first.added).to.equal(3)
    expect(first.token).to.include({ owner: chain.owners[2], status: 'Free', latestBlockNumber: 2, kind: 'rbt', value: 1000 })
    expect((await env.service.rbtBalance(chain.owners[2]!)).balance).to.equal(1)
    // the rest of the chain arrives: the token moves on to owners[4], who is not local here
    const second = await env.service.ingestChain(chain.tokenId, chain.envelopes, { status: 'Transferred' })
    expect(second.added).to.equal(2)
    expect(second.token).to.include({ owner: chain.owners[4], latestBlockNumber: 4 })
    expect((await env.service.rbtBalance(chain.owners[2]!)).balance).to.equal(0)
    const dump = await env.service.chainDump(chain.tokenId)
    expect(dump.blocks.map((b) => b.block_id)).to.deep.equal(chain.blocks.map((b, i) => `${i}-${b.hash}`))
    expect(dump.blocks[1]).to.include({ type: '02', type_name: 'Transferred', sender: chain.owners[0], receiver: chain.owners[1] })
    expect(dump.blocks[1]!.signers).to.have.length(5)
    // a shorter chain, or a different history, is a conflict
    try { await env.service.ingestChain(chain.tokenId, chain.envelopes.slice(0, 2), { status: 'Free' }); expect.fail('x') } catch (e) { expect(isRbtError(e, 'CONFLICT')).to.equal(true) }
    const fork = buildTestTokenChain(env.ring, 1, 5)
    try { await env.service.ingestChain(chain.tokenId, fork.envelopes, { status: 'Free' }); expect.fail('x') } catch (e) { expect(isRbtError(e)).to.equal(true) }
    const paged = await env.service.chainDump(chain.tokenId, { limit: 2 })
    expect(paged.blocks).to.have.length(2)
    expect(paged.next_block_id).to.equal(`1-${chain.blocks[1]!.hash}`)
    const rest = await env.service.chainDump(chain.tokenId, { afterBlockId: paged.next_block_id, limit: 10 })
    expect(rest.blocks.map((b) => b.number)).to.deep.equal([2, 3, 4])
    expect(rest.next_block_id).to.equal('')
    expect((await auditLedger(env.store)).problems).to.deep.equal([])
    // the stored chain still validates end to end
    expect((await env.service.validateStoredChain(chain.tokenId)).length).to.equal(5)
  })
})
