/**
 * What the HTTP layer asks of the node: one interface per feature, owned here, on the API side.
 * Routes import these types only; the node's feature components implement them (the composition
 * root hands them to createApp). Results are the contract's shapes (src/api/contract).
 */
import type { DidPublicInfo, ExplorerConfigView, ExplorerStatus, NodeOverview, NodeStatus, P2pPeer, PeerMapHeard, SyncSummaryResult, SyncTransactionChainResult, TxResult } from '../contract/routes.js'
import type { Envelope, PendingSignature } from '../contract/envelope.js'
import type { AccountInfoResult, BalancesResult, FtBalanceResult, MintLocalRbtResult, NftBalanceResult, RbtBalanceResult, TokenChainResult, TokenListItemResult } from '../contract/token-results.js'
import type { FtListItemResult, FtMintResult } from '../contract/ft-results.js'
import type { NftChainItem, NftListItem, NftTxResult } from '../contract/nft-results.js'
import type { ScChainItem, ScListItem, ScTxResult } from '../contract/sc-results.js'
import type { ArbiterItem, ArbitersResult, DistrustedArbiterItem, DoubleSpendItem, PledgedTokenItem, ReleaseLockedResult, TokenClaimsResult, RunUnpledgeResult, SelfTransferResult, TxCountItem, ValidateChainResult } from '../contract/operator-results.js'

export interface NodeApi {
  status: () => NodeStatus
  /** `GET /svc/v1/node/overview` (optional for stubs that serve other routes: NOT_RUNNING without it) */
  overview?: () => Promise<NodeOverview>
  /** Starts the core (p2p host and services); idempotent. Returns a human message. */
  startCore: () => Promise<string>
  /** Schedules a graceful shutdown after the current response is sent. */
  requestShutdown: () => void
  /**
   * True while the core is on its way up (the node was launched to start it, or a start is under
   * way) and is not running yet. Optional for stubs (never starting).
   */
  starting?: () => boolean
  /**
   * Resolves once the core is up; rejects NOT_RUNNING when it is not starting, its start fails, or
   * after `timeoutMs`. Requests that may need the network wait on it while the core is starting
   * (readiness.ts). Optional for stubs (never starting).
   */
  untilUp?: (timeoutMs: number) => Promise<void>
  /** Peer id of the running core; throws NOT_RUNNING before the core starts. */
  peerId: () => string
  ping: (peerId: string) => Promise<{ rttMs: number, message: string }>
  addPeer: (did: string, peerId: string, didType?: number) => Promise<void>
}

/** The wire as it is (`/svc/v1/p2p/*`): peers, Kubo's DHTs, the reference's peer_service topic. */
export interface P2pApi {
  peers: () => Promise<P2pPeer[]>
  connect: (addr: string) => Promise<string>
  /** NOT_RUNNING before the core starts; NOT_FOUND without -kubo */
  provide: (cid: string, dht?: 'wan' | 'lan') => Promise<'wan' | 'lan'>
  providers: (cid: string, opts: { dht?: 'wan' | 'lan', timeoutMs?: number }) => Promise<Array<{ peer_id: string, addrs: string[], dhts: Array<'wan' | 'lan'> }>>
  peerService: () => PeerMapHeard[]
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
  /** ends an operation waiting for an answer, as if it had expired */
  cancel: (id: string) => Promise<void>
}

export interface TokenApi {
  generateLocalRbt: (input: { did: string, number_of_tokens: number, start_index?: number }) => Promise<Envelope<MintLocalRbtResult | PendingSignature>>
  balances: (did: string) => Promise<BalancesResult>
  rbtBalance: (did: string) => Promise<RbtBalanceResult>
  ftBalance: (did: string) => Promise<FtBalanceResult[]>
  nftBalance: (did: string) => Promise<NftBalanceResult[]>
  list: (did: string, type?: string) => Promise<TokenListItemResult[]>
  chain: (tokenId: string, opts: { afterBlockId?: string, limit?: number, maps?: boolean }) => Promise<TokenChainResult>
  accountInfo: (did: string) => Promise<AccountInfoResult>
}

/** An FT mint as the routes hand it in (the route maps the contract's snake_case body). */
export interface FtMintInput { did: string, ftName: string, ftCount: number, tokenCount: number, startIndex: number }

export interface FtApi {
  mint: (req: FtMintInput) => Promise<Envelope<FtMintResult | PendingSignature>>
  list: () => Promise<FtListItemResult[]>
}

