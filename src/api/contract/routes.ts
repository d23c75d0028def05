import { z } from 'zod'
import { didCreateBody, didString, fullnodeString, multiaddrString, peerIdString, peersBody, signatureBody } from './schemas.js'
import { paths, type RouteId } from './paths.js'
import { legacyApiSpecs, type LegacyApiResults } from './legacy-api-routes.js'
import type { NftChainItem, NftListItem, NftTxResult } from './nft-results.js'
import type { ScChainItem, ScListItem, ScTxResult } from './sc-results.js'
import type { FtListItemResult, FtMintResult } from './ft-results.js'
import type { ArbiterItem, ArbitersResult, DistrustedArbiterItem, DoubleSpendItem, PledgedTokenItem, ReleaseLockedResult, TokenClaimsResult, RunUnpledgeResult, SelfTransferResult, TxCountItem, ValidateChainResult } from './operator-results.js'
import type { AccountInfoResult, BalancesResult, FtBalanceResult, MintLocalRbtResult, NftBalanceResult, RbtBalanceResult, TokenChainResult, TokenListItemResult } from './token-results.js'

/**
 * The one table of HTTP routes shared by the server (validation, routing, OpenAPI) and the client:
 * method and path come from paths.ts, the schemas for body and query are declared here once.
 */
export type Method = 'GET' | 'POST' | 'DELETE'

interface RouteSpec<B extends z.ZodType | undefined = z.ZodType | undefined, Q extends z.ZodType | undefined = z.ZodType | undefined> {
  summary: string
  body?: B
  query?: Q
  /** multipart/form-data upload (validated by the route itself). */
  multipart?: boolean
  /** true when the first answer may be the two-step "Password needed" challenge. */
  async?: boolean
  tags: string[]
}

export interface RouteDef<B extends z.ZodType | undefined = z.ZodType | undefined, Q extends z.ZodType | undefined = z.ZodType | undefined> extends RouteSpec<B, Q> {
  method: Method
  path: string
}

/** A reference-style address: the DID, or "<peer id>.<DID>" (legacy-api.md §1.3). */
function legacyAddress (message: string): z.ZodType<string> {
  return z.string().max(200).refine((a) => {
    const parts = a.split('.')
    return parts.length <= 2 && didString.safeParse(parts[parts.length - 1]).success && (parts.length === 1 || peerIdString.safeParse(parts[0]).success)
  }, message)
}

/** A CID as text (v0 base58 or v1 multibase); parsed again by the node. */
const cidString = z.string().min(2).max(200).regex(/^[A-Za-z0-9]+$/, 'a CID')
/** One of Kubo's two DHT tables. */
const kuboDht = z.enum(['wan', 'lan'])

function route<B extends z.ZodType | undefined = undefined, Q extends z.ZodType | undefined = undefined> (def: RouteSpec<B, Q>): RouteSpec<B, Q> {
  return def
}

