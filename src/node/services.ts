import type { NodeStatus } from '../api/contract/routes.js'

/**
 * What the HTTP layer may ask of the node. The server imports these types only; the composition
 * root (node/rbt-node.ts) provides the implementations.
 */
export interface NodeApi {
  status: () => NodeStatus
  /** Starts the core (p2p host and services); idempotent. Returns a human message. */
  startCore: () => Promise<string>
  /** Schedules a graceful shutdown after the current response is sent. */
  requestShutdown: () => void
  /** Peer id of the running core; throws NOT_RUNNING before the core starts. */
  peerId: () => string
  ping: (peerId: string) => Promise<{ rttMs: number, message: string }>
  addPeer: (did: string, peerId: string, didType?: number) => Promise<void>
}

export interface BootstrapApi {
  list: () => Promise<string[]>
  add: (peers: string[]) => Promise<string[]>
  remove: (peers: string[]) => Promise<string[]>
  removeAll: () => Promise<string[]>
}

export interface ApiServices {
  node: NodeApi
  bootstrap: BootstrapApi
}
