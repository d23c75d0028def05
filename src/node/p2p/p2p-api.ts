/**
 * `/svc/v1/p2p/*`: what the wire does, for operators and the interop tests (docs/interop.md).
 * Peers and connect work on every node; Kubo's DHTs and the peer_service log need -kubo.
 */
import type { P2pApi } from '../../api/server/services.js'
import type { P2pHost } from '../../p2p/host.js'
import type { KuboRouting } from '../../p2p/kubo/kubo-routing.js'
import { parseCid } from '../../p2p/parse.js'
import { ErrorCode, RbtError } from '../../util/errors.js'
import type { P2pPeer, PeerMapHeard } from '../../api/contract/routes.js'

/** How long a provide or a lookup on Kubo's DHTs may take unless the caller says. */
const KUBO_DHT_TIMEOUT_MS = 30_000

export function createP2pApi (deps: { host: () => P2pHost, kubo: boolean, peerService: () => PeerMapHeard[] }): P2pApi {
  const kubo = (): KuboRouting => {
    const k = deps.host().kubo
    if (k === undefined || !deps.kubo) throw new RbtError(ErrorCode.NOT_FOUND, "Kubo's DHTs are not served by this node: start it with -kubo")
    return k
  }
  return {
    peers: async () => {
      const host = deps.host()
      const conns = host.libp2p.getConnections()
      const out = new Map<string, P2pPeer>()
      for (const c of conns) {
        const id = c.remotePeer.toString()
        if (out.has(id)) continue
        let protocols: string[] = []
        try { protocols = (await host.libp2p.peerStore.get(c.remotePeer)).protocols } catch {}
        out.set(id, { peer_id: id, addrs: conns.filter((x) => x.remotePeer.equals(c.remotePeer)).map((x) => x.remoteAddr.toString()), protocols: [...protocols].sort(), encryption: c.encryption ?? null, muxer: c.multiplexer ?? null })
      }
      return [...out.values()]
    },
    connect: async (addr) => await deps.host().dial(addr, { timeoutMs: 15_000 }),
    provide: async (cid, dht) => await kubo().provide(parseCid(cid), { ...(dht !== undefined ? { dht } : {}), timeoutMs: KUBO_DHT_TIMEOUT_MS }),
    providers: async (cid, opts) => {
      const found = await kubo().findProviders(parseCid(cid), { ...(opts.dht !== undefined ? { dht: opts.dht } : {}), timeoutMs: opts.timeoutMs ?? KUBO_DHT_TIMEOUT_MS })
      return found.map((p) => ({ peer_id: p.peerId, addrs: p.multiaddrs, dhts: p.dhts }))
    },
    peerService: () => {
      if (!deps.kubo) throw new RbtError(ErrorCode.NOT_FOUND, 'the peer_service topic is not followed by this node: start it with -kubo')
      return deps.peerService()
    }
  }
}
