import { fail, ok } from '../../../contract/envelope.js'
import type { ApiServices } from '../../services.js'
import type { OperatorApi } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { blockCountOf } from '../v1/operator.routes.js'
import { answered, didOf, withKeys } from './answer.js'

/**
 * The reference's `/api` RBT token, transaction and diagnostic routes (legacy-api.md §5), each over
 * the service its /svc/v1 route uses (docs/api.md, "The reference's /api routes").
 */
export function legacyTokenRoutes (r: Registrar, s: ApiServices): void {
  const op = (): OperatorApi => {
    if (s.operator === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'operator features are not served by this node')
    return s.operator
  }
  r.on('legacyGenerateTestToken', async ({ body }) => await answered(async () =>
    await s.tokens.generateLocalRbt({ did: body.did, number_of_tokens: body.number_of_tokens })))
  r.on('legacyGenerateFaucetTestToken', async ({ body }) => await answered(async () => await s.consensus.faucet(body.did, body.token_count)))
  r.on('legacyInitiateSelfTransfer', async ({ body }) => await answered(async () => await op().selfTransfer(didOf(body.sender), {})))
  r.on('legacyGetAllTokens', async ({ query }) => await answered(async () => {
    if (query.type?.toUpperCase() === 'DT') throw new RbtError(ErrorCode.INVALID_INPUT, 'Invalid token type: data tokens are not served by this node; use RBT, FT, NFT or SC')
    const type = query.type === undefined || query.type === '' ? 'rbt' : query.type.toUpperCase() === 'SC' ? 'smartContract' : query.type
    const list = await s.tokens.list(query.did, type)
    return withKeys(ok('Got all tokens', null), { token_detials: list.map((t) => ({ token: t.token_id, status: t.token_status_code })) })
  }, { token_detials: null }))
  r.on('legacyDumpTokenChain', async ({ body }) => await answered(async () => {
    const dump = await s.tokens.chain(body.token, body.block_id !== undefined && body.block_id !== '' ? { afterBlockId: body.block_id } : {})
    return withKeys(ok('Successfully got the token chain block', null), { next_block_id: dump.next_block_id, blocks: dump.blocks.map((b) => b.envelope) })
  }, { next_block_id: '', blocks: null }))
  r.on('legacyCheckPinnedState', async () => await answered(async () => {
    // the reference looks for IPFS pins of a pledged token state; this node does not pin token
    // states: a quorum's pledge is released once a spend of the state it backs is proven
    throw new RbtError(ErrorCode.NOT_FOUND, 'check-pinned-state is not done by this node: pledges are released when a spend of the token state they back is proven; see GET /api/get-pledgedtoken-details (GET /svc/v1/quorums/pledged_tokens) and POST /api/run-unpledge (POST /svc/v1/quorums/run_unpledge)')
  }))
  r.on('legacyGetByNode', async () => await answered(async () => {
    const counts = await op().txCounts()
    return withKeys(counts.length === 0 ? fail('no DIDs on this node') as never : ok('Got transaction counts of the DIDs of this node', null), { TxnCount: counts })
  }, { TxnCount: null }))
  r.on('legacyGetPledgedTokenDetails', async () => await answered(async () => {
    const items = await op().pledgedTokens()
    return withKeys(ok('Got pledged tokens with token states info successfully', null), { token_state_details: items })
  }, { token_state_details: null }))
  r.on('legacyRunUnpledge', async () => await answered(async () => {
    const res = await op().runUnpledge()
    return ok(res.tokens.length === 0 ? 'No tokens present to unpledge' : `Unpledging of pledged tokens was successful, Total Unpledge Amount: ${res.released} RBT`, res)
  }))
  r.on('legacyReleaseAllLockedTokens', async () => await answered(async () => {
    const res = await op().releaseLocked()
    return ok(res.kept.length === 0
      ? 'All Locked Tokens Releases Successfully Or NO Locked Tokens to release'
      : `Released ${res.released.length} locked token(s); kept ${res.kept.length} held by transactions that may still commit`, res)
  }))
  r.on('legacyValidateTokenChain', async ({ query }) => await answered(async () => {
    const res = await op().validateChains(query.did, query.token === '' ? undefined : query.token, { blockCount: blockCountOf(query.blockcount) })
    const bad = res.tokens.find((t) => !t.valid)
    if (bad?.bad_block != null) return fail(`token ${bad.token}: block ${bad.bad_block.block_number} failed the ${bad.bad_block.check} check: ${bad.bad_block.reason}`, res) as never
    return ok('token chain validated successfully', res)
  }))
}
