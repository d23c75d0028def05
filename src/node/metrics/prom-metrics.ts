/**
 * The node's Prometheus metrics (GET /metrics; docs/operations.md "Metrics", decisions/0006), on
 * prom-client. NodeMetrics (node-metrics.ts) loads this module on first use, not at start.
 *
 * One registry per node instance, never prom-client's global one, so a process (a test) can run
 * several nodes. Domain code does not see prom-client: it is handed the small observer functions
 * below (consensus events, rpc observations, ledger commit timings, chain validations), and the
 * gauges that describe state (peers, pending signatures, tokens, explorer lag) read their sources
 * when a scrape asks.
 */
import { Counter, Gauge, Histogram, Registry, collectDefaultMetrics } from 'prom-client'
import type { ConsensusEvent } from '../../consensus/observe.js'
import type { RpcObservation } from '../../p2p/rpc.js'
import type { BalanceRecord } from '../../storage/token-records.js'

/** Prefix of every family the node itself defines; default process metrics keep their standard names. */
export const METRIC_PREFIX = 'rbtnode_'

/** Where the gauges collected at scrape time read from; each is optional (absent: the gauge stays 0). */
export interface MetricSources {
  /** peers the p2p host is connected to (0 before the core starts) */
  connectedPeers?: () => number
  /** two-step operations waiting for their signature or password */
  pendingSignatures?: () => number
  /** every DID's balance record (one record per DID: cheap to walk) */
  balances?: () => AsyncIterable<BalanceRecord>
  /** the explorer export's state; `configured: false` leaves its gauges at 0 */
  explorer?: () => { configured: boolean, pending: number, last_sync_at: number | null }
  /** the store refuses writes after a storage fault, until it has reopened: 'full', 'unavailable', or undefined */
  storageFault?: () => 'full' | 'unavailable' | undefined
  /** V8 heap bytes in use after the last full collection (undefined before the first) */
  heapAfterGc?: () => number | undefined
  /** bytes of records handed to the database since the node started */
  writtenBytes?: () => number
  /** bytes of the files under the data directory (undefined until the first walk ended) */
  dataDirBytes?: () => number | undefined
  now?: () => number
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120]
const COMMIT_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5]

export class PromMetrics {
  readonly registry = new Registry()

  private readonly transfers = new Counter({
    name: `${METRIC_PREFIX}transfers_total`,
    help: 'Transactions this node took part in, by role (sender, quorum, receiver) and how they ended (committed, delivery_pending, aborted, refused, failed)',
    labelNames: ['role', 'outcome'] as const,
    registers: [this.registry]
  })

  private readonly doubleSpends = new Counter({
    name: `${METRIC_PREFIX}double_spends_seen_total`,
    help: 'Token states this node saw spent twice (two valid blocks, two verified spent markers naming different transactions, or two certificates granting the state to different transactions), by the role that saw them and the evidence; each proof is kept (GET /svc/v1/double-spends)',
    labelNames: ['seen_by', 'evidence'] as const,
    registers: [this.registry]
  })

  private readonly arbitersDistrusted = new Counter({
    name: `${METRIC_PREFIX}arbiters_distrusted_total`,
    help: 'Arbiters this node stopped trusting: each signed final grants of one state for two different transactions (the proof is kept; GET /svc/v1/double-spends, evidence certificates)',
    registers: [this.registry]
  })

  private readonly transferSeconds = new Histogram({
    name: `${METRIC_PREFIX}transfer_duration_seconds`,
    help: 'Time from the start of a transaction to its outcome, by role (quorum: from its vote to the commit or release)',
    labelNames: ['role'] as const,
    buckets: SECONDS,
    registers: [this.registry]
  })

  private readonly roundSeconds = new Histogram({
    name: `${METRIC_PREFIX}consensus_round_duration_seconds`,
    help: 'Duration of the sender\'s consensus rounds: prepare (votes and pledges) and sign (block signatures)',
    labelNames: ['round'] as const,
    buckets: SECONDS,
    registers: [this.registry]
  })

  private readonly rpcRequests = new Counter({
    name: `${METRIC_PREFIX}rpc_requests_total`,
    help: 'Peer rpc requests, served (side=server) and made (side=client), by method and outcome (ok or the error code)',
    labelNames: ['side', 'method', 'outcome'] as const,
    registers: [this.registry]
  })

  private readonly chainBlocks = new Counter({
    name: `${METRIC_PREFIX}chain_blocks_validated_total`,
    help: 'Blocks checked by token chain validations that passed',
    registers: [this.registry]
  })

  private readonly chainValidations = new Counter({
    name: `${METRIC_PREFIX}chain_validations_total`,
    help: 'Token chain validations, by result (valid, invalid)',
    labelNames: ['result'] as const,
    registers: [this.registry]
  })

  private readonly commitSeconds = new Histogram({
    name: `${METRIC_PREFIX}storage_commit_duration_seconds`,
    help: 'Duration of token ledger commits (reads, checks and the synced batch), by outcome (ok, failed)',
    labelNames: ['outcome'] as const,
    buckets: COMMIT_SECONDS,
    registers: [this.registry]
  })

