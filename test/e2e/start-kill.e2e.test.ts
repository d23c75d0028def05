import { expect } from 'chai'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { NodeExitedError, NodeProcess } from '../helpers/node-process.js'
import { waitFor } from '../helpers/wait.js'

/**
 * A node killed (SIGKILL) at any instant of its start comes back: its first start (the config,
 * the peer key, the node secret and the database are written then) and later ones (the database's
 * log replayed, leftover temporary files removed), each cut at a different instant, then started to
 * the end. Every start that fails is a failure of the test, with the node's output.
 */
describe('e2e: a node killed at any instant of its start comes back', function () {
  this.timeout(300_000)
  const dir = mkdtempSync(join(tmpdir(), 'rbtnode-startkill-'))
  after(() => { rmSync(dir, { recursive: true, force: true }) })

  it('killed at 12 instants from 0 to 2.2 s into a start (the first one included), every next start comes up', async () => {
    const node = new NodeProcess({ dir, extraArgs: ['-testNet'], startTimeoutMs: 60_000 })
    try {
      for (let i = 0; i < 12; i++) {
        const at = i * 200
        // the start is cut `at` ms after the spawn (its failure is expected: the kill ends it)
        const before = node.child
        const cut = node.start().catch((e: unknown) => e)
        // counted from the spawn of this start's process
        await waitFor(() => node.child !== before, { timeoutMs: 10_000, intervalMs: 1, what: 'the spawn' })
        await new Promise((resolve) => setTimeout(resolve, at))
        await node.kill()
        const e = await cut
        if (e instanceof NodeExitedError && e.signal !== 'SIGKILL') expect.fail(`start ${i} ended by itself before the kill (${String(e.exitCode)}):\n${e.output}`)
        // the next start must come up whatever the kill cut
        await node.start().catch((err: Error) => { expect.fail(`start after a kill ${at} ms into a start failed: ${err.message}`) })
        const status = (await node.client.call('nodeStatus')).result
        expect(status?.core_started).to.equal(true)
        await node.kill()
      }
    } finally {
      await node.dispose()
    }
  })
})