const specs = {
  ...legacyApiSpecs,
  // ---- node
  nodeStart: route({ summary: 'Starts the core (p2p host and services)', tags: ['node'] }),
  nodeShutdown: route({ summary: 'Shuts the node down gracefully', tags: ['node'] }),
  nodePeerId: route({ summary: "This node's peer id (in result and in message)", tags: ['node'] }),
  nodePing: route({
    summary: 'Pings a peer with a real libp2p round trip',
    query: z.object({ peerID: peerIdString }),
    tags: ['node']
  }),
  nodeAddPeers: route({
    summary: "Maps a peer's DID to its peer id (persisted)",
    body: z.object({ DID: didString, PeerID: peerIdString, DIDType: z.number().int().min(0).max(4).optional() }),
    tags: ['node']
  }),
  nodeStatus: route({ summary: 'Node status: core, peer id, listen addresses, connected peers, LAN discovery', tags: ['node'] }),
  nodeOverview: route({ summary: "An operator's overview: version, peer id, uptime, peers, hosted DIDs with balances, quorum role and pledged RBT, pending two-step operations, transfers in flight, the last WARN/ERROR log lines", tags: ['node'] }),
  // ---- bootstrap
  bootstrapAdd: route({ summary: 'Adds bootstrap peers and dials them', body: peersBody, tags: ['bootstrap'] }),
  bootstrapRemove: route({ summary: 'Removes bootstrap peers', body: peersBody, tags: ['bootstrap'] }),
  bootstrapList: route({ summary: 'Lists bootstrap peers', tags: ['bootstrap'] }),
  bootstrapRemoveAll: route({ summary: 'Removes all bootstrap peers', tags: ['bootstrap'] }),
  // ---- p2p (what the wire does, for operators and interop tests; docs/interop.md)
  p2pPeers: route({ summary: 'The connected peers with the addresses and protocols the host knows of each', tags: ['p2p'] }),
  p2pConnect: route({ summary: 'Connects to a peer by its multiaddr (with /p2p/<peer id>), without adding it to the bootstrap list', body: z.object({ addr: multiaddrString }), tags: ['p2p'] }),
  p2pProvide: route({
    summary: "Announces this node as a provider of a CID on Kubo's DHTs (-kubo): the WAN table when it has peers, else the LAN one, or the one named",
    body: z.object({ cid: cidString, dht: kuboDht.optional() }),
    tags: ['p2p']
  }),
  p2pProviders: route({
    summary: "Providers of a CID on Kubo's DHTs (-kubo): both tables, or the one named",
    query: z.object({ cid: cidString, dht: kuboDht.optional(), timeout_ms: z.coerce.number().int().min(100).max(120_000).optional() }),
    tags: ['p2p']
  }),
  p2pPeerService: route({ summary: "The PeerMaps (DID → peer id) heard on the reference's peer_service topic (-kubo), newest first, and whether each verified", tags: ['p2p'] }),
  // ---- meta
  openapi: route({ summary: 'This API as an OpenAPI 3 document', tags: ['meta'] }),
  // ---- tokens and balances
  tokensGenerateLocalRbt: route({
    summary: 'Mints whole test RBT for a DID hosted here (test network only); two-step',
    body: z.object({
      did: didString,
      number_of_tokens: z.number({ error: 'Invalid RBT amount, tokens generated should be a whole number and greater than 0' })
        .refine(Number.isInteger, 'Invalid RBT amount, tokens generated should be a whole number and greater than 0')
        .refine((n) => n > 0, 'Invalid RBT amount, tokens generated should be a whole number and greater than 0'),
      start_index: z.number({ error: 'start_index must be a whole number' }).refine(Number.isInteger, 'start_index must be a whole number').refine((n) => n >= 0, 'start_index must be 0 or greater').optional()
    }),
    async: true,
    tags: ['tokens']
  }),
  tokensList: route({
    summary: 'Tokens of one type a DID holds on this node (rbt includes part tokens)',
    query: z.object({ did: didString, type: z.string().optional().describe('rbt (default), ft, nft or smartContract') }),
    tags: ['tokens']
  }),
  tokenChain: route({
    summary: 'The chain of a token, oldest block first, with readable fields and base64 envelopes; paged by block_id',
    query: z.object({
      block_id: z.string().max(200).optional().describe('return the blocks after this block id'),
      limit: z.coerce.number().int().min(1).max(10_000).optional(),
      maps: z.enum(['true', 'false']).optional().describe('true: each block also as the reference\'s dump.json holds it (map)')
    }),
    tags: ['tokens']
  }),
  didBalances: route({ summary: 'RBT, FT and NFT balances of a DID', tags: ['balances'] }),
  didBalancesRbt: route({ summary: 'RBT balance of a DID: free (balance), locked, pledged, pinned', tags: ['balances'] }),
  didBalancesFt: route({ summary: 'Free FTs of a DID grouped by name and creator', tags: ['balances'] }),
  didBalancesNft: route({ summary: 'Free NFTs of a DID', tags: ['balances'] }),
  legacyGetAccountInfo: route({ summary: 'Legacy account info: RBT free, pledged, locked and pinned (also as account_info)', query: z.object({ did: didString }), tags: ['legacy'] }),
  // ---- DIDs and signatures
  didCreate: route({
    summary: 'Creates a DID. JSON body, or multipart/form-data with a did_config JSON field plus files (image.png, did.png, pubShare.png, pubKey.pem, pvtKey.pem)',
    body: didCreateBody,
    multipart: true,
    tags: ['dids']
  }),
  didList: route({ summary: 'All DIDs hosted on this node', tags: ['dids'] }),
  didSetup: route({
    summary: 'Sets a DID up from existing key files (multipart/form-data: did_config JSON field plus files)',
    multipart: true,
    tags: ['dids']
  }),
  didRegister: route({ summary: 'Announces the DID → peer mapping (gossip and DHT), signed by the DID', async: true, tags: ['dids'] }),
  didPublicKey: route({ summary: "A DID's public document summary (type, public keys), local or fetched from the network", tags: ['dids'] }),
  didResolve: route({ summary: 'The peer hosting a DID (local, peer map, or DHT record)', tags: ['dids'] }),
  signatureComplete: route({ summary: 'Completes an operation waiting for a password or signature', body: signatureBody, tags: ['signatures'] }),
  signatureArbitrary: route({
    summary: 'Signs an arbitrary message with a DID',
    body: z.object({ signer_did: didString, msg_to_sign: z.string().max(64 * 1024) }),
    async: true,
    tags: ['signatures']
  }),
  signatureVerify: route({
    summary: 'Verifies an arbitrary-message signature (status false when it does not verify)',
    query: z.object({ signer_did: didString, signed_msg: z.string().max(64 * 1024), signature: z.string().min(1, 'signature is required').max(2048) }),
    tags: ['signatures']
  }),
  legacySignatureResponse: route({ summary: 'Legacy form of POST /svc/v1/signature', body: signatureBody, tags: ['legacy'] }),
  // ---- quorums
  quorumsAdd: route({ summary: 'Adds one quorum DID to the quorum list (call once per quorum)', body: z.object({ did: didString }), tags: ['quorums'] }),
  quorumsList: route({ summary: 'Lists the configured quorums', tags: ['quorums'] }),
  quorumsRemoveAll: route({ summary: 'Removes all quorums from the list', tags: ['quorums'] }),
  quorumsSetup: route({
    summary: "Sets the node's own DID up as a quorum (survives restarts, sealed at rest)",
    body: z.object({ did: didString, password: z.string().max(1024), priv_password: z.string().max(1024).optional() }),
    tags: ['quorums']
  }),
  quorumsStatus: route({ summary: 'Asks a quorum over the network whether it is reachable and set up', query: z.object({ quorumAddress: didString }), tags: ['quorums'] }),
  // ---- transactions
  txInitiate: route({
    summary: 'One transaction endpoint: RBT and FT transfers (several FT kinds and RBT in one transaction), NFT deploy/execute/transfer, smart-contract deploy and execute; async (two-step)',
    body: z.object({
      initiator: didString,
      owner: didString,
      tokens: z.object({
        rbt: z.union([z.number(), z.string()]).optional(),
        ft: z.array(z.object({ ftName: z.string(), numberOfFts: z.number().int().positive(), creatorDID: didString })).optional(),
        nft: z.array(z.object({ nftId: z.string(), value: z.number(), data: z.string().optional(), parentNFTId: z.string().optional() })).optional(),
        smartContract: z.array(z.object({ smartContractId: z.string(), value: z.number(), data: z.string().optional() })).optional(),
        transferNftOwnership: z.boolean().optional()
      }),
      memo: z.string().max(4096).optional()
    }),
    async: true,
    tags: ['transactions']
  }),
  txList: route({ summary: 'All transactions known to the node', tags: ['transactions'] }),
  txGet: route({ summary: 'One transaction', tags: ['transactions'] }),
  // ---- FTs
  ftsMint: route({
    summary: 'Mints FTs backed by whole RBT of the creator (those RBT are burnt for the FTs and leave the spendable balance); two-step',
    body: z.object({
      did: didString,
      ft_name: z.string().max(64),
      ft_count: z.number({ error: 'ft_count must be a whole number' }).refine(Number.isInteger, 'ft_count must be a whole number'),
      token_count: z.number({ error: 'token_count must be a whole number of RBT' }).refine(Number.isInteger, 'token_count must be a whole number of RBT'),
      ft_num_start_index: z.number({ error: 'ft_num_start_index must be a whole number' }).refine(Number.isInteger, 'ft_num_start_index must be a whole number').optional()
    }),
    async: true,
    tags: ['fts']
  }),
  ftsList: route({ summary: 'FT kinds minted on or held by this node: creator, name, supply, value and holdings per DID', tags: ['fts'] }),
  // ---- NFTs
  nftsGenerate: route({
    summary: 'Creates an NFT from a metadata JSON file and an artifact file (multipart: did field, metadata and artifact files); content-addressed id',
    multipart: true,
    tags: ['nfts']
  }),
  nftsList: route({ summary: 'NFTs known to this node with owner, value and status', tags: ['nfts'] }),
  nftsSubscribe: route({ summary: 'Follows an NFT: every new state published by its owner is synced and validated', query: z.object({ nft: z.string().min(1) }), tags: ['nfts'] }),
  nftChain: route({ summary: "An NFT's chain: transaction, initiator, owner, epoch and data per block", tags: ['nfts'] }),
  nftChildren: route({ summary: 'Child NFTs of an NFT (answered by the originator node only)', tags: ['nfts'] }),
  nftParent: route({ summary: 'Parent of a child NFT (answered by the originator node only)', tags: ['nfts'] }),
  nftFetch: route({ summary: "Downloads an NFT's metadata and artifact from the network, verified against the id", query: z.object({ nft: z.string().min(1) }), tags: ['nfts'] }),
  // ---- smart contracts
  scGenerate: route({
    summary: 'Creates a smart contract from a compiled WASM module (ABI v1) and its source (multipart: did field, binaryCodePath .wasm and rawCodePath .rs files); content-addressed id',
    multipart: true,
    tags: ['smart contracts']
  }),
  scList: route({ summary: 'Smart contracts known to this node with deployer, value, status and latest state', tags: ['smart contracts'] }),
  scChain: route({ summary: "A smart contract's chain: transaction, initiator, input, state and output per block", tags: ['smart contracts'] }),
  scSubscribe: route({ summary: "Follows a smart contract: its code is fetched and every new state is synced and validated", query: z.object({ smartContractToken: z.string().min(1) }), tags: ['smart contracts'] }),
  scRegisterCallback: route({
    summary: 'Registers an http(s) URL that receives a JSON event on every new state of the contract',
    body: z.object({ CallBackURL: z.string().min(1), SmartContractToken: z.string().min(1) }),
    tags: ['smart contracts']
  }),
  scFetch: route({ summary: "Downloads a smart contract's files from the network, verified against the id", query: z.object({ smartContractToken: z.string().min(1) }), tags: ['smart contracts'] }),
  txByDid: route({
    summary: 'Transactions of a DID by token type (rbt, ft, nft, smartContract), with optional filters',
    query: z.object({
      latest: z.coerce.number().int().positive('latest must be a positive integer').optional(),
      start_date: z.string().optional(),
      end_date: z.string().optional(),
      start_epoch: z.coerce.number().int('start_epoch must be an integer').optional(),
      end_epoch: z.coerce.number().int('end_epoch must be an integer').optional()
    }),
    tags: ['transactions']
  }),
  tokensFaucet: route({
    summary: "Asks the test network's faucet for test RBT, transferred through consensus; async",
    body: z.object({ did: didString, token_count: z.number().int().positive().max(100) }),
    async: true,
    tags: ['tokens']
  }),
  legacyInitiateRbtTransfer: route({
    summary: 'Legacy RBT transfer (tokenCOunt spelled so); async',
    body: z.object({ comment: z.string().max(4096).optional(), receiver: legacyAddress('Invalid receiver address'), sender: legacyAddress('Invalid sender address'), tokenCOunt: z.union([z.number(), z.string()]), type: z.number().int().optional() }),
    async: true,
    tags: ['legacy']
  }),
  legacyGetByTxnId: route({ summary: 'Legacy: transaction by id', query: z.object({ txnID: z.string().min(1) }), tags: ['legacy'] }),
  legacyGetByComment: route({ summary: 'Legacy: transactions by comment', query: z.object({ Comment: z.string() }), tags: ['legacy'] }),
  legacyGetByDid: route({
    summary: 'Legacy: transactions of a DID, as sender or receiver (Role in any case), or both without Role',
    query: z.object({ DID: didString, Role: z.string().transform((r) => r.toLowerCase()).pipe(z.enum(['', 'sender', 'receiver'])).optional() }),
    tags: ['legacy']
  }),
  // ---- services
  servicesSetup: route({
    summary: 'Configures the explorer service (exports chain data to SQLite, PostgreSQL or SQL Server); persisted, password sealed at rest',
    body: z.object({
      service_name: z.string().max(100).optional().describe('explorer_service (default)'),
      db_type: z.string().max(40).optional().describe('SQLServer (default), PostgreSQL or SQLite'),
      db_address: z.string().max(255).optional(),
      db_port: z.union([z.number().int(), z.string().max(10)]).optional(),
      db_name: z.string().max(1024).optional().describe('database name; for SQLite the file path (relative to the node data directory)'),
      db_username: z.string().max(255).optional(),
      db_password: z.string().max(1024).optional()
    }),
    tags: ['services']
  }),
  servicesGet: route({ summary: 'Configuration (never the password) and sync state of a service', tags: ['services'] }),
  // ---- recovery
  sync: route({
    summary: 'Rebuilds the wallet of a DID hosted here from a fullnode: the DID signs the fullnode\'s challenge (two-step), every chain is validated, all tokens (Free or Pledged) are stored in one commit; the result summarises counts and totals per token type',
    body: z.object({
      did: didString,
      fullnode: fullnodeString.optional().describe('peer id, or multiaddr ending with /p2p/<peer id>, of the fullnode; default: the configured fullnodes, then those found on the network')
    }),
    async: true,
    tags: ['sync']
  }),
  syncTransactionChain: route({
    summary: 'Ordered chains of the given tokens, without the blocks of excluded transactions; chains not held here are first pulled from a fullnode and validated; paged by next_cursor, never truncated',
    body: z.object({
      did: didString,
      token_ids: z.array(z.string().max(100)).min(1).max(1000),
      exclude_transaction_ids: z.array(z.string().max(200)).max(100_000).optional(),
      cursor: z.string().max(100).optional().describe('next_cursor of the previous answer'),
      limit: z.number().int().min(1).max(10_000).optional().describe('blocks per answer, default 1000'),
      fullnode: fullnodeString.optional().describe('where to pull chains this node does not hold (peer id, or multiaddr ending with /p2p/<peer id>); default: discovered fullnodes')
    }),
    tags: ['sync']
  }),
  // ---- operator features (docs/api.md, "Operator features")
  tokensReleaseLocked: route({
    summary: 'release-all-locked-tokens: frees the Locked tokens of transactions that can no longer commit, decided by the two-phase records (a stale PREPARING or an ABORTED transfer is aborted, quorums told ABORT; a pledge of a released or unknown vote, or a lock no record explains, is freed); SIGNING, COMMITTING and COMMITTED transfers and open votes keep theirs. Reports each token released or kept, and why',
    body: z.object({
      min_age_seconds: z.number().int().min(0).max(86_400 * 30).optional().describe('a PREPARING transfer must have been idle this long (default 60 s); one this node is running is never released')
    }),
    tags: ['tokens']
  }),
  tokensValidateChain: route({
    summary: 'validate-token-chain: validates the whole chain of a token stored here (every block, link and signature, a part token\'s parents, an FT\'s backing) with the node\'s verifier, or of every token the DID holds when no token is named; reports the first bad block of each (chain, number, id, check, reason). Any invalid chain answers status false (HTTP 200) with the same result',
    query: z.object({
      did: didString.describe('the DID whose tokens are checked (the reference: the validator\'s DID)'),
      token: z.string().regex(/^[A-Za-z0-9]{0,100}$/, 'Invalid token').optional().describe('one token id; empty or absent: every token of the DID'),
      blockcount: z.string().regex(/^-?\d{1,9}$/, 'Failed to convert blockCount string into integer').optional().describe('N > 0: only the newest N blocks of each chain are validated (counted from the latest block back, as the reference does), from the stored block before them; absent, 0 or negative: the whole chain with its ancestry'),
      SCChainValidation: z.enum(['true', 'false', '1', '0', 't', 'f', 'T', 'F', 'TRUE', 'FALSE', 'True', 'False']).optional().describe('accepted as the reference takes it; smart-contract chains are validated like every chain')
    }),
    tags: ['tokens']
  }),
  tokensClaims: route({
    summary: 'token-claims: the claims this node holds as an arbiter on every state of a token it knows (docs/protocol.md, "Claims"), each with its evidence: the transaction holding it, every claimant (peer, quorum DID, the transaction claimed for, the claim\'s nonce and the quorum\'s signature over it), when it was granted and last asked about, and the spent marker known here',
    query: z.object({
      token: z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid token').describe('the token id'),
      block: z.string().regex(/^[0-9]{1,9}-[0-9a-f]{64}$/, 'Invalid block id').optional().describe('one state only: the block id `<n>-<hash>` the state is at (absent: every block of the chain known here, and the genesis state)')
    }),
    tags: ['tokens']
  }),
  quorumsPledgedTokens: route({ summary: 'get-pledgedtoken-details: every token the quorum DIDs of this node hold pledged, with the transaction it backs, the token states that transaction created and when the pledge period ends', tags: ['quorums'] }),
  doubleSpends: route({
    summary: 'The double spends this node saw (two valid blocks spending one token state, two verified spent markers naming different transactions for one state, or two certificates: arbiters\' signed grants holding one state for two transactions), newest first, each with its proof: the two blocks, the two markers, or the two certificates with the arbiters that granted both and those of them this node no longer trusts, as kept when seen',
    query: z.object({
      token: z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid token').optional().describe('only the double spends of this token'),
      limit: z.coerce.number().int().min(1).max(1000).optional().describe('at most this many (default 100)')
    }),
    tags: ['tokens']
  }),
  arbitersDistrusted: route({
    summary: 'The arbiters this node no longer trusts, newest first, each with its proof: two final (sealed) grants it signed for one token state and two different transactions (docs/protocol.md, "Double spends seen"); their grants count toward no claim here',
    tags: ['tokens']
  }),
  arbiters: route({
    summary: 'The arbiter committee as this node counts it (docs/protocol.md, "The arbiter committee"): whether it is in force (at least its minimum of seats: the claims then count its seats as every state\'s arbiters, else the peers of the node\'s view), and every registration held, each seated, maturing, left, lapsed (its stake spent) or replaced, with its DID, peer and staked tokens',
    tags: ['quorums']
  }),
  arbitersRegister: route({
    summary: 'Takes an arbiter seat for a quorum DID of this node, staking whole RBT of its own (kept out of its transfers and pledges while the seat stands), signed by the DID and this node\'s peer and offered to the network; with leave true, ends the seat (the stake is free again once the leave is registered)',
    body: z.object({
      did: didString.describe('a DID set up as a quorum on this node'),
      leave: z.boolean().optional().describe('end the seat instead of taking one')
    }),
    tags: ['quorums']
  }),
  quorumsRunUnpledge: route({ summary: 'run-unpledge: runs the quorum\'s unpledge sweep now (pledges whose period ended; votes with no word asked about) and reports what it released', tags: ['quorums'] }),
  nodeTxCounts: route({ summary: 'get-by-node: transactions sent and received by each DID hosted on this node', tags: ['node'] }),
  txSelfTransfer: route({
    summary: 'initiate-self-transfer: the DID\'s Free RBT unchanged for min_age_seconds (default the 7-day pledge period; at most 100 tokens a run) are spent to the DID itself through consensus, so the pledges that backed their states are released and the tokens stay Free at a new block; async (two-step)',
    body: z.object({
      did: didString,
      min_age_seconds: z.number().int().min(0).max(86_400 * 365).optional().describe('re-issue tokens whose state is at least this old (default 604800, 7 days)')
    }),
    async: true,
    tags: ['transactions']
  })
} as const satisfies Record<RouteId, RouteSpec>

