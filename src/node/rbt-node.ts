import '../util/polyfill.js'
import { mkdirSync } from 'node:fs'
import { rm, writeFile } from 'node:fs/promises'
import { randomBytes } from 'node:crypto'
import type { AddressInfo } from 'node:net'
import type { Server } from 'node:http'
import { serve } from '@hono/node-server'
import { createApp } from '../api/server/app.js'
import type { NodeOverview, NodeStatus } from '../api/contract/routes.js'
import type { NodeOptions } from '../config/node-options.js'
import { LevelStore } from '../storage/level-store.js'
import { NodeConfigStore } from '../storage/node-config-store.js'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'
import { createLogger, type Logger } from '../util/logger.js'
import { dataDirLayout, type DataDirLayout } from './data-dir.js'
import { BootstrapService } from './bootstrap-service.js'
import type { ApiServices, NodeApi } from '../api/server/services.js'
import { packageVersion } from './version.js'
import { buildOverview } from './overview.js'
import { TokenLedger, type LedgerChange } from '../storage/token-ledger.js'
import { levelTokenRepositories } from '../storage/token-repositories.js'
import { sha3Hex } from '../tokenchain/hash.js'
import { describeSecpBackend } from '../wallet/secp-backend.js'
import { TokenService, didSignatureVerifier } from '../tokens/index.js'
import { createTokenApi } from './tokens/token-api.js'
import { createFtApi } from './tokens/ft-api.js'
import { ChainValidationPool } from '../tokens/chain-validation-pool.js'
import { FtService } from '../tokens/ft-service.js'
import type { P2pHost } from '../p2p/host.js'
import type { Rpc } from '../p2p/rpc.js'
import { DidStore } from './identity/did-store.js'
import { IdentityService } from './identity/identity-service.js'
import { createIdentityApi } from './identity/identity-api.js'
import type { IdentityMethods } from './identity/did-network.js'
import type { DidNetwork, PeerKeys } from './identity/identity-service.js'
import { TwoStepEngine } from './signing/two-step.js'
import { join } from 'node:path'
import { QuorumRegistry } from './consensus/quorum-registry.js'
import { createConsensusApi } from './consensus/consensus-api.js'
import { createOperatorApi } from './consensus/operator-api.js'
import type { ConsensusService } from './consensus/consensus-service.js'
import type { ConsensusMethods } from './consensus/consensus-network.js'
import type { NodeSpentMarkers, SpentMarkerMethods } from './consensus/spent-markers.js'
import type { Faucet } from './consensus/faucet.js'
import type { TokenRepositories } from '../storage/token-repositories.js'
import { sha3Hex as sha3 } from '../tokenchain/hash.js'
import { NftService, type NftNetwork } from './nft/nft-service.js'
import { NftFileStore } from '../token-files/nft/nft-files.js'
import { consensusLedger } from './consensus/ledger-adapter.js'
import { createNftNetwork, nftRpcHandlers, type NftMethods } from './nft/nft-network.js'
import { ScService } from './smart-contracts/sc-service.js'
import type { AssetServiceDeps } from './chain-follower/asset-service-deps.js'
import { ScFileStore } from '../token-files/smart-contracts/sc-files.js'
import { CallbackDispatcher } from './smart-contracts/callbacks.js'
import { createScNetwork, scRpcHandlers, type ScMethods, type ScNetwork } from './smart-contracts/sc-network.js'
import { ContractEngine } from '../contracts/sandbox.js'
import { ExplorerService } from './explorer/explorer-service.js'
import { kvExplorerSource } from './explorer/explorer-sync.js'
import { Legacy26Service } from './legacy26/legacy-service.js'
import { createLegacy26App } from '../api/server/legacy26/app.js'
import type { GuardOptions } from '../api/server/guard.js'
import { isLoopbackHost } from '../config/node-options.js'
import { createdTokens, FN_PLEDGES, SyncService, type SyncNetwork } from './sync/sync-service.js'
import { AnnouncementBatcher, transferAnnouncementBatcher, type Batcher, type TransferAnnouncement } from './sync/announcement-batcher.js'
import { createSyncApi } from './sync/sync-api.js'
import type { SyncMethods } from './sync/sync-network.js'
import { NodeMetrics } from './metrics/node-metrics.js'
import { Collections, type BalanceRecord } from '../storage/token-records.js'

/** Gossipsub topic where senders announce committed transfers (spent token states). */
export const TXN_TOPIC = '/rbt/txn/1.0.0'
/** One announcement on the transaction topic; merged batches carry no single txid. */
const publishTxn = async (host: P2pHost, m: TransferAnnouncement): Promise<void> => {
  await host.publish(TXN_TOPIC, new TextEncoder().encode(JSON.stringify({ txid: '', ...m })))
}
const FAUCET_KEY = (testNet: boolean): string => `/rbt/faucet/${testNet ? 'testnet' : 'mainnet'}`

/** The API token file of a node started with -apiAuth, in its working directory. */
export const API_COOKIE = 'api.cookie'

