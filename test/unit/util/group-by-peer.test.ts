import { expect } from 'chai'
import { groupByPeer } from '../../../src/util/group-by-peer.js'

describe('util: groupByPeer', () => {
  it('gives each peer the items it is asked about, in order, and leaves self out', () => {
    const m = groupByPeer([['s1', ['a', 'me', 'b']], ['s2', ['b']], ['s3', []]], 'me')
    expect([...m]).to.deep.equal([['a', ['s1']], ['b', ['s1', 's2']]])
  })
})
