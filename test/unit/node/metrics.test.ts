import { expect } from 'chai'
import { NodeMetrics } from '../../../src/node/metrics/node-metrics.js'
import type { BalanceRecord } from '../../../src/storage/token-records.js'
import { createApp } from '../../../src/api/server/app.js'
import type { ApiServices } from '../../../src/api/server/services.js'
import { unusedIdentity } from '../../api/stub-identity.js'
import { unusedTokens } from '../../api/stub-tokens.js'
import { unusedConsensus } from '../../api/stub-consensus.js'

function services (): ApiServices {
  const unused = async (): Promise<never> => { throw new Error('not used here') }
  return {
    node: { status: () => { throw new Error('not used here') }, startCore: unused, requestShutdown: () => {}, peerId: () => '', ping: unused, addPeer: unused },
    ...unusedIdentity(),
    ...unusedConsensus(),
    ...unusedTokens(),
    bootstrap: { list: unused, add: unused, remove: unused, removeAll: unused }
  }
}

const FAMILIES = [
  'rbtnode_transfers_total',
  'rbtnode_transfer_duration_seconds',
  'rbtnode_consensus_round_duration_seconds',
  'rbtnode_connected_peers',
  'rbtnode_rpc_requests_total',
  'rbtnode_pending_signatures',
  'rbtnode_tokens',
  'rbtnode_chain_blocks_validated_total',
  'rbtnode_chain_validations_total',
  'rbtnode_storage_commit_duration_seconds',
  'rbtnode_storage_writes_refused',
  'rbtnode_explorer_pending_records',
  'rbtnode_explorer_export_lag_seconds',
  'rbtnode_heap_used_after_gc_bytes',
  'rbtnode_data_dir_bytes',
  'rbtnode_storage_written_bytes_total'
]

