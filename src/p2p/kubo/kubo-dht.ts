/**
 * The two DHTs of a Kubo daemon, beside rbtnode's own (`/rbt/kad/1.0.0`): Kubo runs go-libp2p's
 * dual DHT, a WAN table on `/ipfs/kad/1.0.0` that keeps only peers with a public address, and a LAN
 * table on `/ipfs/lan/kad/1.0.0` (the WAN id with `/lan` inserted) that keeps peers reached over a
 * private address and is always in server mode. A reference node's Kubo runs both in server mode
 * (`Routing.Type` dht on a reachable host), so both are served here too.
 *
 * They are libp2p services of the host, but not content or peer routers of libp2p: libp2p would
 * otherwise send every provide and lookup of rbtnode's own (NFT providers, dials by peer id) to all
 * three DHTs. Only KuboRouting (kubo-routing.ts) asks them.
 */
import { contentRoutingSymbol, peerRoutingSymbol } from '@libp2p/interface'
import { kadDHT, passthroughMapper, removePrivateAddressesMapper, type KadDHT } from '@libp2p/kad-dht'

/** go-libp2p-kad-dht's protocol id, the WAN table of Kubo's dual DHT. */
export const KUBO_WAN_PROTOCOL = '/ipfs/kad/1.0.0'
/** the LAN table of Kubo's dual DHT: the WAN id with go's LanExtension `/lan` after `/ipfs`. */
export const KUBO_LAN_PROTOCOL = '/ipfs/lan/kad/1.0.0'

/** Service names of the two tables on the host. */
export const KUBO_WAN_SERVICE = 'kuboWan'
export const KUBO_LAN_SERVICE = 'kuboLan'

type DhtFactory = ReturnType<typeof kadDHT>

/** A kad-dht that libp2p does not take for one of its content or peer routers. */
function unrouted (factory: DhtFactory): DhtFactory {
  return (components) => {
    const dht = factory(components)
    Object.defineProperty(dht, contentRoutingSymbol, { value: undefined, configurable: true })
    Object.defineProperty(dht, peerRoutingSymbol, { value: undefined, configurable: true })
    return dht
  }
}

/**
 * The two services, keyed by KUBO_WAN_SERVICE and KUBO_LAN_SERVICE. Each keeps its provider
 * records and routing state under a datastore prefix of its own (the three DHTs share the host's
 * datastore). The WAN table, like Kubo's, drops private and loopback addresses of the peers it
 * learns; the LAN one keeps every address (Kubo's LAN query filter only asks for one).
 */
export function kuboDhtServices (): Record<typeof KUBO_WAN_SERVICE | typeof KUBO_LAN_SERVICE, DhtFactory> {
  return {
    [KUBO_WAN_SERVICE]: unrouted(kadDHT({
      protocol: KUBO_WAN_PROTOCOL,
      clientMode: false,
      peerInfoMapper: removePrivateAddressesMapper,
      datastorePrefix: '/kubo-dht-wan',
      logPrefix: 'libp2p:kubo-dht-wan',
      metricsPrefix: 'libp2p_kubo_dht_wan'
    })),
    [KUBO_LAN_SERVICE]: unrouted(kadDHT({
      protocol: KUBO_LAN_PROTOCOL,
      clientMode: false,
      peerInfoMapper: passthroughMapper,
      datastorePrefix: '/kubo-dht-lan',
      logPrefix: 'libp2p:kubo-dht-lan',
      metricsPrefix: 'libp2p_kubo_dht_lan'
    }))
  }
}

export type { KadDHT }
