import { expect } from 'chai'
import { PromMetrics } from '../../../../src/node/metrics/prom-metrics.js'

describe('metrics: double spends and distrusted arbiters', () => {
  it('conflicting certificates count under evidence "certificates", and each distrusted arbiter once', async () => {
    const m = new PromMetrics()
    m.consensus({ kind: 'double-spend', seenBy: 'receiver', evidence: 'certificates' })
    m.consensus({ kind: 'arbiter-distrusted' })
    m.consensus({ kind: 'arbiter-distrusted' })
    const text = await m.render()
    expect(text).to.match(/rbtnode_double_spends_seen_total\{seen_by="receiver",evidence="certificates"\} 1/)
    expect(text).to.match(/rbtnode_arbiters_distrusted_total 2/)
  })
})