/** The value of one sample line (`name{labels} value`), or undefined. */
function sample (text: string, name: string, labels = ''): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}${labels === '' ? ' ' : `{${labels}} `}`))
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1))
}

describe('node metrics', () => {
  it('renders every rbtnode_ family and the default process metrics, in the 0.0.4 text format', async () => {
    const m = new NodeMetrics()
    expect(m.contentType).to.match(/^text\/plain; version=0\.0\.4/)
    const text = await m.render()
    for (const f of FAMILIES) expect(text, f).to.include(`# TYPE ${f} `)
    expect(text).to.match(/^process_cpu_user_seconds_total /m)
    expect(text).to.match(/^nodejs_eventloop_lag_seconds /m)
  })

  it('keeps one registry per instance: two nodes in one process count apart', async () => {
    const a = new NodeMetrics({ defaultMetrics: false })
    const b = new NodeMetrics({ defaultMetrics: false })
    a.rpc({ side: 'server', method: 'cs.prepare', outcome: 'ok', ms: 3 })
    expect(sample(await a.render(), 'rbtnode_rpc_requests_total', 'side="server",method="cs.prepare",outcome="ok"')).to.equal(1)
    expect(sample(await b.render(), 'rbtnode_rpc_requests_total', 'side="server",method="cs.prepare",outcome="ok"')).to.equal(undefined)
  })

  it('moves counters and histograms when the record functions are called', async () => {
    const m = new NodeMetrics({ defaultMetrics: false })
    m.consensus({ kind: 'transaction', role: 'sender', outcome: 'committed', ms: 1200 })
    m.consensus({ kind: 'transaction', role: 'sender', outcome: 'committed', ms: 800 })
    m.consensus({ kind: 'transaction', role: 'quorum', outcome: 'aborted', ms: 40 })
    m.consensus({ kind: 'transaction', role: 'receiver', outcome: 'refused', ms: 5 })
    m.consensus({ kind: 'round', round: 'prepare', ms: 300 })
    m.consensus({ kind: 'round', round: 'sign', ms: 100 })
    m.rpc({ side: 'client', method: 'cs.sign', outcome: 'timeout', ms: 10_000 })
    m.ledgerCommit(2, true)
    m.ledgerCommit(1, false)
    m.chainValidated(7, true)
    m.chainValidated(0, false)
    const text = await m.render()
    expect(sample(text, 'rbtnode_transfers_total', 'role="sender",outcome="committed"')).to.equal(2)
    expect(sample(text, 'rbtnode_transfers_total', 'role="quorum",outcome="aborted"')).to.equal(1)
    expect(sample(text, 'rbtnode_transfers_total', 'role="receiver",outcome="refused"')).to.equal(1)
    expect(sample(text, 'rbtnode_transfer_duration_seconds_count', 'role="sender"')).to.equal(2)
    expect(sample(text, 'rbtnode_transfer_duration_seconds_sum', 'role="sender"')).to.be.closeTo(2, 1e-9)
    expect(sample(text, 'rbtnode_consensus_round_duration_seconds_count', 'round="prepare"')).to.equal(1)
    expect(sample(text, 'rbtnode_consensus_round_duration_seconds_count', 'round="sign"')).to.equal(1)
    expect(sample(text, 'rbtnode_rpc_requests_total', 'side="client",method="cs.sign",outcome="timeout"')).to.equal(1)
    expect(sample(text, 'rbtnode_storage_commit_duration_seconds_count', 'outcome="ok"')).to.equal(1)
    expect(sample(text, 'rbtnode_storage_commit_duration_seconds_count', 'outcome="failed"')).to.equal(1)
    expect(sample(text, 'rbtnode_chain_blocks_validated_total')).to.equal(7)
    expect(sample(text, 'rbtnode_chain_validations_total', 'result="valid"')).to.equal(1)
    expect(sample(text, 'rbtnode_chain_validations_total', 'result="invalid"')).to.equal(1)
  })

  it('loads its registry on first use and counts what was recorded before and after it loaded', async () => {
    const m = new NodeMetrics({ defaultMetrics: false })
    m.ledgerCommit(1, true) // starts the load; kept until the registry exists
    m.chainValidated(3, true)
    const registry = await m.registry()
    expect(await m.registry()).to.equal(registry)
    m.chainValidated(4, true) // straight to the registry now
    const text = await m.render()
    expect(sample(text, 'rbtnode_storage_commit_duration_seconds_count', 'outcome="ok"')).to.equal(1)
    expect(sample(text, 'rbtnode_chain_blocks_validated_total')).to.equal(7)
    expect(sample(text, 'rbtnode_chain_validations_total', 'result="valid"')).to.equal(2)
  })

  it('collects the state gauges from their sources at scrape time', async () => {
    const m = new NodeMetrics({ defaultMetrics: false })
    const bal = (did: string, counts: BalanceRecord['counts']): BalanceRecord => ({ did, sums: {}, counts, ftGroups: {}, updatedAt: 0 })
    let peers = 3
    m.setSources({
      connectedPeers: () => peers,
      pendingSignatures: () => 2,
      balances: async function * () {
        yield bal('a', { rbt: { Free: 4, Pledged: 1 }, ft: { Free: 10 } })
        yield bal('b', { rbt: { Free: 2 } })
      },
      explorer: () => ({ configured: true, pending: 5, last_sync_at: 1_000 }),
      storageFault: () => 'full',
      heapAfterGc: () => 50_000_000,
      dataDirBytes: () => 12_345,
      writtenBytes: () => 678,
      now: () => 31_000
    })
    let text = await m.render()
    expect(sample(text, 'rbtnode_connected_peers')).to.equal(3)
    expect(sample(text, 'rbtnode_pending_signatures')).to.equal(2)
    expect(sample(text, 'rbtnode_tokens', 'family="rbt",status="Free"')).to.equal(6)
    expect(sample(text, 'rbtnode_tokens', 'family="rbt",status="Pledged"')).to.equal(1)
    expect(sample(text, 'rbtnode_tokens', 'family="ft",status="Free"')).to.equal(10)
    expect(sample(text, 'rbtnode_explorer_pending_records')).to.equal(5)
    expect(sample(text, 'rbtnode_explorer_export_lag_seconds')).to.equal(30)
    expect(sample(text, 'rbtnode_storage_writes_refused', 'cause="full"')).to.equal(1)
    expect(sample(text, 'rbtnode_storage_writes_refused', 'cause="unavailable"')).to.equal(0)
    expect(sample(text, 'rbtnode_heap_used_after_gc_bytes')).to.equal(50_000_000)
    expect(sample(text, 'rbtnode_data_dir_bytes')).to.equal(12_345)
    expect(sample(text, 'rbtnode_storage_written_bytes_total')).to.equal(678)
    peers = 0
    m.setSources({ explorer: () => ({ configured: true, pending: 0, last_sync_at: 1_000 }) })
    text = await m.render()
    expect(sample(text, 'rbtnode_connected_peers')).to.equal(0)
    expect(sample(text, 'rbtnode_explorer_export_lag_seconds')).to.equal(0)
  })

  it('counts chain validations through a wrapped verifier without changing its answers', async () => {
    const m = new NodeMetrics({ defaultMetrics: false })
    const v = m.counting({ verify: async (did) => did === 'ok' })
    expect(await v.verify('ok', '00', '00')).to.equal(true)
    expect(await v.verify('no', '00', '00')).to.equal(false)
    v.chainValidated?.(3, true)
    expect(sample(await m.render(), 'rbtnode_chain_blocks_validated_total')).to.equal(3)
  })

  it('is served at GET /metrics behind the API guard, outside the envelope', async () => {
    const m = new NodeMetrics({ defaultMetrics: false })
    const app = createApp(services(), { version: 'test', metrics: m })
    const ok = await app.request('http://127.0.0.1:20000/metrics')
    expect(ok.status).to.equal(200)
    expect(ok.headers.get('content-type')).to.match(/^text\/plain; version=0\.0\.4/)
    expect(await ok.text()).to.include('# TYPE rbtnode_transfers_total counter')
    const foreign = await app.request('http://127.0.0.1:20000/metrics', { headers: { host: 'attacker.example' } })
    expect(foreign.status).to.equal(403)
    const crossSite = await app.request('http://127.0.0.1:20000/metrics', { headers: { origin: 'https://attacker.example' } })
    expect(crossSite.status).to.equal(403)
    const tokenApp = createApp(services(), { version: 'test', metrics: m, guard: { token: 'secret' } })
    expect((await tokenApp.request('http://127.0.0.1:20000/metrics')).status).to.equal(401)
    expect((await tokenApp.request('http://127.0.0.1:20000/metrics', { headers: { authorization: 'Bearer secret' } })).status).to.equal(200)
    const without = createApp(services(), { version: 'test' })
    expect((await without.request('http://127.0.0.1:20000/metrics')).status).to.equal(404)
  })
})
