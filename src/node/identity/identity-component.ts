import type { PrivateKey } from '@libp2p/interface'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import { didSignatureVerifier } from '../../tokens/index.js'
import { ChainValidationPool } from '../../tokens/chain-validation-pool.js'
import { errorMessage } from '../../util/errors.js'
import type { Component, Factory } from '../component/component.js'
import type { MetricsComponent } from '../metrics/metrics-component.js'
import type { SigningComponent } from '../signing/signing-component.js'
import type { StorageComponent } from '../storage/storage-component.js'
import type { PeerMapHeard } from '../../api/contract/routes.js'
import { DidStore } from './did-store.js'
import { PEER_SERVICE_TOPIC, PeerServiceLog } from './peer-service.js'
import { createIdentityApi } from './identity-api.js'
import { IdentityService, type DidNetwork, type PeerKeys } from './identity-service.js'

/** DIDs: local keys, documents, announcements and resolution (docs/architecture.md, "Identity"). */
export interface IdentityComponent extends Component {
  identity: IdentityService
  /**
   * A signature verifier over DID documents (local, cached or fetched), whole chains validated on
   * the node's one pool of worker threads; counted in the metrics unless `counted` is false.
   */
  verifier: (counted?: boolean) => SignatureVerifier
  /** the PeerMaps heard on the reference's peer_service topic (-kubo), newest first */
  peerService: () => PeerMapHeard[]
  /** the DHT record rules of DID records (the p2p host is built with them) */
  dhtRecords: () => Promise<{ validators: Record<string, (k: Uint8Array, v: Uint8Array) => Promise<void>>, selectors: Record<string, (k: Uint8Array, r: Uint8Array[]) => number> }>
}

type Needs = { storage: StorageComponent, signing: SigningComponent, metrics: MetricsComponent }

export const identityComponent: Factory<Needs, IdentityComponent> = ({ base, storage, signing, metrics }) => {
  const { store, config } = storage
  const log = base.log
  let didNetwork: DidNetwork | undefined
  let peerKeys: PeerKeys | undefined
  let republishTimer: NodeJS.Timeout | undefined
  const peerServiceLog = new PeerServiceLog()
  const identity = new IdentityService({
    store: new DidStore(base.layout.dids, store),
    kv: store,
    peers: {
      get: (did) => config.data.peers[did],
      set: async (did, peerId, didType) => { await config.update((d) => { d.peers[did] = { peerId, ...(didType !== undefined ? { didType } : {}), updatedAt: Date.now() } }) }
    },
    network: () => didNetwork,
    peerKeys: () => peerKeys,
    logger: log
  })
  /** whole-chain validation on worker threads, shared by every verifier of this node */
  const chainPool = new ChainValidationPool({ onWorkerError: (e) => { log.warn(`chain validation worker failed (replaced): ${errorMessage(e)}`) } })
  const resolver = { resolve: async (did: string) => await identity.documentOf(did).catch(() => undefined) }
  const net = async (): Promise<typeof import('./did-network.js')> => await import('./did-network.js')
  const api = createIdentityApi(identity, signing.signing, () => didNetwork !== undefined)
  return {
    identity,
    verifier: (counted = true) => {
      const v = didSignatureVerifier(resolver, { pool: chainPool })
      return counted ? metrics.metrics.counting(v) : v
    },
    dhtRecords: async () => {
      const m = await net()
      return { validators: { rbt: m.validateRbtRecord }, selectors: { rbt: m.selectRbtRecord } }
    },
    peerService: () => peerServiceLog.list(),
    api: { identity: api, signing: api },
    start: async () => { await identity.open() },
    stop: async () => { await chainPool.close() },
    rpcMethods: async () => (await net()).identityRpcHandlers(identity),
    // identity over the network: document rpc, announcement gossip, DHT records, periodic re-announce
    startNetwork: async ({ host, rpc, privateKey }) => {
      const m = await net()
      peerKeys = m.peerKeys(host.peerId, privateKey as PrivateKey)
      didNetwork = m.createDidNetwork(host, rpc, log.child('did-net'), { peerService: base.options.kubo })
      if (base.options.kubo) {
        // the reference's DID announcements (docs/interop.md): checked like ours, and noted
        host.subscribe(PEER_SERVICE_TOPIC, async (msg) => {
          const heard = await peerServiceLog.hear(msg.data, msg.from, async (d, f) => await identity.receiveAnnouncement(d, f))
          if (heard !== undefined) log.debug(`${PEER_SERVICE_TOPIC}: ${heard.did} → ${heard.peer_id}: ${heard.verified ? 'kept' : heard.reason ?? ''}`)
        })
      }
      host.subscribe(m.DID_TOPIC, async (msg) => {
        try {
          if (await identity.receiveAnnouncement(msg.data, msg.from)) log.debug(`learned a DID announcement from ${msg.from ?? 'unknown'}`)
        } catch (e) {
          log.debug(`ignoring a DID announcement: ${errorMessage(e)}`)
        }
      })
      const republish = (): void => {
        identity.republishAll()
          .then((n) => { if (n > 0) log.info(`announced ${n} local DID(s)`) })
          .catch((e) => { log.warn(`re-announcing DIDs failed: ${errorMessage(e)}`) })
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
      republishTimer = setInterval(republish, 20 * 60_000)
      republishTimer.unref()
    },
    stopNetwork: () => {
      if (republishTimer !== undefined) clearInterval(republishTimer)
      didNetwork = undefined
    }
  }
}