/** Test builds only (RBTNODE_TEST_HOOKS=1): RBTNODE_FAULT=<step> kills the process right after that durable step. */
function faultHook (): ((step: string) => void) | undefined {
  if (process.env.RBTNODE_TEST_HOOKS !== '1' || process.env.RBTNODE_FAULT === undefined) return undefined
  const steps = new Set(process.env.RBTNODE_FAULT.split(','))
  return (step) => { if (steps.has(step)) { process.stderr.write(`fault hook: killed at ${step}\n`); process.kill(process.pid, 'SIGKILL') } }
}

export interface RbtNodeInit {
  options: NodeOptions
  logger?: Logger
}

/** The ids a node follows (NFTs, smart contracts), kept in a collection across restarts. */
function followedIds (c: { put: (k: string, v: number) => Promise<void>, entries: () => AsyncIterable<[string, number]> }): { put: (id: string) => Promise<void>, list: () => Promise<string[]> } {
  return {
    put: async (id) => { await c.put(id, Date.now()) },
    list: async () => { const out: string[] = []; for await (const [k] of c.entries()) out.push(k); return out }
  }
}

/**
 * The composition root: builds storage, the HTTP API and the p2p core, and tears them down in
 * reverse order. Nothing else constructs long-lived services.
 */
export class RbtNode {
  readonly layout: DataDirLayout
  readonly log: Logger
  readonly store: LevelStore
  readonly config: NodeConfigStore
  readonly version = packageVersion()
  /** when this node object was made (the process start, near enough): the overview's uptime */
  private readonly startedAt = Date.now()
  private server?: Server
  /** the release-2.6 listener (-legacyPort) and its service */
  private legacyServer?: Server
  private legacy?: Legacy26Service
  private apiServices?: ApiServices
  private host?: P2pHost
  private coreStarting?: Promise<void>
  private closing?: Promise<void>
  private readonly closedDeferred: { promise: Promise<void>, resolve: () => void }
  private apiAddress = ''
  /** Every signing operation's two-step flow. */
  readonly signing: TwoStepEngine
  readonly identity: IdentityService
  /** Tokens, chains and balances. */
  readonly tokens: TokenService
  private rpc?: Rpc<IdentityMethods & ConsensusMethods & SpentMarkerMethods>
  private markers?: NodeSpentMarkers
  readonly tokenLedger: TokenLedger
  readonly repos: TokenRepositories
  readonly registry: QuorumRegistry
  /** The explorer service (setupservice): exports chain data to a relational database. */
  readonly explorer: ExplorerService
  private consensus?: ConsensusService
  private guard?: GuardOptions
  private faucet?: Faucet
  private unsubscribeGenesis?: () => void
  private genesisBatcher?: AnnouncementBatcher
  private txnBatcher?: Batcher<TransferAnnouncement>
  /** NFTs: files, consensus operations, subscriptions */
  readonly nfts: NftService
  readonly fts: FtService
  private nftNetwork?: NftNetwork
  /** Smart contracts: files, the WASM engine, consensus operations, subscriptions, callbacks */
  readonly contracts: ScService
  private readonly contractEngine = new ContractEngine()
  private readonly callbacks: CallbackDispatcher
  private scNetwork?: ScNetwork
  private didNetwork?: DidNetwork
  private peerKeys?: PeerKeys
  private republishTimer?: NodeJS.Timeout
  /** Chain sync: serving chains, the fullnode role, wallet recovery. */
  readonly sync: SyncService
  private syncNetwork?: SyncNetwork
  private fullnodeTimer?: NodeJS.Timeout
  /** Prometheus metrics of this node (GET /metrics), its own registry. */
  readonly metrics = new NodeMetrics()
  /** Whole-chain validation on worker threads, shared by every verifier of this node. */
  private readonly chainPool = new ChainValidationPool({ onWorkerError: (e) => { this.log.warn(`chain validation worker failed (replaced): ${errorMessage(e)}`) } })
  private readonly didResolver = { resolve: async (did: string) => await this.identity.documentOf(did).catch(() => undefined) }
  /** Signatures checked against DID documents; whole chains validated on the pool. */
  private didVerifier (): ReturnType<typeof didSignatureVerifier> { return didSignatureVerifier(this.didResolver, { pool: this.chainPool }) }

