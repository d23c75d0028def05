import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { Registrar } from '../../registrar.js'

/** Local RBT minting, token lists, token chains and balances. */
export function tokenRoutes (r: Registrar, s: ApiServices): void {
  r.on('tokensGenerateLocalRbt', async ({ body }) => await s.tokens.generateLocalRbt(body))
  r.on('tokensList', async ({ query }) => ok('Got all tokens', await s.tokens.list(query.did, query.type)))
  r.on('tokenChain', async ({ params, query }) => {
    const dump = await s.tokens.chain(params.token_id ?? '', { afterBlockId: query.block_id, limit: query.limit, maps: query.maps === 'true' })
    return ok(`Token chain of ${dump.token_id}: ${dump.blocks.length} of ${dump.length} blocks`, dump)
  })
  r.on('didBalances', async ({ params }) => ok('Got account info successfully', await s.tokens.balances(params.did ?? '')))
  r.on('didBalancesRbt', async ({ params }) => ok('Got account info successfully', await s.tokens.rbtBalance(params.did ?? '')))
  r.on('didBalancesFt', async ({ params }) => {
    const list = await s.tokens.ftBalance(params.did ?? '')
    return ok(list.length === 0 ? 'No FTs found' : 'Got FT info successfully', list)
  })
  r.on('didBalancesNft', async ({ params }) => ok('got NFTs balance successfully', await s.tokens.nftBalance(params.did ?? '')))
}
