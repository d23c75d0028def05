import { expect } from 'chai'
import { request } from 'undici'
import { createLiteDid, quorumNetwork, mintRbt, rbtBalance, transfer, USER_PASSWORD, type QuorumNetwork } from '../helpers/quorum-network.js'

describe('e2e: RBT transfers through 7 quorum nodes', function () {
  this.timeout(240_000)
  let net: QuorumNetwork
  // fresh DIDs: the network is shared with other suites, whose transfers must not change these balances
  let alice = ''
  let bob = ''

  before(async () => {
    net = await quorumNetwork()
    alice = await createLiteDid(net.a.client, USER_PASSWORD)
    bob = await createLiteDid(net.b.client, USER_PASSWORD)
    await net.a.client.call('nodeAddPeers', { body: { DID: bob, PeerID: net.b.peerId, DIDType: 4 } })
    await net.b.client.call('nodeAddPeers', { body: { DID: alice, PeerID: net.a.peerId, DIDType: 4 } })
    await mintRbt(net.a.client, alice, 2, 0, USER_PASSWORD)
  })

  it('shuttles whole and part amounts between two nodes with exact balances', async () => {
    const { a, b } = net
    const step = async (from: typeof a, s: string, r: string, amt: number, expA: number, expB: number): Promise<void> => {
      const out = await transfer(from.client, s, r, amt, USER_PASSWORD)
      expect(out.status, out.message).to.equal(true)
      expect(out.message).to.match(/^Transaction [0-9a-f]{64} completed successfully$/)
      expect(Math.round(await rbtBalance(a.client, alice) * 1000)).to.equal(Math.round(expA * 1000))
      expect(Math.round(await rbtBalance(b.client, bob) * 1000)).to.equal(Math.round(expB * 1000))
    }
    await step(a, alice, bob, 0.5, 1.5, 0.5)
    await step(a, alice, bob, 1.499, 0.001, 1.999)
    for (let i = 1; i <= 4; i++) await step(b, bob, alice, 0.25, 0.001 + 0.25 * i, 1.999 - 0.25 * i)
    await step(a, alice, bob, 1, 0.001, 1.999)
    if (process.env.E2E_LOG_LEVEL === 'DEBUG') console.log(net.a.logs.split('\n').filter((l) => /transfer /.test(l)).slice(-12).join('\n')); console.log(net.quorums[3].logs.split('\n').filter((l) => /prepare|consensus/.test(l)).slice(-20).join('\n'))
  })

  it('shows the transfers in GET /metrics of the sender, the receiver and the quorums', async () => {
    const scrape = async (url: string): Promise<string> => await (await request(`${url}/metrics`)).body.text()
    const value = (text: string, series: string): number => text.split('\n').filter((l) => l.startsWith(series + ' ')).reduce((s, l) => s + Number(l.slice(l.lastIndexOf(' ') + 1)), 0)
    const [a, b, ...quorums] = await Promise.all([net.a, net.b, ...net.quorums].map(async (n) => await scrape(n.url)))
    expect(value(a!, 'rbtnode_transfers_total{role="sender",outcome="committed"}')).to.be.greaterThan(0)
    expect(value(a!, 'rbtnode_consensus_round_duration_seconds_count{round="prepare"}')).to.be.greaterThan(0)
    expect(value(a!, 'rbtnode_consensus_round_duration_seconds_count{round="sign"}')).to.be.greaterThan(0)
    expect(value(a!, 'rbtnode_rpc_requests_total{side="client",method="cs.prepare",outcome="ok"}')).to.be.greaterThan(0)
    expect(value(a!, 'rbtnode_connected_peers')).to.be.greaterThan(0)
    expect(value(b!, 'rbtnode_transfers_total{role="receiver",outcome="committed"}')).to.be.greaterThan(0)
    expect(value(b!, 'rbtnode_chain_blocks_validated_total')).to.be.greaterThan(0)
    expect(quorums.reduce((s, q) => s + value(q, 'rbtnode_transfers_total{role="quorum",outcome="committed"}'), 0)).to.be.greaterThan(0)
    expect(value(b!, 'rbtnode_tokens{family="rbt",status="Free"}')).to.be.greaterThan(0)
  })
})
