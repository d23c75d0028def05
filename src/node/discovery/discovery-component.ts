import type { Component, Factory } from '../component/component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import { errorMessage } from '../../util/errors.js'
import type { P2pHost } from '../../p2p/host.js'
import { BootstrapService } from './bootstrap-service.js'

/** How this node finds peers: the bootstrap list (node.json, `addbootstrap` …) and mDNS on the LAN. */
export interface DiscoveryComponent extends Component {
  /** the p2p host's discovery settings: well-formed bootstrap peers, mDNS on or off */
  hostOptions: (parse: (addr: string) => void) => { bootstrap: string[], mdns: { intervalMs?: number } | false }
}

export const discoveryComponent: Factory<{ storage: StorageComponent }, DiscoveryComponent> = ({ base, storage }) => {
  const { options, log } = base
  let host: P2pHost | undefined
  let parse: ((a: string) => void) | undefined
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
    startNetwork: (net) => { host = net.host },
    stopNetwork: () => { host = undefined }
  }
}
