/**
 * DID → peer announcements: "DID d is hosted by peer p since time t", signed.
 *
 * Field names follow the reference's `peer_service` message ({peer_id, did, did_type, signature,
 * time}); the signed text is the same as the reference's: ASCII hex of SHA3-256(peer_id‖did‖time),
 * signed with the DID's private key (`PvtSign`). When the node cannot sign for the DID itself
 * (the key lives with the client: standard, wallet and public-key-only lite DIDs) it still makes
 * the DID resolvable at creation with a *hosting claim* signed by its peer key
 * (`peer_signature`); a DID-signed announcement always wins over a claim.
 */
import { ErrorCode, RbtError } from '../../util/errors.js'
import { isValidDid } from '../../wallet/did-string.js'
import { isDidType, type DidType } from '../../wallet/did-document.js'
import { sha3Hex } from '../../wallet/bytes.js'
import { parseTimeText } from '../../util/go-time.js'

export interface DidAnnouncement {
  peer_id: string
  did: string
  did_type: DidType
  /**
   * Time of signing, signed as written: ISO-8601 from this node, Go's `time.Now().String()` text from
   * a reference node (`2025-01-22 11:44:48.45 +0530 IST m=+0.01`; see util/go-time.ts).
   */
  time: string
  /** base64 DER signature by the DID over announcementDigest(); '' for a hosting claim. */
  signature: string
  /** base64 signature by the peer key over the same digest (hosting claims). */
  peer_signature?: string
}

export const MAX_ANNOUNCEMENT_BYTES = 4096
const PEER_ID_RE = /^[1-9A-HJ-NP-Za-km-z]{40,64}$/
const B64_RE = /^[A-Za-z0-9+/]*={0,2}$/
/** Announcements dated further than this into the future are refused. */
const MAX_CLOCK_SKEW_MS = 10 * 60_000

/** What the DID signs: ASCII hex of SHA3-256(peer_id ‖ did ‖ time). */
export function announcementDigest (a: Pick<DidAnnouncement, 'peer_id' | 'did' | 'time'>): string {
  return sha3Hex(a.peer_id + a.did + a.time)
}

export function isDidSigned (a: DidAnnouncement): boolean {
  return a.signature !== ''
}

/** When the announcement was signed, in ms since the epoch (NaN when its time text is not one). */
export function announcementTime (a: DidAnnouncement): number {
  return parseTimeText(a.time) ?? Number.NaN
}

/** Shape check (no signature verification): what the DHT validator and the gossip handler run first. */
export function parseAnnouncement (v: unknown, now = Date.now()): DidAnnouncement {
  const bad = (m: string): RbtError => new RbtError(ErrorCode.INVALID_INPUT, `invalid DID announcement: ${m}`)
  if (v === null || typeof v !== 'object' || Array.isArray(v)) throw bad('not an object')
  const o = v as Record<string, unknown>
  if (!isValidDid(o.did)) throw bad('bad did')
  if (typeof o.peer_id !== 'string' || !PEER_ID_RE.test(o.peer_id)) throw bad('bad peer_id')
  if (!isDidType(o.did_type)) throw bad('bad did_type')
  const when = typeof o.time === 'string' ? parseTimeText(o.time) : undefined
  if (when === undefined) throw bad('bad time')
  if (when > now + MAX_CLOCK_SKEW_MS) throw bad('time is in the future')
  if (typeof o.signature !== 'string' || o.signature.length > 512 || !B64_RE.test(o.signature)) throw bad('bad signature')
  if (o.peer_signature !== undefined && (typeof o.peer_signature !== 'string' || o.peer_signature.length > 512 || !B64_RE.test(o.peer_signature))) throw bad('bad peer_signature')
  if (o.signature === '' && (o.peer_signature === undefined || o.peer_signature === '')) throw bad('neither a DID signature nor a peer signature')
  const a: DidAnnouncement = { peer_id: o.peer_id, did: o.did, did_type: o.did_type, time: o.time as string, signature: o.signature }
  if (typeof o.peer_signature === 'string' && o.peer_signature !== '') a.peer_signature = o.peer_signature
  return a
}

export function encodeAnnouncement (a: DidAnnouncement): Uint8Array {
  const bytes = new TextEncoder().encode(JSON.stringify(a))
  if (bytes.length > MAX_ANNOUNCEMENT_BYTES) throw new RbtError(ErrorCode.INVALID_INPUT, 'DID announcement too large')
  return bytes
}

export function decodeAnnouncement (bytes: Uint8Array, now = Date.now()): DidAnnouncement {
  if (bytes.length > MAX_ANNOUNCEMENT_BYTES) throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid DID announcement: too large')
  let v: unknown
  try {
    v = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes))
  } catch {
    throw new RbtError(ErrorCode.INVALID_INPUT, 'invalid DID announcement: not JSON')
  }
  return parseAnnouncement(v, now)
}

/**
 * Which of two announcements for the same DID to keep: a DID-signed one beats a claim; between
 * equals, the later time wins.
 */
export function preferAnnouncement (a: DidAnnouncement, b: DidAnnouncement): DidAnnouncement {
  if (isDidSigned(a) !== isDidSigned(b)) return isDidSigned(a) ? a : b
  return announcementTime(b) > announcementTime(a) ? b : a
}

/** DHT key of a DID's announcement record. */
export function didRecordKey (did: string): string {
  return `/rbt/did/${did}`
}
