import type { NodeOverview } from '../../api/contract/routes.js'
import type { OutgoingRecord } from '../../consensus/records.js'
import type { LogRecord } from '../../util/logger.js'
import { OUTGOING_STATUS } from '../consensus/consensus-api.js'

/** What the overview reads, each from the service that owns it (wired in RbtNode.overview). */
export interface OverviewSources {
  version: string
  startedAt: number
  now?: () => number
  peerId: string | null
  peers: string[]
  /** hosted DIDs and their types, from the identity service */
  dids: () => Promise<Array<{ did: string, type: number }>>
  /** RBT balances from the token repositories */
  rbt: (did: string) => Promise<{ balance: number, locked: number, pledged: number, pinned: number }>
  /** whether a hosted DID is set up as a quorum (consensus service); false before the core starts */
  isQuorum: (did: string) => boolean
  quorumList: () => Promise<string[]>
  /** the two-step engine's operations */
  operations: () => Array<{ id: string, did: string, operation: string, waiting: boolean, expiresAt: number }>
  /** the sender's open records; empty before the core starts */
  openTransfers: () => Promise<OutgoingRecord[]>
  recentLog: () => LogRecord[]
}

const iso = (ms: number): string => new Date(ms).toISOString()

/** The node overview behind `GET /svc/v1/node/overview` and `rbtnode status`. */
export async function buildOverview (s: OverviewSources): Promise<NodeOverview> {
  const now = (s.now ?? Date.now)()
  const hosted = await s.dids()
  const dids = await Promise.all(hosted.map(async ({ did, type }) => ({ did, did_type: type, quorum: s.isQuorum(did), rbt: await s.rbt(did) })))
  const quorumDids = dids.filter((d) => d.quorum).map((d) => d.did)
  // sums of milli-RBT values, so that 0.1 + 0.2 stays 0.3
  const pledged = dids.reduce((sum, d) => sum + Math.round(d.rbt.pledged * 1000), 0) / 1000
  const open = await s.openTransfers()
  return {
    version: s.version,
    core_started: s.peerId !== null,
    peer_id: s.peerId,
    started_at: iso(s.startedAt),
    uptime_s: Math.max(0, Math.floor((now - s.startedAt) / 1000)),
    connected_peers: s.peers.length,
    peers: s.peers,
    dids,
    quorum: { role: quorumDids.length > 0, dids: quorumDids, pledged, list_size: (await s.quorumList()).length },
    pending_operations: s.operations().map((o) => ({ id: o.id, did: o.did, operation: o.operation, waiting: o.waiting, expires_at: iso(o.expiresAt) })),
    transfers_in_flight: open.map((r) => ({
      transactionID: r.txid,
      status: OUTGOING_STATUS[r.state] ?? r.state.toLowerCase(),
      sender: r.sender,
      receiver: r.receiver,
      amount: r.amountMilli / 1000,
      started_at: iso(r.createdAt),
      updated_at: iso(r.updatedAt)
    })),
    last_errors: s.recentLog().map((r) => ({ time: r.time, level: r.level, ...(r.component !== undefined ? { component: r.component } : {}), msg: r.msg }))
  }
}
