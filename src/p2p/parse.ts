/** Text the host is handed (peer ids, multiaddrs, CIDs, DHT keys) parsed, with typed errors. */
import { peerIdFromString } from '@libp2p/peer-id'
import type { PeerId } from '@libp2p/interface'
import { multiaddr, type Multiaddr } from '@multiformats/multiaddr'
import { CID } from 'multiformats/cid'
import { ErrorCode, RbtError, errorMessage } from '../util/errors.js'

export function parsePeerId (peerId: string): PeerId {
  try {
    return peerIdFromString(peerId)
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_PEER_ID, `invalid peer id "${peerId}": ${errorMessage(e)}`, { cause: e })
  }
}

export function parseMultiaddr (addr: string): Multiaddr {
  try {
    return multiaddr(addr)
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_MULTIADDR, `invalid multiaddr "${addr}": ${errorMessage(e)}`, { cause: e })
  }
}

export function parseCid (cid: string | CID): CID {
  if (typeof cid !== 'string') return cid
  try {
    return CID.parse(cid)
  } catch (e) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `invalid CID "${cid}": ${errorMessage(e)}`, { cause: e })
  }
}

export function isNotFound (e: unknown): boolean {
  if (e instanceof AggregateError) return e.errors.length > 0 && e.errors.every(isNotFound)
  return e instanceof Error && e.name === 'NotFoundError'
}

export function dhtKeyBytes (key: string | Uint8Array): Uint8Array {
  const bytes = typeof key === 'string' ? new TextEncoder().encode(key) : key
  const text = new TextDecoder().decode(bytes)
  if (!/^\/[^/]+\/./.test(text)) {
    throw new RbtError(ErrorCode.INVALID_INPUT, `DHT key must look like /<namespace>/<name>, got "${text.slice(0, 60)}"`)
  }
  return bytes
}