export interface TxFilters {
  latest?: number
  start_date?: string
  end_date?: string
  start_epoch?: number
  end_epoch?: number
}

export interface TransferBody {
  initiator: string
  owner: string
  rbt: number | string
  memo?: string
  hasFt?: boolean
  /** FTs sent in the same transaction */
  ft?: Array<{ ftName: string, numberOfFts: number, creatorDID: string }>
  hasNft?: boolean
  hasSmartContract?: boolean
  /**
   * The final message in the reference's words (its /api routes): `Transfer finished successfully in
   * <s>s with trnxid <txid>`, `FT Transfer finished …` when FTs move; otherwise `Transaction <txid>
   * completed successfully`
   */
  referenceMessage?: boolean
}

export interface TransferOutcome { transactionID: string, mintedNFTChildren: null }

export interface ConsensusApi {
  quorumsAdd: (did: string) => Promise<void>
  quorumsList: () => string[]
  quorumsRemoveAll: () => Promise<void>
  quorumsSetup: (did: string, password: string, privPassword: string) => Promise<void>
  quorumStatus: (did: string) => Promise<boolean>
  transfer: (body: TransferBody) => Promise<Envelope<TransferOutcome | PendingSignature>>
  transactions: () => Promise<TxResult[]>
  transaction: (txid: string) => Promise<TxResult>
  byDid: (did: string, tokenType: string, f: TxFilters) => Promise<TxResult[]>
  byComment: (comment: string) => Promise<TxResult[]>
  byDidRole: (did: string, role: 'Sender' | 'Receiver') => Promise<TxResult[]>
  faucet: (did: string, count: number) => Promise<Envelope<unknown>>
}

export interface NftTxBody {
  initiator: string
  owner: string
  nft: Array<{ nftId: string, value: number, data?: string, parentNFTId?: string }>
  transferNftOwnership?: boolean
  memo?: string
}

/** Where an uploaded file's bytes go as they arrive (a temporary file the service owns). */
export interface UploadSink {
  write: (bytes: Uint8Array) => Promise<void>
  /** gives up: whatever was written is removed */
  abort: () => Promise<void>
}

/** What the NFT routes need (the nft feature's NftService implements it). */
export interface NftApi {
  /** `artifact`: the bytes, or a sink from `artifactSink` holding the uploaded artifact (taken over by the call) */
  generate: (did: string, metadata: Uint8Array | undefined, artifact: Uint8Array | UploadSink | undefined, artifactName: string) => Promise<string>
  /** a new sink for an uploaded artifact, refusing more than `artifactLimit` bytes */
  artifactSink: () => Promise<UploadSink>
  /** the largest artifact accepted, bytes (the operator's setting) */
  readonly artifactLimit: number
  list: () => Promise<NftListItem[]>
  chain: (nftId: string) => Promise<NftChainItem[]>
  children: (nftId: string) => Promise<Array<{ nft_id: string, value: number }>>
  parent: (nftId: string) => Promise<{ nft_id: string, value: number } | null>
  transact: (body: NftTxBody) => Promise<Envelope<NftTxResult | PendingSignature>>
  subscribe: (nftId: string) => Promise<void>
  fetch: (nftId: string) => Promise<{ message: string, path: string, artifact?: NftArtifactFetch }>
}

/** How a fetched artifact came: its size, leaves written (and found from an earlier, cut fetch), per peer, and wrong blocks per peer. */
export interface NftArtifactFetch { size: number, blocks: number, resumed: number, peers: Record<string, number>, rejected: Record<string, number> }

export interface ScTxBody {
  initiator: string
  smartContract: Array<{ smartContractId: string, value: number, data?: string }>
  memo?: string
}

/** What the smart-contract routes need (the contracts feature's ScService implements it). */
export interface ScApi {
  generate: (did: string, binary: Uint8Array | undefined, raw: Uint8Array | undefined, names: { binary?: string, raw?: string }) => Promise<string>
  list: () => Promise<ScListItem[]>
  chain: (scId: string) => Promise<ScChainItem[]>
  transact: (body: ScTxBody) => Promise<Envelope<ScTxResult | PendingSignature>>
  subscribe: (scId: string) => Promise<void>
  fetch: (scId: string) => Promise<{ message: string, path: string }>
  registerCallback: (url: string, scId: string) => Promise<void>
}