type Routes = { [K in RouteId]: (typeof specs)[K] & (typeof paths)[K] }
export const routes: Routes = Object.fromEntries(Object.entries(specs).map(([id, spec]) => [id, { ...spec, ...paths[id as RouteId] }])) as unknown as Routes
export type { RouteId }
export type BodyOf<R extends RouteId> = (typeof routes)[R] extends RouteDef<infer B, any> ? (B extends z.ZodType ? z.input<B> : undefined) : undefined
export type QueryOf<R extends RouteId> = (typeof routes)[R] extends RouteDef<any, infer Q> ? (Q extends z.ZodType ? z.input<Q> : undefined) : undefined

/** Result payload types per route (what `result` holds on success). */
export interface ResultTypes extends LegacyApiResults {
  nodeStart: null
  nodeShutdown: null
  nodePeerId: string
  nodePing: { peerID: string, rtt_ms: number }
  nodeAddPeers: null
  nodeStatus: NodeStatus
  nodeOverview: NodeOverview
  bootstrapAdd: { peers: string[] }
  bootstrapRemove: { peers: string[] }
  bootstrapList: { peers: string[] }
  bootstrapRemoveAll: { peers: string[] }
  p2pPeers: P2pPeer[]
  p2pConnect: { peer_id: string }
  p2pProvide: { cid: string, dht: 'wan' | 'lan' }
  p2pProviders: { cid: string, providers: Array<{ peer_id: string, addrs: string[], dhts: Array<'wan' | 'lan'> }> }
  p2pPeerService: PeerMapHeard[]
  openapi: unknown
  tokensGenerateLocalRbt: MintLocalRbtResult | import('./envelope.js').PendingSignature
  tokensList: TokenListItemResult[]
  tokenChain: TokenChainResult
  didBalances: BalancesResult
  didBalancesRbt: RbtBalanceResult
  didBalancesFt: FtBalanceResult[]
  didBalancesNft: NftBalanceResult[]
  legacyGetAccountInfo: AccountInfoResult[]
  didCreate: { did: string, peer_id: string | null }
  didList: string[]
  didSetup: { did: string, peer_id: string | null }
  didRegister: unknown
  didPublicKey: DidPublicInfo
  didResolve: { did: string, peer_id: string, did_type: number | null, source: string }
  signatureComplete: unknown
  signatureArbitrary: unknown
  signatureVerify: null
  legacySignatureResponse: unknown
  quorumsAdd: null
  quorumsList: string[]
  quorumsRemoveAll: null
  quorumsSetup: null
  quorumsStatus: null
  txInitiate: NftTxResult | ScTxResult | import('./envelope.js').PendingSignature
  txList: TxResult[]
  txGet: TxResult
  txByDid: TxResult[]
  ftsMint: FtMintResult | import('./envelope.js').PendingSignature
  ftsList: FtListItemResult[]
  nftsGenerate: string
  nftsList: NftListItem[]
  nftsSubscribe: null
  nftChain: NftChainItem[]
  nftChildren: Array<{ nft_id: string, value: number }>
  nftParent: { nft_id: string, value: number } | null
  /** `artifact`: how the artifact came (absent when the NFT was held already) */
  nftFetch: { path: string, artifact?: { size: number, blocks: number, resumed: number, peers: Record<string, number>, rejected: Record<string, number> } }
  scGenerate: string
  scList: ScListItem[]
  scChain: ScChainItem[]
  scSubscribe: null
  scRegisterCallback: null
  scFetch: { path: string }
  tokensFaucet: unknown
  legacyInitiateRbtTransfer: unknown
  legacyGetByTxnId: TxResult
  legacyGetByComment: TxResult[]
  legacyGetByDid: TxResult[]
  servicesSetup: ExplorerConfigView
  servicesGet: { config: ExplorerConfigView | null, status: ExplorerStatus }
  sync: SyncSummaryResult | import('./envelope.js').PendingSignature
  syncTransactionChain: SyncTransactionChainResult
  tokensReleaseLocked: ReleaseLockedResult
  tokensValidateChain: ValidateChainResult
  tokensClaims: TokenClaimsResult
  quorumsPledgedTokens: PledgedTokenItem[]
  doubleSpends: DoubleSpendItem[]
  arbitersDistrusted: DistrustedArbiterItem[]
  arbiters: ArbitersResult
  arbitersRegister: ArbiterItem
  quorumsRunUnpledge: RunUnpledgeResult
  nodeTxCounts: TxCountItem[]
  txSelfTransfer: SelfTransferResult | import('./envelope.js').PendingSignature
}

