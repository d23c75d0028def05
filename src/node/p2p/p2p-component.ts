import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { P2pHost } from '../../p2p/host.js'
import type { RpcHandlers } from '../../p2p/rpc.js'
import type { Component, Factory, Network } from '../component/component.js'
import type { DiscoveryComponent } from '../discovery/discovery-component.js'
import type { IdentityComponent } from '../identity/identity-component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'
import { createP2pApi } from './p2p-api.js'

/**
 * The p2p core: one libp2p host and one rpc node serving every component's methods. Started at
 * node start (unless -s=false) or by GET /svc/v1/node/start; then each component's network part
 * starts, in list order, and stops in reverse before the host.
 */
export interface P2pComponent extends Component {
  /** the running host, or undefined until the core and every network part have started */
  host: () => P2pHost | undefined
  requireHost: () => P2pHost
  /** the running rpc node, or undefined before the core starts */
  rpc: () => Network['rpc'] | undefined
  /** starts the core; idempotent */
  startCore: () => Promise<void>
  /** the core is on its way up (launched to start it, or a start under way) and not running yet */
  starting: () => boolean
}

type Needs = { metrics: MetricsComponent, discovery: DiscoveryComponent, identity: IdentityComponent }

export const p2pComponent: Factory<Needs, P2pComponent> = ({ base, metrics, discovery, identity }) => {
  const { options, log, signal } = base
  let net: Network | undefined
  let starting: Promise<void> | undefined
  /** the core and every component's network part are running */
  let up = false
  const withNetwork = (): Array<[string, Component]> => base.components().filter(([, c]) => c.startNetwork !== undefined || c.rpcMethods !== undefined)
  metrics.metrics.setSources({ connectedPeers: () => net?.host.connectedPeers().length ?? 0 })

  const doStart = async (): Promise<void> => {
    const [hostMod, swarmMod, keyMod, rpcMod] = await Promise.all([import('../../p2p/host.js'), import('../../p2p/swarm-key.js'), import('../../p2p/peer-key.js'), import('../../p2p/rpc.js')])
    const keyPath = options.swarmKeyPath ?? swarmMod.defaultSwarmKeyPath(options.testNet)
    const swarmKey = await swarmMod.loadSwarmKey(keyPath)
    const peerKey = await keyMod.loadOrCreatePeerKey(base.layout.peerKey)
    const host = await hostMod.createP2pHost({
      privateKey: peerKey.privateKey,
      swarmKey,
      listen: [`/ip4/${options.swarmHost}/tcp/${options.swarmPort}`],
      ...discovery.hostOptions((a) => { hostMod.parseMultiaddr(a) }),
      logger: log,
      gossip: { heartbeatIntervalMs: Number(process.env.RBTNODE_GOSSIP_HEARTBEAT_MS ?? 700) },
      dht: await identity.dhtRecords(),
      kubo: options.kubo
    })
    await host.start()
    const handlers = {}
    for (const [, c] of withNetwork()) Object.assign(handlers, await c.rpcMethods?.())
    const rpc = rpcMod.createRpc<any>({
      host,
      handlers: handlers as RpcHandlers<any>,
      logger: log.child('rpc'),
      // whole token chains travel in consensus messages
      maxFrameBytes: 64 * 1024 * 1024,
      handlerTimeoutMs: 120_000,
      observe: metrics.metrics.rpc
    })
    await rpc.start()
    const n: Network = { host, rpc, privateKey: peerKey.privateKey }
    net = n
    for (const [name, c] of withNetwork()) {
      if (signal.aborted) throw new RbtError(ErrorCode.NOT_RUNNING, 'the node is stopping')
      const t0 = performance.now()
      await c.startNetwork?.(n)
      if (c.startNetwork !== undefined) log.debug(`${name}: network part started in ${(performance.now() - t0).toFixed(1)} ms`)
    }
    up = true
    log.info(`core started: peer id ${host.peerId}, swarm key ${options.swarmKeyPath ?? 'packaged ' + (options.testNet ? 'test net' : 'main net') + ' key'}`)
  }

  const requireHost = (): P2pHost => {
    if (net === undefined || !up) throw new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
    return net.host
  }
  return {
    api: { p2p: createP2pApi({ host: requireHost, kubo: options.kubo, peerService: identity.peerService }) },
    host: () => up ? net?.host : undefined,
    rpc: () => up ? net?.rpc : undefined,
    requireHost,
    starting: () => !up && (options.startCore || starting !== undefined),
    startCore: async () => {
      starting ??= doStart().catch((e) => { starting = undefined; throw e })
      await starting
    },
    stop: async () => {
      if (starting !== undefined) await starting.catch(() => {})
      if (net === undefined) return
      for (const [name, c] of withNetwork().reverse()) {
        try { await c.stopNetwork?.() } catch (e) { log.warn(`${name} network stop: ${errorMessage(e)}`) }
      }
      await net.rpc.stop().catch((e) => { log.warn(`rpc stop: ${errorMessage(e)}`) })
      await net.host.stop().catch((e) => { log.warn(`p2p stop: ${errorMessage(e)}`) })
    }
  }
}

/** Starts the core when the node starts (the last component: the API already answers), unless -s=false. */
export const coreComponent: Factory<{ p2p: P2pComponent }, Component> = ({ base, p2p }) => ({
  start: async () => {
    if (base.options.startCore) await p2p.startCore()
    else base.log.info('core not started (-s=false): call GET /svc/v1/node/start to start it')
  }
})
