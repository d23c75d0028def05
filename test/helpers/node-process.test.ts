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
})