/** Final result of POST /svc/v1/sync. */
export interface SyncSummaryResult {
  did: string
  fullnode: string
  tokens: number
  /** per token kind (rbt, part, ft, nft, sc): count and total value in RBT */
  by_type: Record<string, { count: number, value: number }>
  by_status: Record<string, number>
  blocks_stored: number
  blocks_fetched: number
  already_held: number
  token_ids: string[]
  /** tokens this node showed as Free for the DID whose checked chains show them spent since: dropped from the balance */
  dropped_spent?: Array<{ token: string, txid: string }>
}

/** Result of POST /svc/v1/sync-transaction-chain. */
export interface SyncTransactionChainResult {
  did: string
  chains: Array<{ token_id: string, token_type: number, kind: string, length: number, blocks: import('./token-results.js').TokenChainResult['blocks'] }>
  count: number
  next_cursor: string
}

/** The explorer service's configuration as shown to clients: the password is never included. */
export interface ExplorerConfigView {
  service_name: string
  db_type: string
  db_address: string | null
  db_port: number | null
  db_name: string
  db_username: string | null
  password_set: boolean
}

/** Sync state of the explorer service (also part of the node status). */
export interface ExplorerStatus {
  configured: boolean
  service: string
  db_type: string | null
  /** address:port/name, or the SQLite file; never credentials */
  database: string | null
  state: 'not_configured' | 'connecting' | 'backfilling' | 'syncing' | 'in_sync' | 'retrying' | 'stopped'
  /** records changed on the node and not yet written */
  pending: number
  last_error: string | null
  last_sync_at: number | null
  last_full_sync_at: number | null
  /** failed attempts since the last success */
  retries: number
  next_retry_at: number | null
  /** row counts in the database after the last pass */
  rows: { dids: number, tokens: number, transactions: number, blocks: number, nfts: number, fts: number, contracts: number }
}

