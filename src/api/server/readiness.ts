/**
 * What the API answers while the node's core is starting (the p2p host and every component's
 * network part). The routes below read only the node's own store, which is open before the API
 * listens: they answer at once, truthfully. Every other route may need the network (a peer, the
 * DHT, a quorum), so while the core is starting its request waits for the core to be up (at most
 * CORE_WAIT_MS, then 503 NOT_RUNNING "the node is starting"), and is then handled as on a node that
 * was up all along. A node started with -s=false is not starting: nothing waits.
 */
import type { RouteId } from '../contract/routes.js'

export const LOCAL_ROUTES: ReadonlySet<RouteId> = new Set<RouteId>([
  'nodeStatus', 'nodeOverview', 'nodeStart', 'nodeShutdown', 'openapi',
  'bootstrapList', 'quorumsList', 'didList', 'servicesGet',
  'didBalances', 'didBalancesRbt', 'didBalancesFt', 'didBalancesNft', 'tokensList', 'tokenChain',
  'txList', 'txGet', 'txByDid', 'nodeTxCounts', 'ftsList', 'nftsList', 'scList', 'quorumsPledgedTokens',
  'legacyGetAllDid', 'legacyGetAccountInfo', 'legacyNodeStatus', 'legacyStart', 'legacyShutdown',
  'legacyGetAllBootstrap', 'legacyGetAllQuorum', 'legacyGetAllTokens', 'legacyGetFtInfoByDid',
  'legacyListNfts', 'legacyGetNftsByDid', 'legacyGetPledgedTokenDetails', 'legacyGetAllExplorer',
  'legacyGetByTxnId', 'legacyGetByComment', 'legacyGetByDid'
])

/** How long a request that needs the network waits for a starting core. */
export const CORE_WAIT_MS = 60_000
