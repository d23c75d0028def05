import { expect } from 'chai'
import { request } from 'undici'
import { NodeProcess } from '../helpers/node-process.js'

/** docs/operations.md, "Metrics": GET /metrics of a real node, behind the same guard as the API. */
describe('e2e: GET /metrics', function () {
  this.timeout(60_000)
  let node: NodeProcess

  before(async () => { node = await new NodeProcess().start() })
  after(async () => { await node?.dispose() })

  it('answers Prometheus text with the node\'s families and the process and Node.js metrics', async () => {
    const res = await request(`${node.url}/metrics`)
    expect(res.statusCode).to.equal(200)
    expect(String(res.headers['content-type'])).to.match(/^text\/plain; version=0\.0\.4/)
    const text = await res.body.text()
    for (const f of ['rbtnode_transfers_total', 'rbtnode_connected_peers', 'rbtnode_rpc_requests_total', 'rbtnode_pending_signatures', 'rbtnode_tokens', 'rbtnode_storage_commit_duration_seconds', 'rbtnode_explorer_export_lag_seconds']) {
      expect(text, f).to.include(`# TYPE ${f} `)
    }
    expect(text).to.match(/^process_resident_memory_bytes \d/m)
    expect(text).to.match(/^nodejs_eventloop_lag_seconds /m)
    expect(text).to.match(/^rbtnode_connected_peers \d+$/m)
  })

  it('refuses a foreign Host and a cross-site browser request like every other route', async () => {
    const foreign = await request(`${node.url}/metrics`, { headers: { host: 'attacker.example' } })
    expect(foreign.statusCode).to.equal(403)
    await foreign.body.dump()
    const cross = await request(`${node.url}/metrics`, { headers: { 'sec-fetch-site': 'cross-site' } })
    expect(cross.statusCode).to.equal(403)
    await cross.body.dump()
  })
})