/** A transaction as the API shows it. */
export interface TxResult {
  transactionID: string
  transaction_type: string
  token_type: string
  sender: string
  receiver: string
  amount: number
  tokens: string[]
  quorums: string[]
  memo: string
  epoch: number
  block_ids: string[]
  /** committed, or for a transfer this node sent and has not finished: preparing, signing, delivery_pending, aborted */
  status: string
  /** why an aborted transfer stopped */
  reason?: string
}

export interface DidPublicInfo {
  did: string
  did_type: number
  public_key: string
  quorum_public_key: string | null
  source: 'local' | 'network'
}
export type ResultOf<R extends RouteId> = R extends keyof ResultTypes ? ResultTypes[R] : unknown

/** GET /svc/v1/p2p/peers: one connected peer. */
export interface P2pPeer {
  peer_id: string
  /** the remote address of each open connection */
  addrs: string[]
  /** the protocols the peer told identify it speaks */
  protocols: string[]
  /** what the first connection negotiated: its encryption (`/noise`) and its stream muxer (`/yamux/1.0.0`) */
  encryption: string | null
  muxer: string | null
}

/** GET /svc/v1/p2p/peer_service: a PeerMap heard on the topic (the reference's JSON fields) and what became of it. */
export interface PeerMapHeard {
  peer_id: string
  did: string
  did_type: number
  time: string
  /** the gossip message's origin */
  from: string | null
  /** when it was heard, ISO-8601 */
  heard_at: string
  /** its signature verified against the DID's document and the mapping was kept */
  verified: boolean
  /** why not, when not */
  reason?: string
}

