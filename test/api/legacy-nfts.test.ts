import { expect } from 'chai'
import { createApp } from '../../src/api/server/app.js'
import type { ApiServices } from '../../src/api/server/services.js'
import { ErrorCode, RbtError } from '../../src/util/errors.js'
import { unusedConsensus } from './stub-consensus.js'
import { unusedIdentity } from './stub-identity.js'
import { unusedTokens } from './stub-tokens.js'
import { PEER, ALICE, BOB, CHALLENGE, type Env, call } from './legacy-harness.js'

const NFT = 'Qm' + 'n'.repeat(44)

function services (): { s: ApiServices, calls: unknown[] } {
  const calls: unknown[] = []
  const s = { ...unusedIdentity(), ...unusedConsensus(), ...unusedTokens(), node: {} as never, bootstrap: {} as never } as unknown as ApiServices
  s.nfts = {
    // the artifact arrives in a sink of the service's (here: one that keeps the bytes)
    artifactLimit: 1024 * 1024,
    artifactSink: async () => {
      const chunks: Buffer[] = []
      return { write: async (b: Uint8Array) => { chunks.push(Buffer.from(b)) }, abort: async () => {}, bytes: () => Buffer.concat(chunks) }
    },
    generate: async (did: string, metadata?: Uint8Array, artifact?: { bytes: () => Buffer }) => {
      if (metadata === undefined) throw new RbtError(ErrorCode.INVALID_INPUT, 'Creation of NFT failed, failed to retrieve metadata')
      calls.push({ generate: did, metadata: Buffer.from(metadata).toString(), artifact: artifact?.bytes().toString() ?? '' })
      return NFT
    },
    list: async () => [{ nft_id: NFT, owner: ALICE, value: 2, status: 'Free', latest_block_id: 'b', parent_nft_id: null }],
    chain: async (id: string) => id === NFT
      ? [{ transactionId: 't0', initiator: ALICE, owner: ALICE, epoch: 10, data: 'd0', block_id: 'b0', transaction_type: 'deploy', value: 2 },
          { transactionId: 't1', initiator: ALICE, owner: BOB, epoch: 20, data: 'd1', block_id: 'b1', transaction_type: 'transfer', value: 2 }]
      : [],
    transact: async (body: unknown) => { calls.push({ transact: body }); return CHALLENGE },
    subscribe: async (id: string) => { calls.push({ subscribe: id }) },
    fetch: async () => ({ message: 'NFT fetched successfully', path: '/x' })
  } as never
  Object.assign(s.tokens, {
    nftBalance: async (did: string) => did === ALICE ? [{ nft_id: NFT, value: 2 }] : [],
    chain: async () => ({ blocks: [{ envelope: 'AAEC' }], next_block_id: '' })
  })
  return { s, calls }
}

