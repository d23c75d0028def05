import { expect } from 'chai'
import { NodeProcess } from './node-process.js'

describe('test helper: NodeProcess', function () {
  this.timeout(30_000)

  it('a node that does not come up before the start deadline is killed, not left running', async () => {
    const node = new NodeProcess({ startTimeoutMs: 50 })
    let failed = false
    try {
      await node.start()
    } catch {
      failed = true
    }
    try {
      expect(failed, 'start gave up').to.equal(true)
      const pid = node.child?.pid
      expect(pid).to.be.a('number')
      expect(node.running).to.equal(false)
      expect(() => process.kill(pid!, 0), 'the process is gone').to.throw()
    } finally {
      await node.dispose()
    }
  })

  it('a node that exits during its start fails the start then, not at the deadline', async () => {
    // an unknown flag: the process exits at once; start() used to poll on until its deadline
    const node = new NodeProcess({ startTimeoutMs: 15_000, extraArgs: ['-noSuchFlag'] })
    try {
      const err = await node.start().then(() => undefined, (e: Error) => e)
      expect(err?.message).to.match(/^node exited during start \(exit code \d+\)/)
      expect(err?.message).to.not.contain('timed out')
      expect(node.running).to.equal(false)
    } finally {
      await node.dispose()
    }
  })
})