  private constructor (readonly options: NodeOptions, log: Logger) {
    this.log = log
    this.layout = dataDirLayout(options.dataDir)
    for (const d of [this.layout.root, this.layout.dids, this.layout.temp]) mkdirSync(d, { recursive: true })
    this.store = new LevelStore(this.layout.database)
    this.config = new NodeConfigStore(this.layout.nodeConfig)
    this.signing = new TwoStepEngine({ logger: log.child('signing') })
    this.identity = new IdentityService({
      store: new DidStore(this.layout.dids, this.store),
      kv: this.store,
      peers: {
        get: (did) => this.config.data.peers[did],
        set: async (did, peerId, didType) => { await this.config.update((d) => { d.peers[did] = { peerId, ...(didType !== undefined ? { didType } : {}), updatedAt: Date.now() } }) }
      },
      network: () => this.didNetwork,
      peerKeys: () => this.peerKeys,
      logger: log.child('identity')
    })
    this.tokenLedger = new TokenLedger(this.store, sha3Hex)
    this.tokenLedger.observeCommit(this.metrics.ledgerCommit)
    this.repos = levelTokenRepositories(this.store)
    this.registry = new QuorumRegistry(this.config, this.store, join(this.layout.root, 'quorum.secret'))
    const testHooks = process.env.RBTNODE_TEST_HOOKS === '1'
    this.explorer = new ExplorerService({
      config: this.config,
      sealer: this.registry,
      root: this.layout.root,
      source: kvExplorerSource(this.store, async () => await Promise.all((await this.identity.list()).map(async (did) => {
        const r = await this.identity.record(did)
        return { did, type: r?.type, createdAt: r?.createdAt }
      }))),
      ledger: this.tokenLedger,
      log: log.child('explorer'),
      sync: {
        ...(testHooks ? { faultFile: join(this.layout.root, 'explorer.down') } : {}),
        backoff: { initialMs: 500, maxMs: Number(process.env.RBTNODE_EXPLORER_MAX_BACKOFF_MS ?? 30_000) }
      }
    })
    this.tokens = new TokenService({
      ledger: this.tokenLedger,
      repos: this.repos,
      verifier: this.metrics.counting(this.didVerifier()),
      localMint: { allowed: options.testNet, refusal: 'Local RBT generation is available only on a test network: start the node with -testNet' },
      testNet: options.testNet
    })
    this.fts = new FtService({ store: this.store, ledger: this.tokenLedger, repos: this.repos, tokens: this.tokens })
    this.nfts = new NftService({
      ...this.assetDeps(() => this.nftNetwork, 'nft-follows', log.child('nft')),
      files: new NftFileStore(this.layout.nft)
    })
    this.sync = new SyncService({
      ledger: this.tokenLedger,
      repos: this.repos,
      verifier: this.metrics.counting(this.didVerifier()),
      fullnode: options.fullnode,
      isLocalDid: async (did) => await this.identity.isLocal(did),
      network: () => this.syncNetwork,
      pledges: this.store.collection(FN_PLEDGES),
      pledgePeriodMs: process.env.RBTNODE_PLEDGE_PERIOD_MS !== undefined ? Number(process.env.RBTNODE_PLEDGE_PERIOD_MS) : undefined,
      log: log.child('sync')
    })
    const scCallbacks = this.store.collection<string[]>('sc-callbacks')
    this.callbacks = new CallbackDispatcher({
      store: { get: async (id) => await scCallbacks.get(id), put: async (id, urls) => { await scCallbacks.put(id, urls) } },
      log: log.child('sc-callback'),
      // never a callback target on a local address: the API and release-2.6 ports, as configured and as bound
      ownPorts: () => [options.apiPort, options.legacyPort, ...[this.server, this.legacyServer].map((s) => (s?.address() as AddressInfo | null)?.port)]
        .filter((p): p is number => typeof p === 'number' && p > 0),
      allowHosts: options.callbackHosts
    })
    this.contracts = new ScService({
      ...this.assetDeps(() => this.scNetwork, 'sc-follows', log.child('sc')),
      files: new ScFileStore(this.layout.contracts),
      engine: this.contractEngine,
      callbacks: this.callbacks,
      port: options.apiPort
    })
    const balances = this.store.collection<BalanceRecord>(Collections.balances)
    this.metrics.setSources({
      connectedPeers: () => this.host?.connectedPeers().length ?? 0,
      pendingSignatures: () => this.signing.size,
      balances: async function * () { for await (const [, b] of balances.entries()) yield b },
      explorer: () => this.explorer.status()
    })
    let resolve!: () => void
    this.closedDeferred = { promise: new Promise<void>((r) => { resolve = r }), resolve }
  }

  /** Resolves once the node has fully stopped (after close or a shutdown request). */
  get closed (): Promise<void> { return this.closedDeferred.promise }

  static async init ({ options, logger }: RbtNodeInit): Promise<RbtNode> {
    const node = new RbtNode(options, logger ?? createLogger())
    try {
      // which secp256k1 implementation signs and verifies (libsecp256k1 or noble; decisions/0008)
      node.log.info(describeSecpBackend())
      await node.store.open()
      // a data dir from before the free-FT index gets it filled once
      const indexed = await node.tokenLedger.indexFreeFts()
      if (indexed > 0) node.log.info(`indexed ${indexed} free FT(s) kept from before the free-FT index`)
      await node.config.open(options.bootstrap)
      await node.identity.open()
      node.explorer.open()
      await node.listenApi()
      if (options.legacyPort !== undefined) await node.listenLegacy(options.legacyPort)
      if (options.startCore) await node.startCore()
      else node.log.info('core not started (-s=false): call GET /svc/v1/node/start to start it')
    } catch (e) {
      await node.close().catch(() => {})
      throw e
    }
    return node
  }

  get apiUrl (): string { return this.apiAddress }

