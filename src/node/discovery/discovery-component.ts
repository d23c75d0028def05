import type { Component, Factory } from '../component/component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import { errorMessage } from '../../util/errors.js'
import type { P2pHost } from '../../p2p/host.js'
import { BootstrapService } from './bootstrap-service.js'
import { KnownPeers, type KnownPeer } from './known-peers.js'

/** Waits between dials of a bootstrap peer that is not connected: doubling from 1 s, at most 30 s. */
const REDIAL_FIRST_MS = 1000
const REDIAL_MAX_MS = 30_000

/**
 * How this node finds peers: the bootstrap list (node.json, `addbootstrap` …; a bootstrap peer not
 * connected is dialled again, with backoff, until it is), mDNS on the LAN, and the addresses of the
 * peers it was connected to before a restart (known-peers.ts).
 */
export interface DiscoveryComponent extends Component {
  /** the p2p host's discovery settings: well-formed bootstrap peers, mDNS on or off */
  hostOptions: (parse: (addr: string) => void) => { bootstrap: string[], mdns: { intervalMs?: number } | false }
}

export const discoveryComponent: Factory<{ storage: StorageComponent }, DiscoveryComponent> = ({ base, storage }) => {
  const { options, log } = base
  let host: P2pHost | undefined
  let parse: ((a: string) => void) | undefined
  const known = new KnownPeers(storage.store.collection<KnownPeer>('p2p-known-peers'), log.child('discovery'))
  let redial: NodeJS.Timeout | undefined

  /** Dials the bootstrap peers that are not connected, until each is (or the network stops). */
  const redialBootstrap = (h: P2pHost, wait: number): void => {
    redial = setTimeout(() => {
      const connected = new Set(h.connectedPeers())
      const missing = storage.config.data.bootstrap.filter((a) => {
        const id = /\/p2p\/([^/]+)$/.exec(a)?.[1]
        return id !== undefined && !connected.has(id)
      })
      if (missing.length === 0 || host !== h) return
      for (const a of missing) {
        h.dial(a, { timeoutMs: 10_000 })
          .then((p) => { log.info(`connected to bootstrap peer ${p}`) })
          .catch(() => { /* tried again after the next wait */ })
      }
      redialBootstrap(h, Math.min(wait * 2, REDIAL_MAX_MS))
    }, wait)
    redial.unref()
  }
  const bootstrap = new BootstrapService(storage.config, () => host === undefined || parse === undefined
    ? undefined
    : {
        parse,
        dialBootstrap: (a) => {
          host?.dial(a, { timeoutMs: 10_000 })
            .then((p) => { log.info(`connected to bootstrap peer ${p}`) })
            .catch((e) => { log.warn(`bootstrap dial ${a} failed: ${errorMessage(e)}`) })
        }
      }, log)
  return {
    api: { bootstrap },
    hostOptions: (p) => {
      parse = p
      return {
        bootstrap: storage.config.data.bootstrap.filter((a) => {
          try { p(a); return true } catch { log.warn(`ignoring malformed bootstrap peer ${a}`); return false }
        }),
        mdns: options.mdns ? { intervalMs: options.mdnsIntervalMs } : false
      }
    },
    startNetwork: async (net) => {
      host = net.host
      const n = await known.start(net.host).catch((e: unknown) => { log.warn(`known peers: ${errorMessage(e)}`); return 0 })
      if (n > 0) log.info(`addresses of ${n} peers known from before`)
      redialBootstrap(net.host, REDIAL_FIRST_MS)
    },
    stopNetwork: () => {
      host = undefined
      clearTimeout(redial)
      known.stop()
    }
  }
}