describe('api: the reference /api NFT routes', () => {
  const { s, calls } = services()
  const app = createApp(s, { version: 't' })

  it('POST /api/create-nft (multipart did, metadata, artifact): the NFT id as result; a missing file is status false on 200', async () => {
    const form = new FormData()
    form.set('did', ALICE)
    form.set('metadata', new Blob(['{"a":1}']), 'metadata.json')
    form.set('artifact', new Blob(['art']), 'art.png')
    expect(await call(app, 'POST', '/api/create-nft', form)).to.deep.equal({ status: 200, env: { status: true, message: 'NFT Token generated successfully', result: NFT } })
    expect(calls).to.deep.include({ generate: ALICE, metadata: '{"a":1}', artifact: 'art' })
    const bad = new FormData()
    bad.set('did', ALICE)
    const r = await call(app, 'POST', '/api/create-nft', bad)
    expect(r.status).to.equal(200)
    expect(r.env).to.deep.equal({ status: false, message: 'Creation of NFT failed, failed to retrieve metadata', result: null })
  })

  it('POST /api/deploy-nft and /api/execute-nft: the challenge, over the NFT transaction', async () => {
    expect(await call(app, 'POST', '/api/deploy-nft', { nft: NFT, did: ALICE, quorum_type: 2, nft_value: 2, nft_data: 'd' })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ transact: { initiator: ALICE, owner: ALICE, nft: [{ nftId: NFT, value: 2, data: 'd' }] } })
    expect(await call(app, 'POST', '/api/execute-nft', { nft: NFT, owner: `${PEER}.${ALICE}`, receiver: BOB, quorum_type: 2, comment: 'c', nft_value: 3 })).to.deep.equal({ status: 200, env: CHALLENGE })
    expect(calls).to.deep.include({ transact: { initiator: ALICE, owner: BOB, nft: [{ nftId: NFT, value: 3 }], transferNftOwnership: true, memo: 'c' } })
    expect((await call(app, 'POST', '/api/deploy-nft', { nft: 'x!', did: ALICE, nft_value: 1 })).status).to.equal(400)
  })

  it('POST /api/subscribe-nft, GET /api/fetch-nft', async () => {
    expect(await call(app, 'POST', '/api/subscribe-nft', { nft: NFT })).to.deep.equal({ status: 200, env: { status: true, message: 'NFT subscribed successfully', result: null } })
    expect(await call(app, 'GET', `/api/fetch-nft?nft=${NFT}`)).to.deep.equal({ status: 200, env: { status: true, message: 'NFT fetched successfully', result: null } })
  })

  it('GET /api/list-nfts, /api/get-nfts-by-did: nfts [{nft, owner_did, nft_value}]', async () => {
    const row = { nft: NFT, owner_did: ALICE, nft_value: 2 }
    expect(await call(app, 'GET', `/api/list-nfts?did=${ALICE}`)).to.deep.equal({ status: 200, env: { status: true, message: 'Got All NFTs', result: null, nfts: [row] } })
    expect(await call(app, 'GET', `/api/get-nfts-by-did?did=${ALICE}`)).to.deep.equal({ status: 200, env: { status: true, message: 'Got All NFTs', result: null, nfts: [row] } })
  })

  it('GET /api/get-nft-token-chain-data?nft=&latest=: NFTDataReply', async () => {
    let r = await call(app, 'GET', `/api/get-nft-token-chain-data?nft=${NFT}`)
    expect(r.status).to.equal(200)
    expect(r.env).to.deep.include({ status: true, message: 'Fetched NFT data', result: null })
    expect(r.env.NFTDataReply).to.deep.equal([
      { BlockNo: 0, BlockId: 'b0', NFTData: 'd0', NFTOwner: ALICE, NFTValue: 2, Epoch: 10 },
      { BlockNo: 1, BlockId: 'b1', NFTData: 'd1', NFTOwner: BOB, NFTValue: 2, Epoch: 20 }
    ])
    r = await call(app, 'GET', `/api/get-nft-token-chain-data?nft=${NFT}&latest=true`)
    expect(r.env.NFTDataReply).to.deep.equal([{ BlockNo: 1, BlockId: 'b1', NFTData: 'd1', NFTOwner: BOB, NFTValue: 2, Epoch: 20 }])
    r = await call(app, 'GET', `/api/get-nft-token-chain-data?nft=Qm${'z'.repeat(44)}`)
    expect(r.env).to.deep.equal({ status: false, message: 'Failed to get NFT data, token does not exist', result: null, NFTDataReply: null })
    expect((await call(app, 'GET', `/api/get-nft-token-chain-data?nft=${NFT}&latest=maybe`)).status).to.equal(400)
  })

  it('GET /api/dump-nft-token-chain?nft=&blockId=: blocks and next_block_id', async () => {
    expect(await call(app, 'GET', `/api/dump-nft-token-chain?nft=${NFT}&blockId=`)).to.deep.equal({ status: 200, env: { status: true, message: 'Successfully got nft token chain block', result: null, next_block_id: '', blocks: ['AAEC'] } })
  })
})