/** What `setupservice` sends (SPEC defaults apply to what is absent). */
export interface ServiceSetupInput {
  service_name?: string
  db_type?: string
  db_address?: string
  db_port?: number | string
  db_name?: string
  db_username?: string
  db_password?: string
}

export interface ServicesApi {
  setup: (input: ServiceSetupInput) => Promise<ExplorerConfigView>
  get: (serviceName: string) => { config: ExplorerConfigView | null, status: ExplorerStatus }
}

export interface TxChainRequest {
  did: string
  token_ids: string[]
  exclude_transaction_ids?: string[]
  /** resume after the previous answer (its `next_cursor`) */
  cursor?: string
  /** blocks per answer (default 1000, at most 10 000) */
  limit?: number
  /** fullnode to pull chains this node does not hold from (peer id or multiaddr); default: discovered */
  fullnode?: string
}

export interface SyncApi {
  /** Two-step: the DID signs the fullnode's challenge, then the summary of what was recovered. */
  recover: (input: { did: string, fullnode?: string }) => Promise<Envelope<SyncSummaryResult | PendingSignature>>
  transactionChains: (input: TxChainRequest) => Promise<SyncTransactionChainResult>
}

export interface OperatorApi {
  /** release-all-locked-tokens; `minAgeMs`: how long a PREPARING transfer must have been idle */
  releaseLocked: (opts?: { minAgeMs?: number }) => Promise<ReleaseLockedResult>
  /** validate-token-chain: one token's whole chain (ancestors included), or every token `did` holds here */
  /** `blockCount` > 0: only the newest that many blocks of each chain (the reference's blockcount); absent or 0: the whole chain */
  validateChains: (did: string, token?: string, opts?: { blockCount?: number }) => Promise<ValidateChainResult>
  /** token-claims: the claims this node holds as an arbiter on a token's states, with their evidence */
  tokenClaims: (token: string, blockId?: string) => Promise<TokenClaimsResult>
  /** get-pledgedtoken-details: every token this node's quorum DIDs hold pledged, with the transaction it backs and its release time */
  pledgedTokens: () => Promise<PledgedTokenItem[]>
  /** the double spends this node saw, newest first (of one token when given) */
  doubleSpends: (opts: { token?: string, limit?: number }) => Promise<DoubleSpendItem[]>
  /** the arbiters this node no longer trusts (two final grants of one state for two transactions), with their proofs */
  distrustedArbiters: () => Promise<DistrustedArbiterItem[]>
  /** the arbiter committee as this node counts it: every registration it holds, and whether the committee is in force */
  arbiters: () => Promise<ArbitersResult>
  /** registers a quorum DID of this node as an arbiter, staking whole RBT of its own (or ends its seat: `leave`) */
  arbiterRegister: (did: string, leave?: boolean) => Promise<ArbiterItem>
  /** get-by-node: transactions sent and received per DID hosted here */
  txCounts: () => Promise<TxCountItem[]>
  /** run-unpledge: the quorum's unpledge sweep now; what it released */
  runUnpledge: () => Promise<RunUnpledgeResult>
  /**
   * initiate-self-transfer: the DID's Free RBT (whole and part) unchanged for `minAgeMs` (default
   * the 7-day pledge period) are spent to the DID itself through consensus, so the pledges that
   * backed their states are released; two-step (the DID signs the contract)
   */
  selfTransfer: (did: string, opts?: { minAgeMs?: number }) => Promise<Envelope<SelfTransferResult | PendingSignature>>
}

export interface ApiServices {
  consensus: ConsensusApi
  tokens: TokenApi
  node: NodeApi
  bootstrap: BootstrapApi
  /** the p2p routes; absent in API tests that do not need them (the routes then answer 404) */
  p2p?: P2pApi
  identity: IdentityApi
  signing: SigningApi
  /** NFTs; absent in API tests that do not need them (the routes then answer 503) */
  nfts?: NftApi
  /** Smart contracts; absent in API tests that do not need them */
  contracts?: ScApi
  /** FTs; absent in API tests that do not need them (the routes then answer 404) */
  fts?: FtApi
  /** The explorer service (setupservice); absent in API tests that do not need it. */
  services?: ServicesApi
  /** Wallet recovery and chain sync; absent in API tests that do not need it. */
  sync?: SyncApi
  /** The operator features (release of Locked tokens, chain validation, pledges); absent in API tests that do not need them. */
  operator?: OperatorApi
}
