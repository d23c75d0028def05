/**
 * Paths and methods of every route, with no runtime dependencies: the CLI client imports this
 * (fast start-up); routes.ts adds the schemas the server validates with and OpenAPI documents.
 */
import { legacyApiPaths } from './legacy-api-paths.js'

export const paths = {
  ...legacyApiPaths,
  nodeStart: { method: 'GET', path: '/svc/v1/node/start' },
  nodeShutdown: { method: 'POST', path: '/svc/v1/node/shutdown' },
  nodePeerId: { method: 'GET', path: '/svc/v1/node/peer_id' },
  nodePing: { method: 'GET', path: '/svc/v1/node/ping' },
  nodeAddPeers: { method: 'POST', path: '/svc/v1/node/add_peers' },
  nodeStatus: { method: 'GET', path: '/svc/v1/node/status' },
  nodeOverview: { method: 'GET', path: '/svc/v1/node/overview' },
  bootstrapAdd: { method: 'POST', path: '/svc/v1/bootstrap/add' },
  bootstrapRemove: { method: 'POST', path: '/svc/v1/bootstrap/remove' },
  bootstrapList: { method: 'GET', path: '/svc/v1/bootstrap' },
  bootstrapRemoveAll: { method: 'POST', path: '/svc/v1/bootstrap/remove_all' },
  openapi: { method: 'GET', path: '/svc/v1/openapi.json' },
  tokensGenerateLocalRbt: { method: 'POST', path: '/svc/v1/tokens/generate_local_rbt' },
  tokensList: { method: 'GET', path: '/svc/v1/tokens' },
  tokenChain: { method: 'GET', path: '/svc/v1/tokens/:token_id/chain' },
  didBalances: { method: 'GET', path: '/svc/v1/dids/:did/balances' },
  didBalancesRbt: { method: 'GET', path: '/svc/v1/dids/:did/balances/rbt' },
  didBalancesFt: { method: 'GET', path: '/svc/v1/dids/:did/balances/ft' },
  didBalancesNft: { method: 'GET', path: '/svc/v1/dids/:did/balances/nft' },
  legacyGetAccountInfo: { method: 'GET', path: '/api/get-account-info' },
  didCreate: { method: 'POST', path: '/svc/v1/dids/create' },
  didList: { method: 'GET', path: '/svc/v1/dids' },
  didSetup: { method: 'POST', path: '/svc/v1/dids/setup' },
  didRegister: { method: 'POST', path: '/svc/v1/dids/:did/register' },
  didPublicKey: { method: 'GET', path: '/svc/v1/dids/:did/public_key' },
  didResolve: { method: 'GET', path: '/svc/v1/dids/:did/resolve' },
  signatureComplete: { method: 'POST', path: '/svc/v1/signature' },
  signatureArbitrary: { method: 'POST', path: '/svc/v1/signature/arbitrary' },
  signatureVerify: { method: 'GET', path: '/svc/v1/signature/verify' },
  legacySignatureResponse: { method: 'POST', path: '/api/signature-response' },
  quorumsAdd: { method: 'POST', path: '/svc/v1/quorums/add' },
  quorumsList: { method: 'GET', path: '/svc/v1/quorums' },
  quorumsRemoveAll: { method: 'GET', path: '/svc/v1/quorums/remove_all' },
  quorumsSetup: { method: 'POST', path: '/svc/v1/quorums/setup' },
  quorumsStatus: { method: 'GET', path: '/svc/v1/quorums/status' },
  txInitiate: { method: 'POST', path: '/svc/v1/tx' },
  txList: { method: 'GET', path: '/svc/v1/tx' },
  txGet: { method: 'GET', path: '/svc/v1/tx/:tx_id' },
  txByDid: { method: 'GET', path: '/svc/v1/tx/:did/:token_type' },
  nftsGenerate: { method: 'POST', path: '/svc/v1/nfts/generate' },
  nftsList: { method: 'GET', path: '/svc/v1/nfts' },
  nftsSubscribe: { method: 'GET', path: '/svc/v1/nfts/subscribe' },
  nftChain: { method: 'GET', path: '/svc/v1/nfts/:nft_id/chain' },
  nftChildren: { method: 'GET', path: '/svc/v1/nfts/:nft_id/children' },
  nftParent: { method: 'GET', path: '/svc/v1/nfts/:nft_id/parent' },
  nftFetch: { method: 'GET', path: '/svc/v1/fetch-nft' },
  scGenerate: { method: 'POST', path: '/svc/v1/smart_contracts/generate' },
  scList: { method: 'GET', path: '/svc/v1/smart_contracts' },
  scChain: { method: 'GET', path: '/svc/v1/smart_contracts/:contract_id/chain' },
  scSubscribe: { method: 'GET', path: '/svc/v1/smart_contracts/subscribe' },
  scRegisterCallback: { method: 'POST', path: '/svc/v1/smart_contracts/register_callback' },
  scFetch: { method: 'GET', path: '/svc/v1/smart_contracts/fetch' },
  tokensFaucet: { method: 'POST', path: '/svc/v1/tokens/generate_faucet_test' },
  ftsMint: { method: 'POST', path: '/svc/v1/fts/mint' },
  ftsList: { method: 'GET', path: '/svc/v1/fts' },
  legacyInitiateRbtTransfer: { method: 'POST', path: '/api/initiate-rbt-transfer' },
  legacyGetByTxnId: { method: 'GET', path: '/api/get-by-txnId' },
  legacyGetByComment: { method: 'GET', path: '/api/get-by-comment' },
  legacyGetByDid: { method: 'GET', path: '/api/get-by-did' },
  servicesSetup: { method: 'POST', path: '/svc/v1/services/setup' },
  servicesGet: { method: 'GET', path: '/svc/v1/services/:service_name' },
  sync: { method: 'POST', path: '/svc/v1/sync' },
  syncTransactionChain: { method: 'POST', path: '/svc/v1/sync-transaction-chain' },
  tokensReleaseLocked: { method: 'POST', path: '/svc/v1/tokens/release_locked' },
  tokensValidateChain: { method: 'GET', path: '/svc/v1/tokens/validate_chain' },
  quorumsPledgedTokens: { method: 'GET', path: '/svc/v1/quorums/pledged_tokens' },
  tokensClaims: { method: 'GET', path: '/svc/v1/tokens/claims' },
  quorumsRunUnpledge: { method: 'POST', path: '/svc/v1/quorums/run_unpledge' },
  doubleSpends: { method: 'GET', path: '/svc/v1/double-spends' },
  arbitersDistrusted: { method: 'GET', path: '/svc/v1/arbiters/distrusted' },
  arbiters: { method: 'GET', path: '/svc/v1/arbiters' },
  arbitersRegister: { method: 'POST', path: '/svc/v1/arbiters/register' },
  nodeTxCounts: { method: 'GET', path: '/svc/v1/node/tx_counts' },
  txSelfTransfer: { method: 'POST', path: '/svc/v1/tx/self_transfer' },
  p2pPeers: { method: 'GET', path: '/svc/v1/p2p/peers' },
  p2pConnect: { method: 'POST', path: '/svc/v1/p2p/connect' },
  p2pProvide: { method: 'POST', path: '/svc/v1/p2p/provide' },
  p2pProviders: { method: 'GET', path: '/svc/v1/p2p/providers' },
  p2pPeerService: { method: 'GET', path: '/svc/v1/p2p/peer_service' }
} as const

export type RouteId = keyof typeof paths

/** Fill `:name` params of a route path. */
export function buildPath (path: string, params: Record<string, string> = {}): string {
  return path.replace(/:([A-Za-z_]+)/g, (_m, name: string) => {
    const v = params[name]
    if (v === undefined) throw new Error(`missing path parameter ${name}`)
    return encodeURIComponent(v)
  })
}