  /** `sources` is read at each scrape (NodeMetrics keeps them: they may be set before this exists). */
  constructor (opts: { defaultMetrics?: boolean } = {}, sources: () => MetricSources = () => ({})) {
    const self = { get sources (): MetricSources { return sources() } }
    new Gauge({
      name: `${METRIC_PREFIX}connected_peers`,
      help: 'Peers the p2p host is connected to',
      registers: [this.registry],
      collect () { this.set(self.sources.connectedPeers?.() ?? 0) }
    })
    new Gauge({
      name: `${METRIC_PREFIX}storage_writes_refused`,
      help: 'Whether the store refuses writes after a storage fault (1 until it has reopened by itself), by cause: full or unavailable',
      labelNames: ['cause'],
      registers: [this.registry],
      collect () {
        const f = self.sources.storageFault?.()
        this.set({ cause: 'full' }, f === 'full' ? 1 : 0)
        this.set({ cause: 'unavailable' }, f === 'unavailable' ? 1 : 0)
      }
    })
    new Gauge({
      name: `${METRIC_PREFIX}pending_signatures`,
      help: 'Two-step operations waiting for a signature or password (POST /svc/v1/signature)',
      registers: [this.registry],
      collect () { this.set(self.sources.pendingSignatures?.() ?? 0) }
    })
    new Gauge({
      name: `${METRIC_PREFIX}tokens`,
      help: 'Tokens held by this node\'s DIDs, by family (rbt, ft, nft, sc) and status, from the balance records',
      labelNames: ['family', 'status'] as const,
      registers: [this.registry],
      async collect () {
        this.reset()
        const balances = self.sources.balances
        if (balances === undefined) return
        const totals = new Map<string, number>()
        for await (const b of balances()) {
          for (const [family, byStatus] of Object.entries(b.counts)) {
            for (const [status, n] of Object.entries(byStatus ?? {})) {
              const k = `${family}\u0000${status}`
              totals.set(k, (totals.get(k) ?? 0) + (n ?? 0))
            }
          }
        }
        for (const [k, n] of totals) {
          const [family, status] = k.split('\u0000') as [string, string]
          this.set({ family, status }, n)
        }
      }
    })
    new Gauge({
      name: `${METRIC_PREFIX}explorer_pending_records`,
      help: 'Records changed on the node and not yet written to the explorer database',
      registers: [this.registry],
      collect () {
        const s = self.sources.explorer?.()
        this.set(s?.configured === true ? s.pending : 0)
      }
    })
    new Gauge({
      name: `${METRIC_PREFIX}explorer_export_lag_seconds`,
      help: 'How long records have waited for the explorer export: seconds since its last successful pass while records are pending, else 0',
      registers: [this.registry],
      collect () {
        const s = self.sources.explorer?.()
        const now = self.sources.now?.() ?? Date.now()
        this.set(s?.configured === true && s.pending > 0 && s.last_sync_at !== null ? Math.max(0, (now - s.last_sync_at) / 1000) : 0)
      }
    })
    new Gauge({
      name: `${METRIC_PREFIX}heap_used_after_gc_bytes`,
      help: 'V8 heap in use right after the last full garbage collection of the main thread (what the node holds, without the garbage made since)',
      registers: [this.registry],
      collect () { this.set(self.sources.heapAfterGc?.() ?? 0) }
    })
    new Gauge({
      name: `${METRIC_PREFIX}data_dir_bytes`,
      help: 'Bytes of the files under the node\'s data directory (database, DID folders, config), walked in the background at most once a minute',
      registers: [this.registry],
      collect () { this.set(self.sources.dataDirBytes?.() ?? 0) }
    })
    new Counter({
      name: `${METRIC_PREFIX}storage_written_bytes_total`,
      help: 'Bytes of keys and values the node handed to its database in write batches since it started (LevelDB writes them to its log, then again as it compacts)',
      registers: [this.registry],
      collect () { this.reset(); this.inc(self.sources.writtenBytes?.() ?? 0) }
    })
    if (opts.defaultMetrics !== false) collectDefaultMetrics({ register: this.registry })
  }

  /** Prometheus text exposition format (version 0.0.4). */
  get contentType (): string { return this.registry.contentType }

  async render (): Promise<string> { return await this.registry.metrics() }

  /** For the consensus domain (ConsensusService `observe`). */
  readonly consensus = (e: ConsensusEvent): void => {
    if (e.kind === 'transaction') {
      this.transfers.inc({ role: e.role, outcome: e.outcome })
      this.transferSeconds.observe({ role: e.role }, e.ms / 1000)
    } else if (e.kind === 'double-spend') {
      this.doubleSpends.inc({ seen_by: e.seenBy, evidence: e.evidence })
    } else if (e.kind === 'arbiter-distrusted') {
      this.arbitersDistrusted.inc()
    } else {
      this.roundSeconds.observe({ round: e.round }, e.ms / 1000)
    }
  }

  /** For the p2p rpc layer (createRpc `observe`). */
  readonly rpc = (o: RpcObservation): void => {
    this.rpcRequests.inc({ side: o.side, method: o.method, outcome: o.outcome })
  }

  /** For TokenLedger.observeCommit. */
  readonly ledgerCommit = (ms: number, ok: boolean): void => {
    this.commitSeconds.observe({ outcome: ok ? 'ok' : 'failed' }, ms / 1000)
  }

  /** A chain validation ended (the verifier's `chainValidated` hook). */
  readonly chainValidated = (blocks: number, valid: boolean): void => {
    this.chainValidations.inc({ result: valid ? 'valid' : 'invalid' })
    if (valid && blocks > 0) this.chainBlocks.inc(blocks)
  }
}
