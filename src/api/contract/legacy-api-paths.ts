/**
 * Paths and methods of the reference's `/api` routes this node serves as thin adapters over the
 * `/svc/v1` services (docs/api.md, "The reference's /api routes"). Spread into paths.ts; no runtime
 * dependencies, like paths.ts.
 */
export const legacyApiPaths = {
  // identity and node
  legacyGetAllDid: { method: 'GET', path: '/api/getalldid' },
  legacyCreateDid: { method: 'POST', path: '/api/createdid' },
  legacyRegisterDid: { method: 'POST', path: '/api/register-did' },
  legacySetupDid: { method: 'POST', path: '/api/setup-did' },
  legacyGetPeerId: { method: 'GET', path: '/api/get-peer-id' },
  legacyStart: { method: 'GET', path: '/api/start' },
  legacyShutdown: { method: 'POST', path: '/api/shutdown' },
  legacyNodeStatus: { method: 'GET', path: '/api/node-status' },
  legacyPing: { method: 'GET', path: '/api/ping' },
  legacyAddPeerDetails: { method: 'POST', path: '/api/add-peer-details' },
  // bootstrap and quorums
  legacyAddBootstrap: { method: 'POST', path: '/api/add-bootstrap' },
  legacyRemoveBootstrap: { method: 'POST', path: '/api/remove-bootstrap' },
  legacyRemoveAllBootstrap: { method: 'POST', path: '/api/remove-all-bootstrap' },
  legacyGetAllBootstrap: { method: 'GET', path: '/api/get-all-bootstrap' },
  legacyAddQuorum: { method: 'POST', path: '/api/addquorum' },
  legacyGetAllQuorum: { method: 'GET', path: '/api/getallquorum' },
  legacyRemoveAllQuorum: { method: 'GET', path: '/api/removeallquorum' },
  legacySetupQuorum: { method: 'POST', path: '/api/setup-quorum' },
  legacyCheckQuorumStatus: { method: 'GET', path: '/api/check-quorum-status' },
  // RBT tokens, transactions, diagnostics
  legacyGenerateTestToken: { method: 'POST', path: '/api/generate-test-token' },
  legacyGenerateFaucetTestToken: { method: 'POST', path: '/api/generate-faucettest-token' },
  legacyInitiateSelfTransfer: { method: 'POST', path: '/api/initiate-self-transfer' },
  legacyGetAllTokens: { method: 'GET', path: '/api/getalltokens' },
  legacyDumpTokenChain: { method: 'POST', path: '/api/dump-token-chain' },
  legacyGetByNode: { method: 'GET', path: '/api/get-by-node' },
  legacyGetPledgedTokenDetails: { method: 'GET', path: '/api/get-pledgedtoken-details' },
  legacyRunUnpledge: { method: 'POST', path: '/api/run-unpledge' },
  legacyReleaseAllLockedTokens: { method: 'GET', path: '/api/release-all-locked-tokens' },
  legacyValidateTokenChain: { method: 'GET', path: '/api/validate-token-chain' },
  legacyCheckPinnedState: { method: 'DELETE', path: '/api/check-pinned-state' },
  // FTs
  legacyCreateFt: { method: 'POST', path: '/api/create-ft' },
  legacyInitiateFtTransfer: { method: 'POST', path: '/api/initiate-ft-transfer' },
  legacyGetFtInfoByDid: { method: 'GET', path: '/api/get-ft-info-by-did' },
  legacyGetFtTokenChain: { method: 'GET', path: '/api/get-ft-token-chain' },
  legacyDumpFtTokenChain: { method: 'POST', path: '/api/dump-ft-token-chain' },
  // NFTs
  legacyCreateNft: { method: 'POST', path: '/api/create-nft' },
  legacyDeployNft: { method: 'POST', path: '/api/deploy-nft' },
  legacyExecuteNft: { method: 'POST', path: '/api/execute-nft' },
  legacySubscribeNft: { method: 'POST', path: '/api/subscribe-nft' },
  legacyFetchNft: { method: 'GET', path: '/api/fetch-nft' },
  legacyListNfts: { method: 'GET', path: '/api/list-nfts' },
  legacyGetNftsByDid: { method: 'GET', path: '/api/get-nfts-by-did' },
  legacyGetNftTokenChainData: { method: 'GET', path: '/api/get-nft-token-chain-data' },
  legacyDumpNftTokenChain: { method: 'GET', path: '/api/dump-nft-token-chain' },
  // smart contracts
  legacyGenerateSmartContract: { method: 'POST', path: '/api/generate-smart-contract' },
  legacyDeploySmartContract: { method: 'POST', path: '/api/deploy-smart-contract' },
  legacyExecuteSmartContract: { method: 'POST', path: '/api/execute-smart-contract' },
  legacySubscribeSmartContract: { method: 'POST', path: '/api/subscribe-smart-contract' },
  legacyFetchSmartContract: { method: 'GET', path: '/api/fetch-smart-contract' },
  legacyRegisterCallbackUrl: { method: 'POST', path: '/api/register-callback-url' },
  legacyGetSmartContractTokenChainData: { method: 'POST', path: '/api/get-smart-contract-token-chain-data' },
  legacyDumpSmartContractTokenChain: { method: 'POST', path: '/api/dump-smart-contract-token-chain' }
} as const
