import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { P2pHost } from '../../p2p/host.js'
import type { RpcHandlers } from '../../p2p/rpc.js'
import { runByDependencies, type Component, type Factory, type Network } from '../component/component.js'
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
  /**
   * Resolves once the core and every network part are up (at once when they are); rejects with
   * NOT_RUNNING when the core is not starting, when its start fails, or after `timeoutMs`.
   */
  untilUp: (timeoutMs: number) => Promise<void>
}

type Needs = { metrics: MetricsComponent, discovery: DiscoveryComponent, identity: IdentityComponent }

export const p2pComponent: Factory<Needs, P2pComponent> = ({ base, metrics, discovery, identity }) => {
  const { options, log, signal } = base
  let net: Network | undefined
  let starting: Promise<void> | undefined
  /** the core and every component's network part are running */
  let up = false
  /** requests waiting for the core to come up */
  const waiting = new Set<{ resolve: () => void, reject: (e: unknown) => void }>()
  const settle = (e?: unknown): void => {
    for (const w of waiting) { if (e === undefined) w.resolve(); else w.reject(e) }
    waiting.clear()
  }
  const notStarted = (): RbtError => new RbtError(ErrorCode.NOT_RUNNING, 'core not started: call GET /svc/v1/node/start first')
  const withNetwork = (): Array<[string, Component]> => base.components().filter(([, c]) => c.startNetwork !== undefined || c.rpcMethods !== undefined)
  metrics.metrics.setSources({ connectedPeers: () => net?.host.connectedPeers().length ?? 0 })

  const delay = networkDelay()
  const doStart = async (): Promise<void> => {
    // the components' rpc methods load their network modules while the host is made
    const methods = Promise.all(withNetwork().map(async ([, c]) => await c.rpcMethods?.()))
    methods.catch(() => {})
    const [hostMod, swarmMod, keyMod, rpcMod] = await Promise.all([import('../../p2p/host.js'), import('../../p2p/swarm-key.js'), import('../../p2p/peer-key.js'), import('../../p2p/rpc.js')])
    const keyPath = options.swarmKeyPath ?? swarmMod.defaultSwarmKeyPath(options.testNet)
    const [swarmKey, peerKey, dht] = await Promise.all([swarmMod.loadSwarmKey(keyPath), keyMod.loadOrCreatePeerKey(base.layout.peerKey), identity.dhtRecords()])
    const host = await hostMod.createP2pHost({
      privateKey: peerKey.privateKey,
      swarmKey,
      listen: [`/ip4/${options.swarmHost}/tcp/${options.swarmPort}`],
      ...discovery.hostOptions((a) => { hostMod.parseMultiaddr(a) }),
      logger: log,
      gossip: { heartbeatIntervalMs: Number(process.env.RBTNODE_GOSSIP_HEARTBEAT_MS ?? 700) },
      dht,
      kubo: options.kubo
    })
    await host.start()
    const handlers = Object.assign({}, ...await methods) as object
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
    // every network part at once, but after those it names in networkAfter
    const t0 = performance.now()
    await runByDependencies(withNetwork().filter(([, c]) => c.startNetwork !== undefined), (c) => c.networkAfter, async (name, c) => {
      if (signal.aborted) throw new RbtError(ErrorCode.NOT_RUNNING, 'the node is stopping')
      const t = performance.now()
      if (delay?.component === name) await new Promise((resolve) => setTimeout(resolve, delay.ms))
      await c.startNetwork?.(n)
      log.debug(`${name}: network part started in ${(performance.now() - t).toFixed(1)} ms (${(performance.now() - t0).toFixed(1)} ms after the first)`)
    })
    up = true
    log.info(`core started: peer id ${host.peerId}, swarm key ${options.swarmKeyPath ?? 'packaged ' + (options.testNet ? 'test net' : 'main net') + ' key'}`)
  }

  const requireHost = (): P2pHost => {
    if (net === undefined || !up) throw notStarted()
    return net.host
  }
  return {
    api: { p2p: createP2pApi({ host: requireHost, kubo: options.kubo, peerService: identity.peerService }) },
    host: () => up ? net?.host : undefined,
    rpc: () => up ? net?.rpc : undefined,
    requireHost,
    starting: () => !up && (options.startCore || starting !== undefined),
    untilUp: async (timeoutMs) => {
      if (up) return
      if (!options.startCore && starting === undefined) throw notStarted()
      let timer: NodeJS.Timeout | undefined
      let w: { resolve: () => void, reject: (e: unknown) => void } | undefined
      try {
        await new Promise<void>((resolve, reject) => {
          w = { resolve, reject }
          waiting.add(w)
          timer = setTimeout(() => { reject(new RbtError(ErrorCode.NOT_RUNNING, 'the node is starting: its core is not up yet; retry')) }, timeoutMs)
        })
      } finally {
        clearTimeout(timer)
        if (w !== undefined) waiting.delete(w)
      }
    },
    startCore: async () => {
      starting ??= doStart().then(() => { settle() }, (e: unknown) => {
        starting = undefined
        settle(new RbtError(ErrorCode.NOT_RUNNING, `the core failed to start: ${errorMessage(e)}`))
        throw e
      })
      await starting
    },
    stop: async () => {
      settle(new RbtError(ErrorCode.NOT_RUNNING, 'the node is stopping'))
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

/**
 * Test builds only (RBTNODE_TEST_HOOKS=1): RBTNODE_NETWORK_DELAY=<component>:<ms> holds that
 * component's network part back, so the core stays starting that long.
 */
function networkDelay (): { component: string, ms: number } | undefined {
  const v = process.env.RBTNODE_NETWORK_DELAY
  if (process.env.RBTNODE_TEST_HOOKS !== '1' || v === undefined) return undefined
  const [component = '', ms = '0'] = v.split(':')
  return { component, ms: Number(ms) }
}
