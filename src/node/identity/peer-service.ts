/**
 * The reference network's DID → peer announcements on the gossipsub topic `peer_service`, for nodes
 * run with -kubo (docs/interop.md). A reference node publishes its `core.PeerMap` there as Go's
 * encoding/json writes it, `{"peer_id","did","did_type","signature","time"}` with the signature in
 * base64, and checks what it hears against the DID's document. This node's own announcement has
 * the same fields and the same signed text (announcement.ts), so:
 *
 * - what it hears is handed to the identity service like an announcement of its own topic (its
 *   signature checked against the DID's document, the mapping kept when it verifies), and noted
 *   in a short log the operator reads (`GET /svc/v1/p2p/peer_service`);
 * - its own DID-signed announcements also go out here, in the reference's field order and
 *   escaping. Hosting claims (signed by the peer key, not the DID) stay on rbtnode's topic: a
 *   reference node could not verify them.
 */
import type { PeerMapHeard } from '../../api/contract/routes.js'
import { errorMessage } from '../../util/errors.js'
import { goJsonString } from '../../util/go-json.js'
import { decodeAnnouncement, isDidSigned, type DidAnnouncement } from './announcement.js'

/** The reference's topic of DID → peer announcements (its `core/peer.go`). */
export const PEER_SERVICE_TOPIC = 'peer_service'

/** How many heard PeerMaps the log keeps (newest first). */
export const PEER_SERVICE_LOG_SIZE = 256

/** A PeerMap as a reference node writes it: Go's field order and escaping, no field of rbtnode's own. */
export function encodePeerMap (a: DidAnnouncement): Uint8Array {
  const text = `{"peer_id":${goJsonString(a.peer_id)},"did":${goJsonString(a.did)},"did_type":${a.did_type},"signature":${goJsonString(a.signature)},"time":${goJsonString(a.time)}}`
  return new TextEncoder().encode(text)
}

/** Only what a reference node can verify goes out on its topic. */
export function publishableOnPeerService (a: DidAnnouncement): boolean {
  return isDidSigned(a)
}

/** The PeerMaps heard, newest first, at most PEER_SERVICE_LOG_SIZE. */
export class PeerServiceLog {
  private readonly entries: PeerMapHeard[] = []

  list (): PeerMapHeard[] {
    return this.entries.map((e) => ({ ...e }))
  }

  /**
   * Notes a message heard on the topic and hands it to `receive` (the identity service's check);
   * the entry shows the outcome once known. A message that is not a PeerMap is not noted.
   */
  async hear (data: Uint8Array, from: string | undefined, receive: (data: Uint8Array, from?: string) => Promise<boolean>): Promise<PeerMapHeard | undefined> {
    let a: DidAnnouncement
    try {
      a = decodeAnnouncement(data)
    } catch {
      return undefined
    }
    const entry: PeerMapHeard = { peer_id: a.peer_id, did: a.did, did_type: a.did_type, time: a.time, from: from ?? null, heard_at: new Date().toISOString(), verified: false, reason: 'being checked' }
    this.entries.unshift(entry)
    if (this.entries.length > PEER_SERVICE_LOG_SIZE) this.entries.length = PEER_SERVICE_LOG_SIZE
    try {
      if (await receive(data, from)) {
        entry.verified = true
        delete entry.reason
      } else {
        entry.reason = 'not kept: a DID of this node, an older announcement than the one known, or a signature that does not verify'
      }
    } catch (e) {
      entry.reason = `not checked: ${errorMessage(e)}`
    }
    return entry
  }
}
