import { expect } from 'chai'
import { announcedAsListened, isPrivateListenAddr } from '../../src/p2p/listen-address.js'

describe('p2p/listen-address', () => {
  it('announces a listen address on a fixed port of a public IPv4 address as it is (libp2p held it back unconfirmed, so no DHT kept the node)', () => {
    expect(announcedAsListened('/ip4/11.0.0.1/tcp/4002')).to.equal(true)
    expect(announcedAsListened('/ip4/11.0.0.1/tcp/0')).to.equal(false)
    expect(announcedAsListened('/ip4/0.0.0.0/tcp/4002')).to.equal(false)
    expect(announcedAsListened('/ip4/127.0.0.1/tcp/4002')).to.equal(false)
    expect(announcedAsListened('/ip4/192.168.1.5/tcp/4002')).to.equal(false)
  })

  it('tells loopback and private listen addresses from public ones', () => {
    expect(isPrivateListenAddr('/ip4/127.0.0.1/tcp/1')).to.equal(true)
    expect(isPrivateListenAddr('/ip4/172.20.0.1/tcp/1')).to.equal(true)
    expect(isPrivateListenAddr('/ip6/::1/tcp/1')).to.equal(true)
    expect(isPrivateListenAddr('/ip4/11.0.0.1/tcp/1')).to.equal(false)
  })
})
