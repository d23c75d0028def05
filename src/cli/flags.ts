import { Flags } from '@oclif/core'

/**
 * One flag set for every subcommand, as the reference CLI parses one Go flag set for all of them:
 * operators' scripts pass e.g. -testNet or -didType to any subcommand. A flag that does not apply to
 * a command is accepted and ignored. Defaults that depend on the command are applied by the command.
 */
export const globalFlags = {
  // client connection
  addr: Flags.string({ description: 'address of the node to talk to', default: 'localhost', helpGroup: 'CONNECTION' }),
  port: Flags.string({ description: 'API port of the node (client commands: default 20000; run: default 20000+n)', helpGroup: 'CONNECTION' }),
  json: Flags.boolean({ description: 'print the response envelope as JSON on stdout', default: false, helpGroup: 'OUTPUT' }),
  fp: Flags.boolean({ description: 'force password entry on the terminal (hidden input)', default: false, helpGroup: 'PASSWORD' }),
  // run
  c: Flags.string({ description: 'config file, encrypted with -k (default api_config.json in the working directory)', helpGroup: 'RUN' }),
  k: Flags.string({ description: 'config file encryption key (documented default TestKeyBasic#2022)', helpGroup: 'RUN' }),
  n: Flags.string({ description: 'node number: API port 20000+n, swarm port 4002+n', helpGroup: 'RUN' }),
  p: Flags.string({ description: 'working directory (default ./)', helpGroup: 'RUN' }),
  s: Flags.boolean({ description: 'start the core at boot (default true; -s=false waits for GET /svc/v1/node/start)', allowNo: true, helpGroup: 'RUN' }),
  testNet: Flags.boolean({ description: 'run on the test network (test swarm key, TestNet data)', allowNo: true, helpGroup: 'RUN' }),
  testNetKey: Flags.string({ description: 'test network swarm key file, resolved against the current directory (default testswarm.key; the packaged key when absent)', helpGroup: 'RUN' }),
  grpcPort: Flags.string({ description: 'accepted for compatibility; this node serves no gRPC', helpGroup: 'RUN' }),
  grpcAddr: Flags.string({ description: 'accepted for compatibility; this node serves no gRPC', helpGroup: 'RUN' }),
  grpcSecure: Flags.boolean({ description: 'accepted for compatibility; this node serves no gRPC', allowNo: true, helpGroup: 'RUN' }),
  logFile: Flags.string({ description: 'append the log lines to this file as well as writing them to stderr (docs/operations.md)', helpGroup: 'RUN' }),
  logLevel: Flags.string({ description: 'accepted for compatibility; the node logs info, warnings and errors', helpGroup: 'RUN' }),
  timeout: Flags.string({ description: 'accepted for compatibility (the reference\'s server timeout in minutes); not used', helpGroup: 'RUN' }),
  enableAuth: Flags.boolean({ description: 'the reference\'s DID-login API auth: refused by run, use -apiAuth', allowNo: true, helpGroup: 'RUN' }),
  arbitaryMode: Flags.boolean({ description: 'the reference\'s arbitrary mode (tokens locked by hand): refused by run, not supported', allowNo: true, helpGroup: 'RUN' }),
  defaultSetup: Flags.boolean({ description: "the reference's default faucet quorums: refused by run, set the quorum list with addquorum", allowNo: true, helpGroup: 'RUN' }),
  host: Flags.string({ description: 'address the HTTP API binds to (default 127.0.0.1)', helpGroup: 'RUN' }),
  swarmPort: Flags.string({ description: 'libp2p TCP port (default 4002+n)', helpGroup: 'RUN' }),
  swarmHost: Flags.string({ description: 'address the libp2p host listens on (default 127.0.0.1)', helpGroup: 'RUN' }),
  legacyPort: Flags.string({ description: 'serve the release-2.6 endpoints on this port (e.g. 1898)', helpGroup: 'RUN' }),
  fullnode: Flags.boolean({ description: 'run as a fullnode (keeps every chain it learns of, answers sync)', allowNo: true, helpGroup: 'RUN' }),
  faucet: Flags.boolean({ description: "run as the test network's faucet", allowNo: true, helpGroup: 'RUN' }),
  mdns: Flags.boolean({ description: 'find peers on the local network by mDNS (default true; -mdns=false turns it off; RBTNODE_MDNS=0|1 sets the default)', allowNo: true, helpGroup: 'RUN' }),
  kubo: Flags.boolean({ description: "speak the reference network's Kubo wire beside rbtnode's own: its two DHTs (/ipfs/kad/1.0.0, /ipfs/lan/kad/1.0.0) and the peer_service topic (default false; RBTNODE_KUBO=0|1 sets the default; docs/interop.md)", allowNo: true, helpGroup: 'RUN' }),
  apiAuth: Flags.boolean({ description: 'require a bearer token on every API call; a fresh token is written to <-p>/api.cookie (mode 0600) at each start', allowNo: true, helpGroup: 'RUN' }),
  allowHosts: Flags.string({ description: 'comma-separated Host names the API serves besides localhost, 127.0.0.1 and [::1]', helpGroup: 'RUN' }),
  corsOrigins: Flags.string({ description: 'comma-separated browser origins allowed to call the API (CORS); none by default', helpGroup: 'RUN' }),
  nftArtifactLimit: Flags.string({ description: 'largest NFT artifact create-nft accepts, in bytes or with a unit (500MiB, 4GiB, 2GB); default 4GiB', helpGroup: 'RUN' }),
  logFormat: Flags.string({ description: 'log line format on stderr: text (default, `<time> [LEVEL] <message>`) or json (one object per line); config rbtnode.log_format', helpGroup: 'RUN' }),
  trustOwnQuorumList: Flags.boolean({ description: 'accept incoming transfers only when signed by quorums of this node\'s own list (default: any 5 signers backed by valid pledges)', allowNo: true, helpGroup: 'RUN' }),
  requireCommittee: Flags.boolean({ description: 'count only arbiter seats as arbiters: no transfer is claimed, signed or accepted until an arbiter committee is in force (default: the peers of the view count until then)', allowNo: true, helpGroup: 'RUN' }),
  apiToken: Flags.string({ description: 'API token of a node started with -apiAuth (default: RBTNODE_API_TOKEN)', helpGroup: 'CONNECTION' }),
  // peers and bootstrap
  peers: Flags.string({ description: 'comma-separated multiaddresses', helpGroup: 'PEERS' }),
  peerID: Flags.string({ description: 'peer id (12D3KooW...)', helpGroup: 'PEERS' }),
  // DIDs
  did: Flags.string({ description: 'DID', helpGroup: 'DID' }),
  didType: Flags.string({ description: 'DID type: 0 basic, 1 standard, 2 wallet, 4 lite (default 0)', helpGroup: 'DID' }),
  didSecret: Flags.string({ description: 'DID secret for the image scheme (documented default "My DID Secret")', helpGroup: 'DID' }),
  privPWD: Flags.string({ description: 'private key password (documented default mypassword)', helpGroup: 'PASSWORD' }),
  quorumPWD: Flags.string({ description: 'quorum key password (documented default mypassword)', helpGroup: 'PASSWORD' }),
  imgFile: Flags.string({ description: 'DID image, a 256x256 PNG (default image.png)', helpGroup: 'DID' }),
  didImgFile: Flags.string({ description: 'DID image file (default did.png)', helpGroup: 'DID' }),
  privImgFile: Flags.string({ description: 'private share image (default pvtShare.png)', helpGroup: 'DID' }),
  pubImgFile: Flags.string({ description: 'public share image (default pubShare.png)', helpGroup: 'DID' }),
  privKeyFile: Flags.string({ description: 'private key file (default pvtKey.pem)', helpGroup: 'DID' }),
  pubKeyFile: Flags.string({ description: 'public key file (default pubKey.pem)', helpGroup: 'DID' }),
  mnemonic: Flags.string({ description: 'BIP-39 mnemonic to restore a lite DID', helpGroup: 'DID' }),
  childPath: Flags.string({ description: 'BIP-32 child index for lite DIDs (default 0)', helpGroup: 'DID' }),
  didRoot: Flags.boolean({ description: 'accepted for compatibility (root DID of the reference); not used', allowNo: true, helpGroup: 'DID' }),
  // quorums
  quorumList: Flags.string({ description: 'quorum list file (default quorumlist.json)', helpGroup: 'QUORUM' }),
  // tokens and transfers
  token: Flags.string({ description: 'token id', helpGroup: 'TOKENS' }),
  numTokens: Flags.string({ description: 'number of tokens', helpGroup: 'TOKENS' }),
  startIndex: Flags.string({ description: 'start index', helpGroup: 'TOKENS' }),
  senderAddr: Flags.string({ description: 'sender DID', helpGroup: 'TRANSFER' }),
  receiverAddr: Flags.string({ description: 'receiver DID', helpGroup: 'TRANSFER' }),
  rbtAmount: Flags.string({ description: 'RBT amount, up to 3 decimals', helpGroup: 'TRANSFER' }),
  transComment: Flags.string({ description: 'transaction comment (default "Test transaction")', helpGroup: 'TRANSFER' }),
  transType: Flags.string({ description: 'transaction type (default 2)', helpGroup: 'TRANSFER' }),
  quorumType: Flags.string({ description: 'quorum type of an NFT transaction: 2, the configured quorum list (the only kind this node uses)', helpGroup: 'TRANSFER' }),
  // sync
  tokenIDs: Flags.string({ description: 'comma-separated token ids', helpGroup: 'SYNC' }),
  excludeTxnIDs: Flags.string({ description: 'comma-separated transaction ids whose blocks are left out', helpGroup: 'SYNC' }),
  out: Flags.string({ description: 'file to write the whole result to, as JSON', helpGroup: 'SYNC' }),
  pageSize: Flags.string({ description: "blocks per answer of a paged sync (default: the node's, 1000)", helpGroup: 'SYNC' }),
  // FT / NFT
  ftName: Flags.string({ description: 'FT name', helpGroup: 'ASSETS' }),
  ftCount: Flags.string({ description: 'number of FTs', helpGroup: 'ASSETS' }),
  creatorDID: Flags.string({ description: 'FT creator DID', helpGroup: 'ASSETS' }),
  nft: Flags.string({ description: 'NFT id', helpGroup: 'ASSETS' }),
  nftValue: Flags.string({ description: 'NFT value in RBT, up to 3 decimals (pledged by the quorums)', helpGroup: 'ASSETS' }),
  nftData: Flags.string({ description: 'data recorded in the NFT block of a deploy or an execution', helpGroup: 'ASSETS' }),
  metadata: Flags.string({ description: 'NFT metadata JSON file', helpGroup: 'ASSETS' }),
  artifact: Flags.string({ description: 'NFT artifact file', helpGroup: 'ASSETS' }),
  deployerAddr: Flags.string({ description: 'deployer DID', helpGroup: 'ASSETS' }),
  executorAddr: Flags.string({ description: 'executor DID', helpGroup: 'ASSETS' }),
  // smart contracts
  sct: Flags.string({ description: 'smart contract id (token)', helpGroup: 'ASSETS' }),
  sctData: Flags.string({ description: 'smart contract call data (the contract input, e.g. JSON)', helpGroup: 'ASSETS' }),
  binCode: Flags.string({ description: 'compiled smart contract, a .wasm file', helpGroup: 'ASSETS' }),
  rawCode: Flags.string({ description: 'smart contract source, a .rs file', helpGroup: 'ASSETS' }),
  schemaFile: Flags.string({ description: 'smart contract schema file: accepted for compatibility; not used', helpGroup: 'ASSETS' }),
  // services
  srvName: Flags.string({ description: 'service name (default explorer_service)', helpGroup: 'SERVICE' }),
  dbAddress: Flags.string({ description: 'database address (default localhost)', helpGroup: 'SERVICE' }),
  dbName: Flags.string({ description: 'database name (default ExplorerDB)', helpGroup: 'SERVICE' }),
  dbPassword: Flags.string({ description: 'database password (documented default password)', helpGroup: 'SERVICE' }),
  dbPort: Flags.string({ description: 'database port (default 1433)', helpGroup: 'SERVICE' }),
  dbType: Flags.string({ description: 'database type (default SQLServer)', helpGroup: 'SERVICE' }),
  dbUsername: Flags.string({ description: 'database user (default sa)', helpGroup: 'SERVICE' })
}

export type GlobalFlags = { [K in keyof typeof globalFlags]: (typeof globalFlags)[K] extends { default: infer D } ? D : unknown }

/**
 * `-fullnode` of the sync commands: which fullnode to ask (peer id or multiaddr). It replaces, for
 * those commands only, the global boolean `-fullnode` of `run` (a command's own flag wins over the
 * shared set).
 */
export const fullnodeTarget = Flags.string({ description: 'fullnode to ask: peer id (12D3KooW...) or multiaddr (/ip4/.../p2p/12D3KooW...); default: the configured, then discovered fullnodes', helpGroup: 'SYNC' })
