import type { DidPublicInfo, NodeOverview, NodeStatus } from '../api/contract/routes.js'
import type { Envelope } from '../api/contract/envelope.js'

/**
 * What the HTTP layer may ask of the node. The server imports these types only; the composition
 * root (node/rbt-node.ts) provides the implementations.
 */
export interface NodeApi {
  status: () => NodeStatus
  /** `GET /svc/v1/node/overview` (optional for stubs that serve other routes: NOT_RUNNING without it) */
  overview?: () => Promise<NodeOverview>
  /** Starts the core (p2p host and services); idempotent. Returns a human message. */
  startCore: () => Promise<string>
  /** Schedules a graceful shutdown after the current response is sent. */
  requestShutdown: () => void
  /** Peer id of the running core; throws NOT_RUNNING before the core starts. */
  peerId: () => string
  ping: (peerId: string) => Promise<{ rttMs: number, message: string }>
  addPeer: (did: string, peerId: string, didType?: number) => Promise<void>
}

export interface BootstrapApi {
  list: () => Promise<string[]>
  add: (peers: string[]) => Promise<string[]>
  remove: (peers: string[]) => Promise<string[]>
  removeAll: () => Promise<string[]>
}

/** Fields of a DID creation (JSON body or the multipart did_config), plus uploaded files by canonical name. */
export interface DidCreateInput {
  type?: number
  password?: string
  quorum_password?: string
  secret?: string
  public_key?: string
  private_key?: string
  mnemonic?: string
  childPath?: number
  files?: Record<string, Uint8Array>
}

export interface DidSetupInput {
  type: number
  password?: string
  quorum_password?: string
  files: Record<string, Uint8Array>
}

export interface IdentityApi {
  create: (input: DidCreateInput) => Promise<{ did: string, peer_id: string | null }>
  setup: (input: DidSetupInput) => Promise<{ did: string, peer_id: string | null }>
  list: () => Promise<string[]>
  /** Two-step: the challenge first, the final envelope through SigningApi.complete. */
  register: (did: string) => Promise<Envelope<unknown>>
  signArbitrary: (did: string, msg: string) => Promise<Envelope<unknown>>
  verifyArbitrary: (did: string, msg: string, signature: string) => Promise<boolean>
  publicInfo: (did: string) => Promise<DidPublicInfo>
  resolve: (did: string) => Promise<{ did: string, peer_id: string, did_type: number | null, source: string }>
}

export interface SigningApi {
  complete: (id: string, answer: { password?: string, signature?: string, pixels?: string }) => Promise<Envelope<unknown>>
}

export type { TokenApi } from './token-api.js'

/** What the NFT routes need (node/nft/nft-service.ts implements it). */
export type NftApi = Pick<import('./nft/nft-service.js').NftService, 'generate' | 'list' | 'chain' | 'children' | 'parent' | 'transact' | 'subscribe' | 'fetch'>

/** What the smart-contract routes need (node/sc/sc-service.ts implements it). */
export type ScApi = Pick<import('./sc/sc-service.js').ScService, 'generate' | 'list' | 'chain' | 'transact' | 'subscribe' | 'fetch' | 'registerCallback'>
export type { FtApi } from './ft-api.js'

export interface ServicesApi {
  setup: (input: import('./explorer/explorer-service.js').ServiceSetupInput) => Promise<import('../api/contract/routes.js').ExplorerConfigView>
  get: (serviceName: string) => { config: import('../api/contract/routes.js').ExplorerConfigView | null, status: import('../api/contract/routes.js').ExplorerStatus }
}

export interface ApiServices {
  consensus: import('./consensus/consensus-api.js').ConsensusApi
  tokens: import('./token-api.js').TokenApi
  node: NodeApi
  bootstrap: BootstrapApi
  identity: IdentityApi
  signing: SigningApi
  /** NFTs; absent in API tests that do not need them (the routes then answer 503) */
  nfts?: NftApi
  /** Smart contracts; absent in API tests that do not need them */
  contracts?: ScApi
  /** FTs; absent in API tests that do not need them (the routes then answer 404) */
  fts?: import('./ft-api.js').FtApi
  /** The explorer service (setupservice); absent in API tests that do not need it. */
  services?: ServicesApi
  /** Wallet recovery and chain sync; absent in API tests that do not need it. */
  sync?: import('./sync/sync-api.js').SyncApi
  /** The operator features (release of Locked tokens, chain validation, pledges); absent in API tests that do not need them. */
  operator?: import('./operator-api.js').OperatorApi
}
