import type { Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import { createApp } from '../../api/server/app.js'
import type { ApiServices, NodeApi } from '../../api/server/services.js'
import type { NodeStatus } from '../../api/contract/routes.js'
import { errorMessage } from '../../util/errors.js'
import type { ApiGuardComponent } from '../api-guard/api-guard-component.js'
import type { Component, Factory } from '../component/component.js'
import type { ConsensusComponent } from '../consensus/consensus-component.js'
import type { ExplorerComponent } from '../explorer/explorer-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'
import type { P2pComponent } from '../p2p/p2p-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { TokensComponent } from '../tokens/tokens-component.js'
import { closeServer, listen } from './listen.js'
import { buildOverview } from './overview.js'
import { packageVersion } from './version.js'

/** The HTTP API (/svc/v1 and the reference's /api): every component's `api` part behind one guard. */
export interface HttpComponent extends Component {
  /** the services the app serves; set once the component has started */
  services: () => ApiServices
  url: () => string
}

type Needs = {
  storage: StorageComponent, metrics: MetricsComponent, signing: SigningComponent, identity: IdentityComponent, tokens: TokensComponent,
  consensus: ConsensusComponent, explorer: ExplorerComponent, p2p: P2pComponent, apiGuard: ApiGuardComponent
}

export const httpComponent: Factory<Needs, HttpComponent> = (c) => {
  const { options, log } = c.base
  const version = packageVersion()
  /** when this node was made (the process start, near enough): the overview's uptime */
  const startedAt = Date.now()
  let server: Server | undefined
  let services: ApiServices | undefined
  let address = ''
  const status = (): NodeStatus => {
    const host = c.p2p.host()
    return {
      version,
      core_started: host !== undefined,
      peer_id: host?.peerId ?? null,
      listen: host?.multiaddrs() ?? [],
      connected_peers: host?.connectedPeers().length ?? 0,
      peers: host?.connectedPeers() ?? [],
      mdns: options.mdns,
      test_net: options.testNet,
      api: address,
      grpc: 'not served: this node has no gRPC interface',
      explorer: c.explorer.explorer.status()
    }
  }
  const node: NodeApi = {
    status,
    // the operator's overview (`rbtnode status`): each part read from the component that owns it
    overview: async () => await buildOverview({
      version,
      startedAt,
      peerId: c.p2p.host()?.peerId ?? null,
      peers: c.p2p.host()?.connectedPeers() ?? [],
      dids: async () => (await c.identity.identity.store.list()).map((r) => ({ did: r.did, type: r.type })),
      rbt: async (did) => await c.tokens.tokens.rbtBalance(did),
      isQuorum: (did) => c.consensus.current()?.quorum.isSetUp(did) ?? false,
      quorumList: async () => await c.consensus.registry.list(),
      operations: () => c.signing.signing.operations(),
      openTransfers: async () => await c.consensus.current()?.sender.openTransfers() ?? [],
      recentLog: () => log.recent?.() ?? []
    }),
    startCore: async () => {
      const already = c.p2p.host() !== undefined
      await c.p2p.startCore()
      return already ? 'Core already started' : 'Core started successfully'
    },
    starting: () => c.p2p.starting(),
    untilUp: async (ms) => { await c.p2p.untilUp(ms) },
    requestShutdown: () => { setTimeout(() => { c.base.shutdown() }, 20) },
    peerId: () => c.p2p.requireHost().peerId,
    ping: async (peerId) => {
      const host = c.p2p.requireHost()
      if (peerId === host.peerId) return { rttMs: 0, message: 'Ping Received' }
      const rttMs = await host.ping(peerId, { timeoutMs: 10_000 })
      return { rttMs, message: 'Ping Received' }
    },
    addPeer: async (did, peerId, didType) => {
      await c.storage.config.update((d) => { d.peers[did] = { peerId, didType, updatedAt: Date.now() } })
    }
  }
  return {
    services: () => {
      if (services === undefined) throw new Error('the HTTP services are read before the API started')
      return services
    },
    url: () => address,
    start: async () => {
      const parts: Partial<ApiServices> = {}
      for (const [, comp] of c.base.components()) Object.assign(parts, comp.api)
      services = { ...parts, node } as ApiServices
      const app = createApp(services, { version, logger: log, guard: c.apiGuard.options(), maxJsonBytes: options.maxJsonBytes, metrics: c.metrics.metrics })
      server = await listen(app.fetch, options.apiHost, options.apiPort, 'API')
      const addr = server.address() as AddressInfo
      c.base.ownPorts.add(addr.port)
      address = `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`
      log.info(`API listening on ${address}/svc/v1`)
    },
    stop: async () => {
      if (server !== undefined) await closeServer(server).catch((e) => { log.warn(`API close: ${errorMessage(e)}`) })
    }
  }
}
