/**
 * The identity service's network side over our libp2p host: gossip topic for announcements,
 * DHT records under /rbt/did/<did>, and the `did.document` rpc method (paged: a basic DID's
 * public files are about 1.7 MB).
 */
import { peerIdFromString } from '@libp2p/peer-id'
import type { PrivateKey } from '@libp2p/interface'
import type { P2pHost, PagedSpec, RpcClient, RpcHandlers } from '../../p2p/index.js'
import { ErrorCode, RbtError, errorMessage } from '../../util/errors.js'
import type { Logger } from '../../util/logger.js'
import { isValidDid } from '../../wallet/did-string.js'
import { decodeAnnouncement, didRecordKey, encodeAnnouncement, preferAnnouncement, type DidAnnouncement } from './announcement.js'
import type { DidNetwork, IdentityService, PeerKeys } from './identity-service.js'
import { PEER_SERVICE_TOPIC, encodePeerMap, publishableOnPeerService } from './peer-service.js'

/** Gossipsub topic of DID → peer announcements. */
export const DID_TOPIC = '/rbt/did-announce/1.0.0'
/** Raw bytes per page of a DID document: kept small, the private-network cipher grows its buffer on large writes. */
const DOC_PAGE_BYTES = 256 * 1024
const MAX_DOC_BYTES = 16 * 1024 * 1024

export interface IdentityMethods {
  'did.document': PagedSpec<{ did: string }, { total: number, data: string }>
}

export function identityRpcHandlers (identity: IdentityService): RpcHandlers<IdentityMethods> {
  return {
    'did.document': async (req) => {
      if (req === null || typeof req !== 'object' || !isValidDid(req.did)) throw new RbtError(ErrorCode.INVALID_DID, 'Invalid DID')
      const bytes = await identity.encodedDocument(req.did)
      return (async function * () {
        for (let off = 0; off < bytes.length; off += DOC_PAGE_BYTES) {
          yield { total: bytes.length, data: Buffer.from(bytes.subarray(off, off + DOC_PAGE_BYTES)).toString('base64') }
        }
      })()
    }
  }
}

/** `peerService`: DID-signed announcements also go out on the reference's `peer_service` topic (-kubo). */
export function createDidNetwork (host: P2pHost, rpc: RpcClient<IdentityMethods>, log: Logger, opts: { peerService?: boolean } = {}): DidNetwork {
  return {
    async announce (a) {
      const bytes = encodeAnnouncement(a)
      let gossipPeers = 0
      try {
        gossipPeers = await host.publish(DID_TOPIC, bytes)
      } catch (e) {
        log.debug(`gossip of ${a.did} failed: ${errorMessage(e)}`)
      }
      if (opts.peerService === true && publishableOnPeerService(a)) {
        try {
          await host.publish(PEER_SERVICE_TOPIC, encodePeerMap(a))
        } catch (e) {
          log.debug(`${PEER_SERVICE_TOPIC} gossip of ${a.did} failed: ${errorMessage(e)}`)
        }
      }
      let dht = false
      try {
        await host.putValue(didRecordKey(a.did), bytes, { timeoutMs: 15_000 })
        dht = true
      } catch (e) {
        log.debug(`DHT put of ${a.did} failed: ${errorMessage(e)}`)
      }
      return { gossipPeers, dht }
    },
    async lookup (did) {
      try {
        return decodeAnnouncement(await host.getValue(didRecordKey(did), { timeoutMs: 10_000 }))
      } catch (e) {
        if (e instanceof RbtError && (e.code === ErrorCode.NOT_FOUND || e.code === ErrorCode.INVALID_INPUT)) return undefined
        throw e
      }
    },
    async fetchDocument (peerId, did) {
      const parts: Buffer[] = []
      let size = 0
      for await (const page of rpc.callPaged(peerId, 'did.document', { did }, { timeoutMs: 15_000 })) {
        if (typeof page?.data !== 'string' || typeof page.total !== 'number' || page.total > MAX_DOC_BYTES) {
          throw new RbtError(ErrorCode.PROTOCOL, `peer ${peerId} sent a malformed DID document page`)
        }
        const b = Buffer.from(page.data, 'base64')
        size += b.length
        if (size > page.total || size > MAX_DOC_BYTES) throw new RbtError(ErrorCode.PROTOCOL, `peer ${peerId} sent too much DID document data`)
        parts.push(b)
      }
      return new Uint8Array(Buffer.concat(parts))
    },
    connectedPeers: () => host.connectedPeers()
  }
}

/** Peer-key signing and verification (hosting claims). */
export function peerKeys (peerId: string, key: PrivateKey): PeerKeys {
  return {
    peerId,
    sign: async (data) => await key.sign(data),
    verify: async (other, data, sig) => {
      try {
        const pk = peerIdFromString(other).publicKey
        return pk !== undefined && await pk.verify(data, sig)
      } catch {
        return false
      }
    }
  }
}

/**
 * Validator for the `rbt` DHT namespace. `/rbt/did/<did>` records must be well-formed
 * announcements for that DID (signatures need the DID document, so they are checked when a
 * record is read, before it is used); any other kind only gets the size limit.
 */
export async function validateRbtRecord (key: Uint8Array, value: Uint8Array): Promise<void> {
  const k = new TextDecoder().decode(key)
  if (k.startsWith('/rbt/did/')) {
    const a = decodeAnnouncement(value)
    if (didRecordKey(a.did) !== k) throw new Error('DID record stored under another DID')
    return
  }
  if (value.byteLength > 64 * 1024) throw new Error('record larger than 65536 bytes')
}

/** Picks the best of several records for one key (DID records: signed beats claimed, then newest). */
export function selectRbtRecord (key: Uint8Array, records: Uint8Array[]): number {
  const k = new TextDecoder().decode(key)
  if (!k.startsWith('/rbt/did/')) return 0
  let best = -1
  let bestA: DidAnnouncement | undefined
  records.forEach((r, i) => {
    try {
      const a = decodeAnnouncement(r)
      if (bestA === undefined || preferAnnouncement(bestA, a) === a) { best = i; bestA = a }
    } catch {}
  })
  return Math.max(best, 0)
}
