import type { RouteId } from '../../../contract/routes.js'
import type { ApiServices } from '../../services.js'
import { ErrorCode, RbtError } from '../../../../util/errors.js'
import type { Registrar } from '../../registrar.js'
import { answered } from './answer.js'
import { ok } from '../../../contract/envelope.js'

/**
 * The reference's remaining `/api` routes (legacy-api.md §9). What this node does is adapted; what
 * it does not do answers status false (HTTP 200) with the alternative in `message`.
 */
export const NOT_DONE = {
  legacyGetDidChallenge: "this node does not use DID logins or per-DID API keys: start it with -apiAuth and send Authorization: Bearer <the token in api.cookie> (docs/security.md)",
  legacyLoginDid: "this node does not use DID logins or per-DID API keys: start it with -apiAuth and send Authorization: Bearer <the token in api.cookie> (docs/security.md)",
  legacyAddUserApiKey: "this node does not use DID logins or per-DID API keys: start it with -apiAuth and send Authorization: Bearer <the token in api.cookie> (docs/security.md)",
  legacySetupDb: "the node's own storage needs no setup; the explorer database is set up with POST /svc/v1/services/setup",
  legacyMigrateNode: "migrating a Java-node wallet is not supported by this node; create DIDs with /api/createdid or import them with /api/setup-did, and recover a wallet with POST /svc/v1/sync",
  legacyLockTokens: "locking tokens by hand (the reference's arbitrary mode) is not supported; a transfer locks the tokens it spends, and /api/release-all-locked-tokens frees those of transfers that can no longer commit",
  legacyCreateDataToken: "data tokens are not supported by this node; RBT, FT, NFT and smart-contract tokens are (see docs/api.md)",
  legacyCommitDataToken: "data tokens are not supported by this node; RBT, FT, NFT and smart-contract tokens are (see docs/api.md)",
  legacyCheckDataToken: "data tokens are not supported by this node; RBT, FT, NFT and smart-contract tokens are (see docs/api.md)",
  legacyGetDataToken: "data tokens are not supported by this node; RBT, FT, NFT and smart-contract tokens are (see docs/api.md)",
  legacyPublishSmartContract: "this node publishes every new contract state itself after a deploy or an execution; follow a contract with /api/subscribe-smart-contract",
  legacyRemoveTokenChainBlock: "token chains are append-only on this node; a chain is rebuilt from the network with POST /svc/v1/sync",
  legacyGetAllExplorer: "explorer links are not kept by this node; the explorer database is set up with POST /svc/v1/services/setup",
  legacyAddExplorer: "explorer links are not kept by this node; the explorer database is set up with POST /svc/v1/services/setup",
  legacyRemoveExplorer: "explorer links are not kept by this node; the explorer database is set up with POST /svc/v1/services/setup",
  legacyUnpledgePowUnpledgeTokens: "proof-of-work pledges are not made by this node; its quorums' pledges are released by /api/run-unpledge (the release-2.6 PoW unpledge is served on the -legacyPort listener)",
  legacyInitiatePinToken: "pinning RBT on a pinning node is not supported by this node; send RBT with /api/initiate-rbt-transfer",
  legacyRecoverToken: "pinning RBT on a pinning node is not supported by this node; send RBT with /api/initiate-rbt-transfer",
  legacyFaucetTokenCheck: "faucet tokens are not told apart by this node; a token's chain is checked with /api/validate-token-chain",
  legacyValidateToken: "use /api/validate-token-chain?did=&token= (GET /svc/v1/tokens/validate_chain): it validates the token's genesis, every block and its ownership",
  legacySendJwtFromWallet: "transfers signed by a wallet's JWT are not supported by this node; use /api/initiate-rbt-transfer and answer the signature request with /api/signature-response",
} as const satisfies Partial<Record<RouteId, string>>

export function legacyOtherRoutes (r: Registrar, s: ApiServices): void {
  r.on('legacyRequestDidForPubkey', async ({ body, c }) => {
    const res = await answered(async () => {
      const { did } = await s.identity.create({ type: 4, public_key: body.public_key })
      return { status: true, message: 'DID created successfully', result: { did } }
    })
    // as the reference: the DID alone, without the envelope, on success
    return res.status && res.result !== null ? c.json({ did: res.result.did }) as never : res
  })
  r.on('legacySetupService', async ({ body }) => await answered(async () => {
    if (s.services === undefined) throw new RbtError(ErrorCode.NOT_FOUND, 'no services are available on this node')
    const { db_user_name: user, ...rest } = body
    await s.services.setup({ ...rest, ...(user !== undefined ? { db_username: user } : {}) })
    return ok('Service enabled successfully', null)
  }))
  for (const id of Object.keys(NOT_DONE) as Array<keyof typeof NOT_DONE>) {
    r.on(id, async () => await answered(async () => { throw new RbtError(ErrorCode.NOT_FOUND, NOT_DONE[id]) }))
  }
}
