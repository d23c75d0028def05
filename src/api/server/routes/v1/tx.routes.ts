import { ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'

const TOKEN_TYPES = new Set(['rbt', 'ft', 'nft', 'smartcontract'])

/** SPEC: `tokens.rbt` is 0 when no RBT is transferred; a missing, 0 or "0.000" amount carries none. */
export function carriesRbt (rbt: unknown): boolean {
  if (rbt === undefined || rbt === null || rbt === '') return false
  if (typeof rbt === 'number') return rbt !== 0
  return typeof rbt !== 'string' || !/^\s*0*(\.0*)?\s*$/.test(rbt)
}

export function txRoutes (r: Registrar, s: ApiServices): void {
  r.on('txInitiate', async ({ body }) => {
    const t = body.tokens
    if ((t.nft?.length ?? 0) > 0) {
      if (carriesRbt(t.rbt) || (t.ft?.length ?? 0) > 0 || (t.smartContract?.length ?? 0) > 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'mixing NFTs with RBT, FT or smart-contract tokens in one transaction is not available; send them separately')
      if (s.nfts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'NFTs are not served by this node')
      return await s.nfts.transact({ initiator: body.initiator, owner: body.owner, nft: t.nft!, transferNftOwnership: t.transferNftOwnership, memo: body.memo })
    }
    if ((t.smartContract?.length ?? 0) > 0) {
      if (carriesRbt(t.rbt) || (t.ft?.length ?? 0) > 0) throw new RbtError(ErrorCode.INVALID_INPUT, 'mixing smart contracts with RBT or FT tokens in one transaction is not available; send them separately')
      if (s.contracts === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'smart contracts are not served by this node')
      return await s.contracts.transact({ initiator: body.initiator, smartContract: t.smartContract!, memo: body.memo })
    }
    const rbt = t.rbt ?? 0
    return await s.consensus.transfer({
      initiator: body.initiator,
      owner: body.owner,
      rbt,
      memo: body.memo,
      hasFt: (t.ft?.length ?? 0) > 0,
      ...((t.ft?.length ?? 0) > 0 ? { ft: t.ft } : {}),
      hasNft: (t.nft?.length ?? 0) > 0,
      hasSmartContract: (t.smartContract?.length ?? 0) > 0
    })
  })
  r.on('txList', async () => ok('Got all transactions', await s.consensus.transactions()))
  r.on('txGet', async ({ params }) => ok('Got the transaction', await s.consensus.transaction(params.tx_id)))
  r.on('txByDid', async ({ params, query }) => {
    if (!TOKEN_TYPES.has(params.token_type.toLowerCase())) throw new RbtError(ErrorCode.INVALID_INPUT, 'token_type must be one of rbt, ft, nft, smartContract')
    if (!/^bafybmi[a-z2-7]{52}$/.test(params.did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
    return ok('Got transactions', await s.consensus.byDid(params.did, params.token_type, query))
  })
  r.on('tokensFaucet', async ({ body }) => await s.consensus.faucet(body.did, body.token_count))
}