  private services (): ApiServices {
    const nodeApi: NodeApi = {
      status: () => this.status(),
      overview: async () => await this.overview(),
      startCore: async () => {
        const already = this.host !== undefined
        await this.startCore()
        return already ? 'Core already started' : 'Core started successfully'
      },
      starting: () => !this.coreUp && (this.options.startCore || this.coreStarting !== undefined),
      requestShutdown: () => { setTimeout(() => { this.close().catch((e) => { this.log.error(`shutdown: ${errorMessage(e)}`) }) }, 20) },
      peerId: () => this.requireHost().peerId,
      ping: async (peerId) => {
        const host = this.requireHost()
        if (peerId === host.peerId) return { rttMs: 0, message: 'Ping Received' }
        const rttMs = await host.ping(peerId, { timeoutMs: 10_000 })
        return { rttMs, message: 'Ping Received' }
      },
      addPeer: async (did, peerId, didType) => {
        await this.config.update((d) => { d.peers[did] = { peerId, didType, updatedAt: Date.now() } })
      }
    }
    const identityApi = createIdentityApi(this.identity, this.signing, () => this.host !== undefined)
    const consensusApi = createConsensusApi({
      service: () => this.requireConsensus(),
      registry: this.registry,
      repos: this.repos,
      identity: { record: async (did) => await this.identity.record(did), isLocal: async (did) => await this.identity.isLocal(did) },
      twoStep: this.signing,
      remoteQuorumStatus: async (did) => {
        const rpc = this.rpc
        if (rpc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started')
        const { peerId } = await this.identity.resolvePeer(did)
        try {
          return (await rpc.call(peerId, 'quorum.status', { did }, { timeoutMs: 10_000 })).setup
        } catch (e) {
          throw new RbtError(ErrorCode.PEER_UNREACHABLE, `Quorum Connection Error: ${errorMessage(e)}`)
        }
      },
      requestFaucet: async (did, count, prompt) => await this.requestFaucet(did, count, prompt)
    })
    return {
      consensus: consensusApi,
      node: nodeApi,
      identity: identityApi,
      tokens: createTokenApi(this.tokens, this.identity, this.signing),
      nfts: this.nfts,
      sync: createSyncApi(this.sync, this.identity, this.signing),
      operator: createOperatorApi({
        consensus: () => this.requireConsensus(),
        repos: this.repos,
        localDids: async () => await this.identity.list(),
        ledger: () => consensusLedger(this.store, this.tokenLedger, this.repos),
        verifier: this.didVerifier(),
        didRecord: async (did) => await this.identity.record(did),
        twoStep: this.signing
      }),
      contracts: this.contracts,
      fts: createFtApi(this.fts, this.identity, this.signing),
      signing: identityApi,
      services: {
        setup: async (input) => await this.explorer.setup(input),
        get: (name) => {
          if (name !== 'explorer_service') throw new RbtError(ErrorCode.NOT_FOUND, `unknown service "${name}": the supported service is explorer_service`)
          return { config: this.explorer.config(), status: this.explorer.status() }
        }
      },
      bootstrap: new BootstrapService(this.config, () => this.host === undefined
        ? undefined
        : {
            parse: (a) => { this.parseAddr(a) },
            dialBootstrap: (a) => {
              this.host?.dial(a, { timeoutMs: 10_000 })
                .then((p) => { this.log.info(`connected to bootstrap peer ${p}`) })
                .catch((e) => { this.log.warn(`bootstrap dial ${a} failed: ${errorMessage(e)}`) })
            }
          }, this.log)
    }
  }

  private parseAddrFn?: (a: string) => void
  private parseAddr (a: string): void { this.parseAddrFn?.(a) }

  /**
   * The deps the NFT and smart-contract services share: the consensus ledger, identity, two-step
   * signing, transactions through the NFT path of consensus, and the followed ids kept in
   * `followsCollection`.
   */
  private assetDeps<Net> (network: () => Net | undefined, followsCollection: string, log: Logger): AssetServiceDeps<Net> {
    return {
      ledger: consensusLedger(this.store, this.tokenLedger, this.repos),
      repos: this.repos,
      tokens: this.tokens,
      identity: { isLocal: async (did) => await this.identity.isLocal(did), record: async (did) => await this.identity.record(did) },
      twoStep: this.signing,
      transact: async (input, prompt) => await this.requireConsensus().nft(input, prompt),
      network,
      follows: followedIds(this.store.collection<number>(followsCollection)),
      log
    }
  }

  private requireConsensus (): ConsensusService {
    if (this.consensus === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    return this.consensus
  }

  /** Asks the test network's faucet (this node, or the peer named by the faucet DHT record). */
  private async requestFaucet (did: string, count: number, prompt: import('../wallet/did-crypto.js').SignPrompt): Promise<{ txid: string, count: number }> {
    // the asker proves it controls the DID before anything is asked of the faucet
    const signer = await this.identity.signerFor(did, prompt)
    await signer.pvtSign(sha3(new TextEncoder().encode(`faucet|${did}|${count}`)))
    if (this.faucet !== undefined) return await this.faucet.serve(did, count)
    const host = this.requireHost()
    const rpc = this.rpc!
    let peer: string
    try {
      peer = (JSON.parse(new TextDecoder().decode(await host.getValue(FAUCET_KEY(this.options.testNet), { timeoutMs: 10_000 }))) as { peerId: string }).peerId
    } catch (e) {
      throw new RbtError(ErrorCode.NOT_FOUND, `no faucet found on this network (${errorMessage(e)}); a faucet is a test-network node started with -faucet`)
    }
    return await rpc.call(peer, 'faucet.request', { did, count }, { timeoutMs: 120_000 })
  }

  private requireHost (): P2pHost {
    if (this.host === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    return this.host
  }

  status (): NodeStatus {
    return {
      version: this.version,
      core_started: this.host !== undefined,
      peer_id: this.host?.peerId ?? null,
      listen: this.host?.multiaddrs() ?? [],
      connected_peers: this.host?.connectedPeers().length ?? 0,
      peers: this.host?.connectedPeers() ?? [],
      mdns: this.options.mdns,
      test_net: this.options.testNet,
      api: this.apiAddress,
      grpc: 'not served: this node has no gRPC interface',
      explorer: this.explorer.status()
    }
  }

  /** The operator's overview (`rbtnode status`): each part read from the service that owns it. */
  async overview (): Promise<NodeOverview> {
    return await buildOverview({
      version: this.version,
      startedAt: this.startedAt,
      peerId: this.host?.peerId ?? null,
      peers: this.host?.connectedPeers() ?? [],
      dids: async () => (await this.identity.store.list()).map((r) => ({ did: r.did, type: r.type })),
      rbt: async (did) => await this.tokens.rbtBalance(did),
      isQuorum: (did) => this.consensus?.quorum.isSetUp(did) ?? false,
      quorumList: async () => await this.registry.list(),
      operations: () => this.signing.operations(),
      openTransfers: async () => await this.consensus?.sender.openTransfers() ?? [],
      recentLog: () => this.log.recent?.() ?? []
    })
  }

  private async listenApi (): Promise<void> {
    this.apiServices = this.services()
    const { apiHost, apiPort } = this.options
    this.guard = await this.apiGuardOptions()
    const app = createApp(this.apiServices, { version: this.version, logger: this.log, guard: this.guard, maxJsonBytes: this.options.maxJsonBytes, metrics: this.metrics })
    this.server = await listen(app.fetch, apiHost, apiPort, 'API')
    const addr = this.server.address() as AddressInfo
    const host = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address
    this.apiAddress = `http://${host}:${addr.port}`
    this.log.info(`API listening on ${this.apiAddress}/svc/v1`)
  }

  /**
   * The browser guard's settings (docs/security.md). With `-apiAuth` a fresh random token is
   * written to <workDir>/api.cookie (mode 0600) at each start. An API bound to an address other
   * than loopback is refused without it: other machines would reach it with no secret at all.
   */
  private async apiGuardOptions (): Promise<GuardOptions> {
    const o = this.options
    if (!isLoopbackHost(o.apiHost) && !o.apiAuth) {
      throw new RbtError(ErrorCode.CONFIG, `the API would listen on ${o.apiHost}, reachable from other machines, without a token: start with -apiAuth (the token is written to ${join(o.workDir, API_COOKIE)}) or bind to 127.0.0.1`)
    }
    // the bind address itself is a name clients of a non-loopback node use
    const allowHosts = [...o.allowHosts, ...(isLoopbackHost(o.apiHost) || o.apiHost === '0.0.0.0' || o.apiHost === '::' ? [] : [o.apiHost.includes(':') ? `[${o.apiHost}]` : o.apiHost])]
    let token: string | undefined
    if (o.apiAuth) {
      token = randomBytes(32).toString('hex')
      const file = join(o.workDir, API_COOKIE)
      await rm(file, { force: true })
      await writeFile(file, token + '\n', { mode: 0o600 })
      this.log.info(`API token written to ${file} (send it as Authorization: Bearer <token>; the CLI reads RBTNODE_API_TOKEN or -apiToken)`)
    }
    return { allowHosts, corsOrigins: o.corsOrigins, ...(token !== undefined ? { token } : {}) }
  }

  /** The release-2.6 endpoints on their own port, bound to the API host. */
  private async listenLegacy (port: number): Promise<void> {
    const services = this.apiServices!
    const legacy = new Legacy26Service({
      identity: this.identity,
      config: this.config,
      consensus: () => this.requireConsensus(),
      consensusApi: services.consensus,
      signing: this.signing,
      fetchProof: async (pledger, token, txid) => {
        const rpc = this.rpc
        if (rpc === undefined) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started')
        const { peerId } = await this.identity.resolvePeer(pledger)
        try {
          return (await rpc.call(peerId, 'cs.powProof', { token, txid }, { timeoutMs: 30_000 })).proof ?? undefined
        } catch (e) {
          throw new RbtError(ErrorCode.PEER_UNREACHABLE, `the node of ${pledger} did not answer for the proof: ${errorMessage(e)}`)
        }
      },
      freeMilli: async (did) => (await this.repos.balances.get(did))?.sums.rbt?.Free ?? 0,
      pledgedFile: join(this.layout.root, 'PledgedTokens.json'),
      powLevel: this.options.legacyPowLevel,
      log: this.log.child('legacy26')
    })
    const app = createLegacy26App(legacy, { logger: this.log, guard: this.guard, maxJsonBytes: this.options.maxJsonBytes })
    this.legacyServer = await listen(app.fetch, this.options.apiHost, port, 'release-2.6')
    this.legacy = legacy
    legacy.start()
    const addr = this.legacyServer.address() as AddressInfo
    this.log.info(`release-2.6 endpoints listening on ${addr.address}:${addr.port} (proof-of-work level ${this.options.legacyPowLevel})`)
  }

  /** The core and its services are running (the end of doStartCore). */
  private coreUp = false

  /** Starts the p2p host and the services that need it; idempotent. */
  async startCore (): Promise<void> {
    this.coreStarting ??= this.doStartCore().catch((e) => { this.coreStarting = undefined; throw e })
    await this.coreStarting
  }

  private async doStartCore (): Promise<void> {
    const [hostMod, swarmMod, keyMod] = await Promise.all([import('../p2p/host.js'), import('../p2p/swarm-key.js'), import('../p2p/peer-key.js')])
    const p2p = { ...hostMod, ...swarmMod, ...keyMod }
    const didNet = await import('./identity/did-network.js')
    const keyPath = this.options.swarmKeyPath ?? p2p.defaultSwarmKeyPath(this.options.testNet)
    const swarmKey = await p2p.loadSwarmKey(keyPath)
    const peerKey = await p2p.loadOrCreatePeerKey(this.layout.peerKey)
    this.parseAddrFn = (a) => { p2p.parseMultiaddr(a) }
    const bootstrap = this.config.data.bootstrap.filter((a) => {
      try { p2p.parseMultiaddr(a); return true } catch { this.log.warn(`ignoring malformed bootstrap peer ${a}`); return false }
    })
    const host = await p2p.createP2pHost({
      privateKey: peerKey.privateKey,
      swarmKey,
      listen: [`/ip4/${this.options.swarmHost}/tcp/${this.options.swarmPort}`],
      bootstrap,
      mdns: this.options.mdns ? { intervalMs: this.options.mdnsIntervalMs } : false,
      logger: this.log.child('p2p'),
      gossip: { heartbeatIntervalMs: Number(process.env.RBTNODE_GOSSIP_HEARTBEAT_MS ?? 700) },
      dht: { validators: { rbt: didNet.validateRbtRecord }, selectors: { rbt: didNet.selectRbtRecord } }
    })
    await host.start()
    await this.startIdentityNetwork(host, peerKey.privateKey)
    this.host = host
    await this.startConsensus(host)
    this.coreUp = true
    this.log.info(`core started: peer id ${host.peerId}, swarm key ${this.options.swarmKeyPath ?? 'packaged ' + (this.options.testNet ? 'test net' : 'main net') + ' key'}`)
  }

  /** Identity over the network: document rpc, announcement gossip, DHT records, periodic re-announce. */
  private async startIdentityNetwork (host: P2pHost, privateKey: import('@libp2p/interface').PrivateKey): Promise<void> {
    const [rpcMod, netMod, csNet] = await Promise.all([import('../p2p/rpc.js'), import('./identity/did-network.js'), import('./consensus/consensus-network.js')])
    const syncNet = await import('./sync/sync-network.js')
    const markersMod = await import('./consensus/spent-markers.js')
    const rpc = rpcMod.createRpc<IdentityMethods & ConsensusMethods & NftMethods & ScMethods & SyncMethods & SpentMarkerMethods>({
      host,
      handlers: {
        ...netMod.identityRpcHandlers(this.identity), ...csNet.consensusRpcHandlers(() => this.requireConsensus()), ...nftRpcHandlers(() => this.nfts),
        ...markersMod.spentMarkerRpcHandlers(() => this.markers),
        ...scRpcHandlers(() => this.contracts), ...syncNet.syncRpcHandlers(() => this.sync)
      },
      logger: this.log.child('rpc'),
      // whole token chains travel in consensus messages
      maxFrameBytes: 64 * 1024 * 1024,
      handlerTimeoutMs: 120_000,
      observe: this.metrics.rpc
    })
    await rpc.start()
    this.rpc = rpc as unknown as Rpc<IdentityMethods & ConsensusMethods & SpentMarkerMethods>
    this.peerKeys = netMod.peerKeys(host.peerId, privateKey)
    this.didNetwork = netMod.createDidNetwork(host, rpc, this.log.child('did-net'))
    this.nftNetwork = createNftNetwork(host, rpc)
    const syncNetwork = syncNet.createSyncNetwork(host, rpc, { testNet: this.options.testNet, configured: () => this.options.fullnodes })
    this.syncNetwork = syncNetwork
    if (this.options.fullnode) {
      const advertise = (): void => { syncNetwork.advertise().catch((e) => { this.log.debug(errorMessage(e)) }) }
      setTimeout(advertise, 1500).unref()
      this.fullnodeTimer = setInterval(advertise, 10 * 60_000)
      this.fullnodeTimer.unref()
      this.log.info('fullnode: keeping the chain of every announced transaction, answering wallet sync')
    }
    this.scNetwork = createScNetwork(host, rpc)
    host.subscribe(netMod.DID_TOPIC, async (msg) => {
      try {
        if (await this.identity.receiveAnnouncement(msg.data, msg.from)) this.log.debug(`learned a DID announcement from ${msg.from ?? 'unknown'}`)
      } catch (e) {
        this.log.debug(`ignoring a DID announcement: ${errorMessage(e)}`)
      }
    })
    const republish = (): void => {
      this.identity.republishAll()
        .then((n) => { if (n > 0) this.log.info(`announced ${n} local DID(s)`) })
        .catch((e) => { this.log.warn(`re-announcing DIDs failed: ${errorMessage(e)}`) })
    }
    // once connections to bootstrap peers have had a moment to form, then every 20 minutes
    setTimeout(republish, 1500).unref()
    // a node that started alone announces again when its first peers arrive
    let lastRepublish = 0
    host.onPeerConnect(() => {
      if (Date.now() - lastRepublish < 10_000) return
      lastRepublish = Date.now()
      setTimeout(republish, 1000).unref()
    })
    this.republishTimer = setInterval(republish, 20 * 60_000)
    this.republishTimer.unref()
  }

  /**
   * Tokens that come into being here without a transfer (local and FT mints, part-token splits)
   * are announced on the transaction topic like a committed transfer, so fullnodes keep their
   * chains too and a wallet can recover tokens that never moved. Only tokens of local DIDs at
   * their genesis block are announced, batched: at most 500 ids per message, sent within 2 s.
   */
  private announceGenesis (host: P2pHost, change: LedgerChange): void {
    const fresh = createdTokens(change)
    if (fresh.length === 0) return
    this.genesisBatcher ??= new AnnouncementBatcher({
      publish: async (tokens) => { await publishTxn(host, { spent: [], tokens }) },
      onError: (e) => { this.log.debug(`announcing new tokens: ${errorMessage(e)}`) }
    })
    const batcher = this.genesisBatcher
    void (async () => {
      const ids: string[] = []
      for (const r of fresh) if (await this.identity.isLocal(r.owner)) ids.push(r.tokenId)
      batcher.add(ids)
    })().catch((e) => { this.log.debug(`announcing new tokens: ${errorMessage(e)}`) })
  }

  /** Transfers and quorum duty: sender, quorum and receiver roles over the rpc, spent markers, finality gossip. */
  private async startConsensus (host: P2pHost): Promise<void> {
    const [svcMod, netMod, ledgerMod, markersMod, faucetMod] = await Promise.all([
      import('./consensus/consensus-service.js'), import('./consensus/consensus-network.js'), import('./consensus/ledger-adapter.js'),
      import('./consensus/spent-markers.js'), import('./consensus/faucet.js')
    ])
    const verifier = this.metrics.counting(this.didVerifier())
    const env = (name: string): number | undefined => process.env[name] !== undefined ? Number(process.env[name]) : undefined
    const transport = netMod.consensusTransport(() => this.requireConsensus(), () => this.rpc, {
      isLocal: async (did) => await this.identity.isLocal(did),
      peerOf: async (did) => (await this.identity.resolvePeer(did)).peerId
    })
    // committed transfers are announced in merged messages (the states each spent, the tokens each moved)
    const txnBatcher = transferAnnouncementBatcher({
      publish: async (m) => { await publishTxn(host, m) },
      onError: (e) => { this.log.debug(`announcing transactions: ${errorMessage(e)}`) }
    })
    this.txnBatcher = txnBatcher
    const markers = markersMod.nodeSpentMarkers({
      host: () => this.host,
      rpc: () => this.rpc,
      verifier,
      signerFor: (did) => svc.quorumSignerOf(did),
      local: this.store.collection('spent-markers'),
      dhtTimeoutMs: env('RBTNODE_MARKER_TIMEOUT_MS'),
      log: this.log.child('markers')
    })
    this.markers = markers
    host.subscribe(markersMod.SPENT_TOPIC, async (msg) => { await markers.receive(msg.data).catch(() => {}) })
    const svc: ConsensusService = new svcMod.ConsensusService({
      ledger: ledgerMod.consensusLedger(this.store, this.tokenLedger, this.repos),
      verifier,
      identity: this.identity,
      registry: this.registry,
      transport,
      markers,
      selfPeer: () => host.peerId,
      log: this.log.child('consensus'),
      sweepIntervalMs: env('RBTNODE_SWEEP_MS'),
      trustOwnQuorumList: this.options.trustOwnQuorumList,
      pledgePeriodMs: env('RBTNODE_PLEDGE_PERIOD_MS'),
      staleVoteMs: env('RBTNODE_STALE_VOTE_MS'),
      fault: faultHook(),
      observe: this.metrics.consensus,
      onNftCommitted: (nftId, blockId, owner, txid) => {
        this.contracts.knows(nftId)
          .then((sc) => { if (sc) this.contracts.committed(nftId, blockId, txid, owner); else this.nfts.committed(nftId, blockId, owner, txid) })
          .catch((e) => { this.log.debug(`after ${txid}: ${errorMessage(e)}`) })
        // fullnodes learn NFT and contract states too (a deploy spends no earlier state)
        txnBatcher.add([{ spent: [], tokens: [nftId] }])
      },
      scCode: async (scId) => await this.contracts.code(scId),
      contracts: this.contractEngine,
      onCommitted: (txid, spent) => {
        const tokens = [...new Set(spent.map((s) => s.slice(0, s.indexOf('@') < 0 ? s.length : s.indexOf('@'))))]
        txnBatcher.add([{ spent, tokens }])
        svc.quorum.tokensMovedOn(spent).catch(() => {})
      },
      faucet: this.options.faucet ? async (did, count) => await this.faucet!.serve(did, count) : undefined
    })
    host.subscribe(TXN_TOPIC, async (msg) => {
      try {
        const m = JSON.parse(new TextDecoder().decode(msg.data)) as { spent?: unknown, tokens?: unknown }
        if (Array.isArray(m.tokens) && msg.from !== undefined && m.tokens.every((x) => typeof x === 'string')) this.sync.learn(msg.from, m.tokens as string[])
        // a pledge is released only on a valid spending block: from this node's ledger, else fetched from the announcer
        const source = msg.from !== undefined ? this.syncNetwork?.source(msg.from) : undefined
        if (Array.isArray(m.spent) && m.spent.every((x) => typeof x === 'string')) await svc.quorum.tokensMovedOn(m.spent as string[], source)
      } catch (e) {
        this.log.debug(`ignoring a transaction announcement: ${errorMessage(e)}`)
      }
    })
    this.consensus = svc
    this.unsubscribeGenesis?.()
    this.unsubscribeGenesis = this.tokenLedger.onCommit((change) => {
      this.announceGenesis(host, change)
      this.sync.indexPledges(change).catch((e) => { this.log.debug(`pledge index: ${errorMessage(e)}`) })
    })
    await this.nfts.resume().catch((e) => { this.log.warn(`NFT subscriptions: ${errorMessage(e)}`) })
    await this.contracts.resume().catch((e) => { this.log.warn(`smart-contract subscriptions: ${errorMessage(e)}`) })
    await svc.start()
    if (this.options.faucet) {
      if (!this.options.testNet) this.log.warn('-faucet ignored: a faucet runs only on a test network (-testNet)')
      else {
        this.faucet = new faucetMod.Faucet({ identity: this.identity, tokens: this.tokens, registry: this.registry, config: this.config, consensus: () => this.requireConsensus(), log: this.log.child('faucet') })
        const did = await this.faucet.did()
        const publish = (): void => {
          host.putValue(FAUCET_KEY(true), new TextEncoder().encode(JSON.stringify({ peerId: host.peerId, did })), { timeoutMs: 15_000 })
            .catch((e) => { this.log.debug(`faucet record: ${errorMessage(e)}`) })
        }
        setTimeout(publish, 1500).unref()
        setInterval(publish, 10 * 60_000).unref()
        this.log.info(`faucet ready: DID ${did}`)
      }
    }
  }

  /** Graceful stop: API first (no new work), then the core, then storage. */
  async close (): Promise<void> {
    this.closing ??= this.doClose()
    await this.closing
  }

  private async doClose (): Promise<void> {
    this.log.info('shutting down')
    this.legacy?.stop()
    await Promise.all([this.server, this.legacyServer].map(async (s) => { if (s !== undefined) await closeServer(s) }))
    if (this.coreStarting !== undefined) await this.coreStarting.catch(() => {})
    this.signing.stop()
    this.sync.stop()
    this.unsubscribeGenesis?.()
    this.genesisBatcher?.flush()
    this.txnBatcher?.flush()
    if (this.fullnodeTimer !== undefined) clearInterval(this.fullnodeTimer)
    this.consensus?.stop()
    if (this.republishTimer !== undefined) clearInterval(this.republishTimer)
    this.didNetwork = undefined
    if (this.rpc !== undefined) await this.rpc.stop().catch((e) => { this.log.warn(`rpc stop: ${errorMessage(e)}`) })
    if (this.host !== undefined) await this.host.stop().catch((e) => { this.log.warn(`p2p stop: ${errorMessage(e)}`) })
    await this.callbacks.drain()
    await this.explorer.stop().catch((e) => { this.log.warn(`explorer stop: ${errorMessage(e)}`) })
    await this.chainPool.close()
    await this.store.close().catch((e) => { this.log.warn(`storage close: ${errorMessage(e)}`) })
    this.log.info('stopped')
    this.closedDeferred.resolve()
  }
}

async function listen (fetch: Parameters<typeof serve>[0]['fetch'], host: string, port: number, what: string): Promise<Server> {
  return await new Promise<Server>((resolve, reject) => {
    const s = serve({ fetch, port, hostname: host }, () => { resolve(s as Server) }) as Server
    s.once('error', (e: NodeJS.ErrnoException) => {
      reject(new RbtError(ErrorCode.CONFIG, e.code === 'EADDRINUSE'
        ? `${what} port ${port} on ${host} is already in use (another node? pick another -n or -port)`
        : `cannot listen on ${host}:${port}: ${e.message}`, { cause: e }))
    })
  })
}

async function closeServer (s: Server): Promise<void> {
  await new Promise<void>((resolve) => {
    s.close(() => { resolve() })
    ;(s as unknown as { closeIdleConnections?: () => void }).closeIdleConnections?.()
    setTimeout(() => { (s as unknown as { closeAllConnections?: () => void }).closeAllConnections?.() }, 2000).unref()
  })
}
