import { expect } from 'chai'
import { NodeProcess } from '../helpers/node-process.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A node serves what it can answer truthfully as soon as its API listens (issue: a node started
 * beside a busy network answered /api/getalldid 503 for seconds while its core started): the
 * routes that read only its store answer while a component's network part is still starting, and
 * a route that needs the network waits for the core instead of failing. A real `rbtnode run`
 * whose consensus network part is held back 6 s (test hook).
 */
describe('e2e: a starting node answers its local routes before its core is up', function () {
  this.timeout(120_000)
  let node: NodeProcess | undefined
  after(async () => { await node?.dispose() })

  it('GET /api/getalldid answers 200 while the core is starting; GET /api/get-peer-id waits for the core and answers', async () => {
    // readiness 'api': start() returns once /api/getalldid answers 200 (as the reference's scripts poll)
    node = new NodeProcess({ extraArgs: ['-testNet'], env: { RBTNODE_TEST_HOOKS: '1', RBTNODE_NETWORK_DELAY: 'consensus:6000' }, readiness: 'api', startTimeoutMs: 60_000 })
    const startPromise = node.start()
    // /api/getalldid answers while the core is still starting
    const early = await waitFor(async () => {
      const r = await fetch(`${node!.url}/api/getalldid`).catch(() => undefined)
      return r?.status === 200 ? await r.json() as { status: boolean, account_info: unknown[] } : undefined
    }, { timeoutMs: 60_000, intervalMs: 20, what: '/api/getalldid to answer' })
    const status = await (await fetch(`${node.url}/svc/v1/node/status`)).json() as { result: { core_started: boolean } }
    expect(status.result.core_started, 'the core is still starting when /api/getalldid first answers').to.equal(false)
    expect(early.status).to.equal(true)
    expect(early.account_info).to.deep.equal([])
    // a route that needs the core: answered once the core is up, not 503
    const t0 = Date.now()
    const peer = await fetch(`${node.url}/api/get-peer-id`)
    expect(peer.status).to.equal(200)
    const body = await peer.json() as { status: boolean, message: string }
    expect(body.status).to.equal(true)
    expect(body.message).to.match(/^12D3KooW/)
    expect(Date.now() - t0, 'the request waited for the network part held back').to.be.above(500)
    const after = await (await fetch(`${node.url}/svc/v1/node/status`)).json() as { result: { core_started: boolean } }
    expect(after.result.core_started).to.equal(true)
    await startPromise
  })
})
