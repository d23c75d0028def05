import { ok } from '../../../contract/envelope.js'
import type { ApiServices, NftApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { generateFromUpload } from '../v1/nfts.routes.js'
import { answered, didOf, withKeys } from './answer.js'

/** The reference's `/api` NFT routes (legacy-api.md §7) over the /svc/v1 NFT, token and transaction services. */
export function legacyNftRoutes (r: Registrar, s: ApiServices): void {
  const nfts = (): NftApi => {
    if (s.nfts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'NFTs are not served by this node')
    return s.nfts
  }
  r.on('legacyCreateNft', async ({ c }) => await answered(async () => {
    return ok('NFT Token generated successfully', await generateFromUpload(c, nfts()))
  }))
  r.on('legacyDeployNft', async ({ body }) => await answered(async () => {
    const did = didOf(body.did)
    return await nfts().transact({ initiator: did, owner: did, nft: [{ nftId: body.nft, value: body.nft_value, ...(body.nft_data !== undefined ? { data: body.nft_data } : {}) }] })
  }))
  r.on('legacyExecuteNft', async ({ body }) => await answered(async () => {
    const owner = didOf(body.owner)
    const receiver = body.receiver !== undefined && body.receiver !== '' ? didOf(body.receiver) : owner
    return await nfts().transact({
      initiator: owner,
      owner: receiver,
      nft: [{ nftId: body.nft, value: body.nft_value, ...(body.nft_data !== undefined ? { data: body.nft_data } : {}) }],
      transferNftOwnership: receiver !== owner,
      ...(body.comment !== undefined ? { memo: body.comment } : {})
    })
  }))
  r.on('legacySubscribeNft', async ({ body }) => await answered(async () => {
    await nfts().subscribe(body.nft)
    return ok('NFT subscribed successfully', null)
  }))
  r.on('legacyFetchNft', async ({ query }) => await answered(async () => ok((await nfts().fetch(query.nft)).message, null)))
  r.on('legacyListNfts', async () => await answered(async () => {
    const list = (await nfts().list()).map((n) => ({ nft: n.nft_id, owner_did: n.owner, nft_value: n.value }))
    return withKeys(ok('Got All NFTs', null), { nfts: list })
  }, { nfts: null }))
  r.on('legacyGetNftsByDid', async ({ query }) => await answered(async () => {
    const list = (await s.tokens.nftBalance(query.did)).map((n) => ({ nft: n.nft_id, owner_did: query.did, nft_value: n.value }))
    return withKeys(ok('Got All NFTs', null), { nfts: list })
  }, { nfts: null }))
  r.on('legacyGetNftTokenChainData', async ({ query }) => await answered(async () => {
    const chain = await nfts().chain(query.nft)
    if (chain.length === 0) throw new RbtError(ErrorCode.NOT_FOUND, 'Failed to get NFT data, token does not exist')
    const latest = query.latest !== undefined && /^(1|t|true)$/i.test(query.latest)
    const states = (latest ? chain.slice(-1) : chain).map((b) => ({
      BlockNo: chain.indexOf(b), BlockId: b.block_id, NFTData: b.data, NFTOwner: b.owner, NFTValue: b.value, Epoch: b.epoch
    }))
    return withKeys(ok('Fetched NFT data', null), { NFTDataReply: states })
  }, { NFTDataReply: null }))
  r.on('legacyDumpNftTokenChain', async ({ query }) => await answered(async () => {
    const dump = await s.tokens.chain(query.nft, query.blockId !== undefined && query.blockId !== '' ? { afterBlockId: query.blockId } : {})
    return withKeys(ok('Successfully got nft token chain block', null), { next_block_id: dump.next_block_id, blocks: dump.blocks.map((b) => b.envelope) })
  }, { next_block_id: '', blocks: null }))
}