export interface NodeStatus {
  version: string
  core_started: boolean
  peer_id: string | null
  listen: string[]
  connected_peers: number
  /** peer ids of the connected peers */
  peers: string[]
  /** whether the node looks for peers on the local network (mDNS) */
  mdns: boolean
  test_net: boolean
  api: string
  grpc: string
  /** the explorer service's sync state */
  explorer?: ExplorerStatus
}

/** GET /svc/v1/node/overview: what `rbtnode status` shows. Amounts are RBT. */
export interface NodeOverview {
  version: string
  core_started: boolean
  peer_id: string | null
  /** when this node process started (ISO time) and for how long it has run */
  started_at: string
  uptime_s: number
  connected_peers: number
  peers: string[]
  /** DIDs hosted here, with their RBT balances and whether each is set up as a quorum */
  dids: Array<{ did: string, did_type: number, quorum: boolean, rbt: RbtBalanceResult }>
  quorum: {
    /** this node serves as a quorum: at least one of its DIDs is set up */
    role: boolean
    dids: string[]
    /** RBT pledged by the DIDs hosted here */
    pledged: number
    /** DIDs in the quorum list this node's transfers use */
    list_size: number
  }
  /** two-step operations that have not ended; waiting: the challenge is still unanswered */
  pending_operations: Array<{ id: string, did: string, operation: string, waiting: boolean, expires_at: string }>
  /** transfers this node sent that are not finished: preparing, signing, delivery_pending */
  transfers_in_flight: Array<{ transactionID: string, status: string, sender: string, receiver: string, amount: number, started_at: string, updated_at: string }>
  /** the last WARN and ERROR log lines, oldest first */
  last_errors: Array<{ time: string, level: string, component?: string, msg: string }>
}

export { multiaddrString }
export { buildPath } from './paths.js'
export type * from './token-results.js'
export type * from './nft-results.js'
export type * from './sc-results.js'
export type * from './ft-results.js'
