/**
 * The node's metrics as the other components see them (GET /metrics; docs/operations.md "Metrics",
 * decisions/0006). prom-client and what it pulls in (about 90 modules, decision 0015) are not
 * needed to start a node: the registry (prom-metrics.ts) is loaded at the first scrape, or a short
 * while (LOAD_DELAY_MS) after the first thing recorded (a node commits to its ledger while it
 * starts: loading then would put it back on the start path). What is recorded before it has
 * loaded is kept in order and handed to it then, so no count is lost.
 */
import type { ConsensusEvent } from '../../consensus/observe.js'
import type { RpcObservation } from '../../p2p/rpc.js'
import type { SignatureVerifier } from '../../tokenchain/validate.js'
import type { MetricSources, PromMetrics } from './prom-metrics.js'

export type { MetricSources } from './prom-metrics.js'

/** prom-client's content type for the text format 0.0.4 (Registry.PROMETHEUS_CONTENT_TYPE). */
const CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8'
/** Records kept until the registry has loaded; past this (a load that fails) the oldest are dropped. */
const MAX_PENDING = 10_000
/** How long after the first record the registry is loaded when no scrape asked for it first. */
const LOAD_DELAY_MS = 2000

type Record = (m: PromMetrics) => void

export class NodeMetrics {
  private sources: MetricSources = {}
  private impl?: PromMetrics
  private loading?: Promise<PromMetrics>
  private pending: Record[] = []
  private timer?: NodeJS.Timeout

  constructor (private readonly opts: { defaultMetrics?: boolean } = {}) {}

  /** The registry, loaded on the first call. */
  async registry (): Promise<PromMetrics> {
    this.loading ??= import('./prom-metrics.js').then(({ PromMetrics }) => {
      const m = new PromMetrics(this.opts, () => this.sources)
      for (const r of this.pending) r(m)
      this.pending = []
      this.impl = m
      return m
    }, (e: unknown) => {
      this.loading = undefined
      throw e
    })
    return await this.loading
  }

  private record (r: Record): void {
    if (this.impl !== undefined) { r(this.impl); return }
    if (this.pending.length >= MAX_PENDING) this.pending.shift()
    this.pending.push(r)
    if (this.timer !== undefined || this.loading !== undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      // a failed load is tried again at the next record or scrape
      this.registry().catch(() => {})
    }, LOAD_DELAY_MS)
    // a process with nothing else to do may end before
    this.timer.unref()
  }

  /** Where the scrape-time gauges read from (set once the node's services exist). */
  setSources (sources: MetricSources): void { this.sources = { ...this.sources, ...sources } }

  /** Prometheus text exposition format (version 0.0.4). */
  get contentType (): string { return CONTENT_TYPE }

  async render (): Promise<string> { return await (await this.registry()).render() }

  /** For the consensus domain (ConsensusService `observe`). */
  readonly consensus = (e: ConsensusEvent): void => { this.record((m) => { m.consensus(e) }) }

  /** For the p2p rpc layer (createRpc `observe`). */
  readonly rpc = (o: RpcObservation): void => { this.record((m) => { m.rpc(o) }) }

  /** For TokenLedger.observeCommit. */
  readonly ledgerCommit = (ms: number, ok: boolean): void => { this.record((m) => { m.ledgerCommit(ms, ok) }) }

  /** A chain validation ended (the verifier's `chainValidated` hook). */
  readonly chainValidated = (blocks: number, valid: boolean): void => { this.record((m) => { m.chainValidated(blocks, valid) }) }

  /** The same verifier, telling these metrics about every chain it helped validate. */
  counting (verifier: SignatureVerifier): SignatureVerifier {
    const inner = verifier
    return {
      verify: async (...a) => await inner.verify(...a),
      ...(inner.chains !== undefined ? { chains: inner.chains } : {}),
      ...(inner.verifyNlss !== undefined ? { verifyNlss: async (...a: Parameters<NonNullable<SignatureVerifier['verifyNlss']>>) => await inner.verifyNlss!(...a) } : {}),
      chainValidated: (blocks, valid) => { inner.chainValidated?.(blocks, valid); this.chainValidated(blocks, valid) }
    }
  }
}
