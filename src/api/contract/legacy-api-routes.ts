import { z } from 'zod'
import { didCreateBody, didString, peerIdString } from './schemas.js'
import type { AccountInfoResult } from './token-results.js'
import type { ReleaseLockedResult, RunUnpledgeResult, ValidateChainResult } from './operator-results.js'

/**
 * Schemas of the reference's `/api` routes (paths in legacy-api-paths.ts), spread into the route
 * table of routes.ts. Field names are the reference's; JSON keys match case-insensitively.
 */
const tags = ['legacy']

/** The reference's bootstrap entries end with "/"; that slash is not part of the multiaddress. */
const legacyPeers = z.object({
  peers: z.array(z.string().min(1).max(1024)).min(1, 'Bootstrap Peers required').max(256)
})

function wholePositive (message: string): z.ZodType<number> {
  return z.number({ error: message }).refine(Number.isInteger, message).refine((n) => n > 0, message)
}

const nftId = z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid NFT')

const scId = z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid smart contract token')

/** A reference route this node does not do: it answers status false naming the alternative. */
function notDone (name: string): { summary: string, tags: string[] } {
  return { summary: `Legacy ${name}: not done by this node; answers status false (HTTP 200) naming the alternative`, tags }
}

export const legacyApiSpecs = {
  legacyGetAllDid: { summary: 'Legacy: the DIDs hosted here with their RBT amounts (account_info); readiness probe of the reference scripts', tags },
  legacyCreateDid: {
    summary: 'Legacy createdid: multipart/form-data with a did_config JSON field and the files (as POST /svc/v1/dids/create)',
    body: didCreateBody,
    multipart: true,
    tags
  },
  legacyRegisterDid: { summary: 'Legacy register-did: announces the DID → peer mapping; two-step', body: z.object({ did: didString }), async: true, tags },
  legacySetupDid: { summary: 'Legacy setup-did: imports a DID from its files (as POST /svc/v1/dids/setup); result is the DID', multipart: true, tags },
  legacyGetPeerId: { summary: "Legacy: this node's peer id, in message", tags },
  legacyStart: { summary: 'Legacy: starts the core', tags },
  legacyShutdown: { summary: 'Legacy: shuts the node down', tags },
  legacyNodeStatus: { summary: 'Legacy: answers while the node is up', tags },
  legacyPing: { summary: 'Legacy: pings a peer', query: z.object({ peerID: peerIdString }), tags },
  legacyAddPeerDetails: {
    summary: "Legacy: maps a peer's DID to its peer id",
    body: z.object({ DID: didString, PeerID: peerIdString, DIDType: z.number().int().min(0, 'Invalid DID Type').max(4, 'Invalid DID Type').optional() }),
    tags
  },
  legacyAddBootstrap: { summary: 'Legacy: adds bootstrap peers (entries may end with "/")', body: legacyPeers, tags },
  legacyRemoveBootstrap: { summary: 'Legacy: removes bootstrap peers', body: legacyPeers, tags },
  legacyRemoveAllBootstrap: { summary: 'Legacy: removes all bootstrap peers', tags },
  legacyGetAllBootstrap: { summary: 'Legacy: lists the bootstrap peers ({peers})', tags },
  legacyAddQuorum: {
    summary: 'Legacy addquorum: a JSON array of at least 5 {type, address} (address: a quorum DID, or peerID.DID); those not yet listed are added',
    body: z.array(z.object({ type: z.number().int().optional(), address: z.string().min(1).max(200) }))
      .min(5, 'Length of Quorum list should be atleast 5').max(256),
    tags
  },
  legacyGetAllQuorum: { summary: 'Legacy: the quorum list', tags },
  legacyRemoveAllQuorum: { summary: 'Legacy: empties the quorum list (GET, as the reference)', tags },
  legacySetupQuorum: {
    summary: "Legacy: sets the node's own DID up as a quorum",
    body: z.object({ did: didString, password: z.string().max(1024), priv_password: z.string().max(1024).optional() }),
    tags
  },
  legacyCheckQuorumStatus: { summary: 'Legacy: whether a quorum is reachable and set up', query: z.object({ quorumAddress: didString }), tags },
  legacyGenerateTestToken: {
    summary: 'Legacy generate-test-token: mints whole test RBT (test network only); two-step',
    body: z.object({ did: didString, number_of_tokens: wholePositive('Invalid RBT amount, tokens generated should be a whole number and greater than 0') }),
    async: true,
    tags
  },
  legacyGenerateFaucetTestToken: {
    summary: "Legacy generate-faucettest-token: test RBT from the test network's faucet; two-step",
    body: z.object({ did: didString, token_count: wholePositive('Invalid level number, level should be greater than 0').refine((n) => n <= 100, 'at most 100 tokens') }),
    async: true,
    tags
  },
  legacyInitiateSelfTransfer: {
    summary: "Legacy initiate-self-transfer: the sender's Free RBT old enough are re-issued to itself (receiver, tokenCOunt, comment ignored); two-step",
    body: z.object({ sender: z.string().min(1).max(200), type: z.number().int().optional() }),
    async: true,
    tags
  },
  legacyGetAllTokens: {
    summary: 'Legacy getalltokens: the tokens of a DID with the reference status codes (token_detials)',
    query: z.object({ did: didString, type: z.string().max(40).optional().describe('RBT (default), FT, NFT or SC; DT is not served') }),
    tags
  },
  legacyDumpTokenChain: {
    summary: "Legacy dump-token-chain: a token's blocks after block_id, base64 (blocks, next_block_id)",
    body: z.object({ token: z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid token'), block_id: z.string().max(200).optional() }),
    tags
  },
  legacyGetByNode: { summary: 'Legacy get-by-node: transactions sent and received per DID hosted here (TxnCount)', tags },
  legacyGetPledgedTokenDetails: { summary: 'Legacy get-pledgedtoken-details: the tokens pledged by the quorum DIDs of this node (token_state_details)', tags },
  legacyRunUnpledge: { summary: "Legacy run-unpledge: the quorum's unpledge sweep now", tags },
  legacyReleaseAllLockedTokens: { summary: 'Legacy release-all-locked-tokens (GET, as the reference)', tags },
  legacyValidateTokenChain: {
    summary: 'Legacy validate-token-chain: validates the chains of a token or of every token of a DID',
    query: z.object({
      did: didString,
      token: z.string().regex(/^[A-Za-z0-9]{0,100}$/, 'Invalid token').optional(),
      blockcount: z.string().regex(/^-?\d{1,9}$/, 'Failed to convert blockCount string into integer').optional(),
      SCChainValidation: z.string().regex(/^(1|0|t|f|true|false)$/i, 'Error converting string to boolean').optional()
    }),
    tags
  },
  legacyCheckPinnedState: {
    summary: 'Legacy check-pinned-state (DELETE, as the reference): not done by this node; answers status false naming what does the work here',
    query: z.object({ tokenstatehash: z.string().max(200).optional() }),
    tags
  },
  legacyCreateFt: {
    summary: 'Legacy create-ft: mints FTs backed by whole RBT of the creator; two-step',
    body: z.object({
      did: didString,
      ft_name: z.string().min(1, 'FT name is required').max(64),
      ft_count: wholePositive('number of tokens to create must be greater than zero'),
      token_count: wholePositive('number of whole tokens must be a positive integer')
    }),
    async: true,
    tags
  },
  legacyInitiateFtTransfer: {
    summary: 'Legacy initiate-ft-transfer: sends FTs of one name (creatorDID picks among creators); two-step',
    body: z.object({
      sender: z.string().min(1, 'Sender and receiver cannot be empty').max(200),
      receiver: z.string().min(1, 'Sender and receiver cannot be empty').max(200),
      ft_name: z.string().min(1, 'FT name is required').max(64),
      ft_count: wholePositive('Invalid FT count'),
      comment: z.string().max(4096).optional(),
      quorum_type: z.number().int().optional(),
      password: z.string().max(1024).optional(),
      creatorDID: z.string().max(200).optional()
    }),
    async: true,
    tags
  },
  legacyGetFtInfoByDid: { summary: 'Legacy get-ft-info-by-did: the FTs a DID holds by name and creator (ft_info)', query: z.object({ did: didString }), tags },
  legacyGetFtTokenChain: {
    summary: "Legacy get-ft-token-chain: an FT's blocks with readable fields (TokenChainData)",
    query: z.object({ tokenID: z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid FT token ID') }),
    tags
  },
  legacyDumpFtTokenChain: {
    summary: "Legacy dump-ft-token-chain: an FT's blocks after block_id, base64 (blocks, next_block_id)",
    body: z.object({ token: z.string().regex(/^[A-Za-z0-9]{1,100}$/, 'Invalid token'), block_id: z.string().max(200).optional() }),
    tags
  },
  legacyCreateNft: { summary: 'Legacy create-nft: multipart did field, metadata and artifact files (as nfts/generate); result the NFT id', multipart: true, tags },
  legacyDeployNft: {
    summary: 'Legacy deploy-nft: deploys a generated NFT with its value; two-step',
    body: z.object({ nft: nftId, did: z.string().min(1).max(200), quorum_type: z.number().int().optional(), nft_value: z.number(), nft_data: z.string().max(64 * 1024).optional() }),
    async: true,
    tags
  },
  legacyExecuteNft: {
    summary: 'Legacy execute-nft: a new state of an NFT by its owner, to a receiver when one is named; two-step',
    body: z.object({
      nft: nftId,
      owner: z.string().min(1).max(200),
      receiver: z.string().max(200).optional(),
      quorum_type: z.number().int().optional(),
      comment: z.string().max(4096).optional(),
      nft_value: z.number(),
      nft_data: z.string().max(64 * 1024).optional()
    }),
    async: true,
    tags
  },
  legacySubscribeNft: { summary: 'Legacy subscribe-nft: follows an NFT', body: z.object({ nft: nftId }), tags },
  legacyFetchNft: { summary: "Legacy fetch-nft: downloads an NFT's files", query: z.object({ nft: nftId }), tags },
  legacyListNfts: { summary: 'Legacy list-nfts: the NFTs known here (nfts)', query: z.object({ did: z.string().optional() }), tags },
  legacyGetNftsByDid: { summary: 'Legacy get-nfts-by-did: the NFTs a DID holds (nfts)', query: z.object({ did: didString }), tags },
  legacyGetNftTokenChainData: {
    summary: "Legacy get-nft-token-chain-data: an NFT's states (NFTDataReply), or the latest only",
    query: z.object({ nft: z.string().min(1, 'NFT token details not provided').max(100), latest: z.string().regex(/^(1|0|t|f|true|false)?$/i, 'Param is not a valid boolean').optional() }),
    tags
  },
  legacyDumpNftTokenChain: {
    summary: "Legacy dump-nft-token-chain: an NFT's blocks after blockId, base64 (blocks, next_block_id)",
    query: z.object({ nft: nftId, blockId: z.string().max(200).optional() }),
    tags
  },
  legacyGenerateSmartContract: {
    summary: 'Legacy generate-smart-contract: multipart did field, binaryCodePath (.wasm) and rawCodePath files (as smart_contracts/generate; schemaFilePath accepted and unused); result the contract id',
    multipart: true,
    tags
  },
  legacyDeploySmartContract: {
    summary: 'Legacy deploy-smart-contract: deploys a generated contract with its RBT value; two-step',
    body: z.object({
      smartContractToken: scId,
      deployerAddr: z.string().min(1, 'Invalid Deployer address').max(200),
      rbtAmount: z.number().min(0.001, 'Invalid RBT amount. Minimum RBT amount should be 0.001'),
      quorumType: z.number().int().optional(),
      comment: z.string().max(4096).optional()
    }),
    async: true,
    tags
  },
  legacyExecuteSmartContract: {
    summary: 'Legacy execute-smart-contract: runs the contract with smartContractData as input; two-step',
    body: z.object({
      smartContractToken: scId,
      executorAddr: z.string().min(1, 'Invalid Executer address').max(200),
      quorumType: z.number().int().optional(),
      comment: z.string().max(4096).optional(),
      smartContractData: z.string().max(64 * 1024).optional()
    }),
    async: true,
    tags
  },
  legacySubscribeSmartContract: { summary: 'Legacy subscribe-smart-contract: follows a contract', body: z.object({ smartContractToken: scId }), tags },
  legacyFetchSmartContract: { summary: "Legacy fetch-smart-contract: downloads a contract's files", query: z.object({ smartContractToken: scId }), tags },
  legacyRegisterCallbackUrl: {
    summary: 'Legacy register-callback-url: an http(s) URL told of every new state of the contract',
    body: z.object({ SmartContractToken: scId, CallBackURL: z.string().min(1).max(2048) }),
    tags
  },
  legacyGetSmartContractTokenChainData: {
    summary: "Legacy get-smart-contract-token-chain-data: the contract's inputs per block (SCTDataReply), or the latest only",
    body: z.object({ Token: scId, Latest: z.boolean().optional() }),
    tags
  },
  legacyDumpSmartContractTokenChain: {
    summary: "Legacy dump-smart-contract-token-chain: a contract's blocks after block_id, base64 (blocks, next_block_id)",
    body: z.object({ token: scId, block_id: z.string().max(200).optional() }),
    tags
  },
  legacySetupService: {
    summary: 'Legacy setup-service: configures the explorer service (as services/setup; db_user_name is the user)',
    body: z.object({
      service_name: z.string().max(100).optional(),
      db_type: z.string().max(40).optional(),
      db_address: z.string().max(255).optional(),
      db_port: z.union([z.number().int(), z.string().max(10)]).optional(),
      db_name: z.string().max(1024).optional(),
      db_user_name: z.string().max(255).optional(),
      db_password: z.string().max(1024).optional()
    }),
    tags
  },
  legacyRequestDidForPubkey: {
    summary: "Legacy request-did-for-pubkey: the lite DID of an external wallet's secp256k1 public key (hex); answers {did} without the envelope",
    body: z.object({ public_key: z.string().regex(/^[0-9a-fA-F]{66}$|^[0-9a-fA-F]{130}$/, 'Invalid public key') }),
    tags
  },
  legacyGetDidChallenge: notDone('getdidchallenge'),
  legacyLoginDid: notDone('logindid'),
  legacyAddUserApiKey: notDone('add-user-api-key'),
  legacySetupDb: notDone('setup-db'),
  legacyMigrateNode: notDone('migrate-node'),
  legacyLockTokens: notDone('lock-tokens'),
  legacyCreateDataToken: notDone('create-data-token'),
  legacyCommitDataToken: notDone('commit-data-token'),
  legacyCheckDataToken: notDone('check-data-token'),
  legacyGetDataToken: notDone('get-data-token'),
  legacyPublishSmartContract: notDone('publish-smart-contract'),
  legacyRemoveTokenChainBlock: notDone('remove-token-chain-block'),
  legacyGetAllExplorer: notDone('get-all-explorer'),
  legacyAddExplorer: notDone('add-explorer'),
  legacyRemoveExplorer: notDone('remove-explorer'),
  legacyUnpledgePowUnpledgeTokens: notDone('unpledge-pow-unpledge-tokens'),
  legacyInitiatePinToken: notDone('initiate-pin-token'),
  legacyRecoverToken: notDone('recover-token'),
  legacyFaucetTokenCheck: notDone('faucet-token-check'),
  legacyValidateToken: notDone('validate-token'),
  legacySendJwtFromWallet: notDone('send-jwt-from-wallet')
} as const

/** What `result` holds per legacy route; extra top-level keys are listed in docs/api.md. */
export interface LegacyApiResults {
  legacyGetAllDid: null
  legacyCreateDid: { did: string, peer_id: string | null }
  legacyRegisterDid: unknown
  legacySetupDid: string
  legacyGetPeerId: null
  legacyStart: null
  legacyShutdown: null
  legacyNodeStatus: null
  legacyPing: null
  legacyAddPeerDetails: null
  legacyAddBootstrap: null
  legacyRemoveBootstrap: null
  legacyRemoveAllBootstrap: null
  legacyGetAllBootstrap: { peers: string[] }
  legacyAddQuorum: null
  legacyGetAllQuorum: string[]
  legacyRemoveAllQuorum: null
  legacySetupQuorum: null
  legacyCheckQuorumStatus: null
  legacyGenerateTestToken: unknown
  legacyGenerateFaucetTestToken: unknown
  legacyInitiateSelfTransfer: unknown
  legacyGetAllTokens: null
  legacyDumpTokenChain: null
  legacyGetByNode: null
  legacyGetPledgedTokenDetails: null
  legacyRunUnpledge: RunUnpledgeResult
  legacyReleaseAllLockedTokens: ReleaseLockedResult
  legacyValidateTokenChain: ValidateChainResult
  legacyCheckPinnedState: null
  legacyCreateFt: unknown
  legacyInitiateFtTransfer: unknown
  legacyGetFtInfoByDid: null
  legacyGetFtTokenChain: null
  legacyDumpFtTokenChain: null
  legacyCreateNft: string
  legacyDeployNft: unknown
  legacyExecuteNft: unknown
  legacySubscribeNft: null
  legacyFetchNft: null
  legacyListNfts: null
  legacyGetNftsByDid: null
  legacyGetNftTokenChainData: null
  legacyDumpNftTokenChain: null
  legacyGenerateSmartContract: string
  legacyDeploySmartContract: unknown
  legacyExecuteSmartContract: unknown
  legacySubscribeSmartContract: null
  legacyFetchSmartContract: null
  legacyRegisterCallbackUrl: null
  legacyGetSmartContractTokenChainData: null
  legacyDumpSmartContractTokenChain: null
  legacyRequestDidForPubkey: { did: string }
  legacySetupService: null
  legacyGetDidChallenge: null
  legacyLoginDid: null
  legacyAddUserApiKey: null
  legacySetupDb: null
  legacyMigrateNode: null
  legacyLockTokens: null
  legacyCreateDataToken: null
  legacyCommitDataToken: null
  legacyCheckDataToken: null
  legacyGetDataToken: null
  legacyPublishSmartContract: null
  legacyRemoveTokenChainBlock: null
  legacyGetAllExplorer: null
  legacyAddExplorer: null
  legacyRemoveExplorer: null
  legacyUnpledgePowUnpledgeTokens: null
  legacyInitiatePinToken: null
  legacyRecoverToken: null
  legacyFaucetTokenCheck: null
  legacyValidateToken: null
  legacySendJwtFromWallet: null
}

/** GET /api/getalldid and /api/get-account-info: the reference's DIDAccountInfo list. */
export type LegacyAccountInfo = AccountInfoResult
