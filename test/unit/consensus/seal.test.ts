import { expect } from 'chai'
import type { StateClaims } from '../../../src/consensus/ports.js'
import { balance, twoQuorumSets } from './harness.js'

/**
 * The seal on honest paths (docs/protocol.md, "Seals"): every transfer the quorums signed must be
 * sealable, whatever went wrong on the way (signers replaced, arbiters down at different times).
 */
describe('consensus: the seal of honest transfers', function () {
  this.timeout(120_000)

  it('a signer replaced after the first claim, the replacement\'s claim granted by another two thirds of the arbiters: the seal is made once all are back, without a restart', async () => {
    const n = await twoQuorumSets(true)
    const alice = await n.net.addDid(n.x)
    await n.net.mint(n.x, alice.did, 1)
    const quorums = [...n.set1, n.set2[0]!]
    const node = (name: string): ReturnType<typeof n.net.nodes.find> => n.net.nodes.find((x) => x.name === name)
    // the first claim (the five chosen) while four arbiters are down; the replacement's claim
    // while four others are: 10 of the 14 arbiters grant each, 6 hold both
    const port = (n.x.sender as unknown as { ctx: { claims: { port: StateClaims } } }).ctx.claims.port
    const claimFor = port.claimFor.bind(port)
    let claims = 0
    port.claimFor = async (...args) => {
      claims++
      for (const x of n.net.nodes) x.down = false
      const down = claims === 1 ? ['q6', 'q7', 'q8', 'q9'] : ['Y', 'C', 'q6', 'q7']
      for (const d of down) node(d)!.down = true
      try { return await claimFor(...args) } finally { for (const x of n.net.nodes) x.down = false }
    }
    // the first quorum asked to sign fails (whichever five were chosen): replaced by the spare vote
    let first: string | undefined
    let healed = false
    for (const d of quorums) {
      const qn = n.net.nodeOf(d)
      Object.defineProperty(qn, 'failSign', { configurable: true, get: () => { first ??= qn.name; return !healed && first === qn.name }, set: () => {} })
    }
    const r = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 1000, memo: 'x', quorums }, alice.owner).then((x) => x.delivered, (e: Error) => e.message)
    expect(claims, 'the replacement was claimed for').to.be.at.least(2)
    // every arbiter is back (the failed signer stays down): the transfer is sealed and delivered on its next rounds
    if (r !== true) {
      for (let i = 0; i < 3 && await balance(n.bobNode, n.bob.did) === 0; i++) await n.x.sender.recover()
    }
    healed = true
    expect(await balance(n.bobNode, n.bob.did), `not delivered (${String(r)})`).to.equal(1000)
  })

  it('honest parts with claims on: payments that split the change again and again, the parts paid back (the quorums and the receiver remember the ancestors), and a self transfer of a part at its genesis are all sealed and taken', async () => {
    const n = await twoQuorumSets(true)
    const alice = await n.net.addDid(n.x)
    await n.net.mint(n.x, alice.did, 1)
    for (const memo of ['one', 'two', 'three']) {
      const r = await n.x.sender.transfer({ sender: alice.did, receiver: n.bob.did, amountMilli: 200, memo, quorums: n.set1 }, alice.owner)
      expect(r.delivered, memo).to.equal(true)
    }
    expect(await balance(n.bobNode, n.bob.did)).to.equal(600)
    const back = await n.bobNode.sender.transfer({ sender: n.bob.did, receiver: alice.did, amountMilli: 600, memo: 'back', quorums: n.set2 }, n.bob.owner)
    expect(back.delivered).to.equal(true)
    const change = (await n.x.ledger.tokensOf(alice.did, 'Free')).filter((t) => t.valueMilli === 400)
    expect(change).to.have.length(1)
    const self = await n.x.sender.transfer({ sender: alice.did, receiver: alice.did, amountMilli: 400, memo: 'self', quorums: n.set2, selfTokens: [change[0]!.tokenId] }, alice.owner)
    expect(self.delivered).to.equal(true)
    expect(await balance(n.x, alice.did)).to.equal(1000)
  })
})
