import { ok } from '../../../contract/envelope.js'
import type { ApiServices, NftApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { parseUpload } from '../../multipart.js'

export const NFT_UPLOAD_FILES = ['metadata', 'artifact'] as const
/** Whole upload and per file; the metadata has its own, smaller limit in the service. */
export const NFT_ROUTE_LIMITS = { maxBytes: 24 * 1024 * 1024, maxFileBytes: 16 * 1024 * 1024 }

export function nftRoutes (r: Registrar, s: ApiServices): void {
  const nfts = (): NftApi => {
    if (s.nfts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'NFTs are not served by this node')
    return s.nfts
  }
  r.on('nftsGenerate', async ({ c }) => {
    const up = await parseUpload(c, NFT_UPLOAD_FILES, NFT_ROUTE_LIMITS)
    const id = await nfts().generate(up.fields.did ?? '', up.files.metadata, up.files.artifact, up.fields.artifact_name ?? 'artifact')
    return ok('NFT Token generated successfully', id)
  })
  r.on('nftsList', async () => ok('Nfts retrieved successfully', await nfts().list()))
  r.on('nftsSubscribe', async ({ query }) => { await nfts().subscribe(query.nft); return ok('NFT subscribed successfully', null) })
  r.on('nftChain', async ({ params }) => ok('Nft chain data retrieved successfully', await nfts().chain(params.nft_id)))
  r.on('nftChildren', async ({ params }) => {
    const list = await nfts().children(params.nft_id)
    return ok(list.length > 0 ? 'got child NFTs successfully' : 'no child NFTs found', list)
  })
  r.on('nftParent', async ({ params }) => {
    const p = await nfts().parent(params.nft_id)
    return ok(p !== null ? 'got parent NFT successfully' : 'no parent NFT', p)
  })
  r.on('nftFetch', async ({ query }) => {
    const res = await nfts().fetch(query.nft)
    return ok(res.message, { path: res.path })
  })
}
